"""What the names in a file refer to: imports resolved to dotted names, `nn.Module` subclasses, and the
lists of PyTorch functions the rules care about."""

from __future__ import annotations

import ast
import re

# When a snippet uses a name without importing it, the usual import is assumed.
DEFAULT_ALIASES = {
    "torch": "torch",
    "nn": "torch.nn",
    "F": "torch.nn.functional",
    "optim": "torch.optim",
    "mp": "torch.multiprocessing",
    "dist": "torch.distributed",
    "np": "numpy",
    "DataLoader": "torch.utils.data.DataLoader",
    "DDP": "torch.nn.parallel.DistributedDataParallel",
    "DistributedDataParallel": "torch.nn.parallel.DistributedDataParallel",
    "DataParallel": "torch.nn.DataParallel",
}

#: torch functions that create a tensor and accept `device=`.
DEVICE_FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange range linspace logspace eye tensor "
    "as_tensor tril_indices triu_indices empty_strided normal bernoulli_ scalar_tensor sparse_coo_tensor "
    "complex polar".split()
)
#: torch functions that always create a CPU tensor (no `device=`).
CPU_ONLY_FACTORIES = frozenset(
    "from_numpy Tensor FloatTensor DoubleTensor HalfTensor LongTensor IntTensor ShortTensor ByteTensor "
    "BoolTensor CharTensor BFloat16Tensor frombuffer".split()
)
FACTORIES = DEVICE_FACTORIES | CPU_ONLY_FACTORIES
#: torch functions whose result keeps the device of their tensor argument (`torch.tril(torch.ones(...))`).
TENSOR_OPS = frozenset(
    "tril triu cat stack exp log sin cos sqrt outer matmul mm bmm where flip roll cumsum sum mean "
    "unsqueeze squeeze reshape transpose pow abs clamp softmax sigmoid tanh diag".split()
)
DTYPES = frozenset(
    "float float32 float64 double half float16 bfloat16 int int8 int16 int32 int64 long short uint8 bool "
    "complex64 complex128 cfloat".split()
)
#: `torch.nn` modules with no parameters and no buffers (`tests/test_lint_round3_precision.py` builds each
#: and checks): they run wherever their input is, so one never moved is no bug.
STATELESS_NN = frozenset(
    {
        *("Softmax", "LogSoftmax", "Softmin", "Softmax2d", "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU"),
        *("CELU", "GELU", "SiLU", "Mish", "Sigmoid", "LogSigmoid", "Tanh", "Hardtanh", "Hardswish"),
        *("Hardsigmoid", "Softplus", "Softsign", "Tanhshrink", "Threshold", "Dropout", "Dropout1d"),
        *("Dropout2d", "Dropout3d", "AlphaDropout", "Identity", "Flatten", "Unflatten", "MaxPool1d"),
        *("MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d"),
        *("AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"),
        *("AdaptiveMaxPool3d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle"),
        *("PixelUnshuffle", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad2d"),
        *("ReplicationPad2d", "CosineSimilarity", "PairwiseDistance"),
    }
)
NN_NOT_MODULES = frozenset({"Parameter", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"})
RNN_CLASSES = frozenset({"RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"})
_MODULE_BASE = re.compile(
    r"(^|\.)(Module|LightningModule|Sequential|ModuleList|ModuleDict)$|^torchmetrics\.(\w+\.)*Metric$"
)
#: Bases that say nothing about being a module (a class on one of them is judged by its own code).
_PLAIN_BASES = frozenset({"abc.ABC", "typing.Generic", "typing.Protocol", "enum.Enum", "object"})
_DEVICE_NAME = re.compile(r"(^|_)(device|dev|gpu|cuda|rank|local_rank|gpu_id|device_id)s?$", re.I)
_LOADER_NAME = re.compile(r"loader$", re.I)
_LENGTHS_NAME = re.compile(r"^(\w+_)?(lengths?|lens|seq_?lens?|seqlens?)(_tensor)?$", re.I)


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of attribute accesses on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def looks_like_device_name(key: str) -> bool:
    """`device`, `args.device`, `self.dev`, `local_rank` ...: a name that probably holds a device."""
    return bool(_DEVICE_NAME.search(key.rsplit(".", 1)[-1]))


def looks_like_lengths(key: str) -> bool:
    """`lengths`, `src_lens`, `batch["seq_lengths"]`: sequence lengths, which `pack_padded_sequence` wants
    on the CPU (`devicekit.cpu_args`: the table the simulator and strict mode read too)."""
    last = key.rsplit(".", 1)[-1]
    if last.endswith(("']", '"]')) and "[" in last:
        last = last[last.rindex("[") + 2 : -2]
    return bool(_LENGTHS_NAME.match(last))


_MODEL_NAME = re.compile(r"(model|net|encoder|decoder|classifier|backbone|module)\w*$", re.I)


def looks_like_model_name(key: str) -> bool:
    """`model`, `self.net`, `model_restoration`: a name that probably holds a model (its last part)."""
    return bool(_MODEL_NAME.search(key.rsplit(".", 1)[-1]))


def looks_like_loss_class(name: str) -> bool:
    """`CharbonnierLoss`, `FocalLoss`, `LabelSmoothingCriterion`: a class that computes a loss."""
    last = name.rsplit(".", 1)[-1]
    return last[:1].isupper() and last.endswith(("Loss", "Criterion"))


def looks_like_loader_name(key: str) -> bool:
    """`loader`, `train_loader`, `self.val_dataloader` ...: a name that probably holds a DataLoader."""
    return bool(_LOADER_NAME.search(key.rsplit(".", 1)[-1]))


class Names:
    """The imports of one file and the `nn.Module` subclasses it defines.

    Relative imports (`from .model import Net`) are resolved when the file's `package` is known (the
    project index knows it); otherwise they are left out, as before.
    """

    def __init__(
        self, tree: ast.Module, nodes: list[ast.AST] | None = None, package: str | None = None
    ) -> None:
        self.aliases: dict[str, str] = {}
        self._resolved: dict[ast.AST, str | None] = {}
        self.bound: set[str] = set()
        self.functions: set[str] = set()
        self.star_import = False  # `from x import *`: any name may come from there
        classes: dict[str, ast.ClassDef] = {}
        for node in nodes if nodes is not None else ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                self.star_import = True
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.ImportFrom) and node.level > 0 and package is not None:
                # `from .model import Net` in package `pkg.sub`: `pkg.sub.model.Net` (a project's own code)
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.add(node.name)
                self.bound.add(node.name)
            elif isinstance(node, ast.ClassDef):
                classes[node.name] = node
                self.bound.add(node.name)
        self.imports_torch_geometric = any(
            v.startswith(("torch_geometric", "dgl")) for v in self.aliases.values()
        )
        self.module_classes = self._module_classes(classes)
        self.classes = classes

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name `node` refers to, imports resolved (`nn.Linear` → `torch.nn.Linear`)."""
        try:
            return self._resolved[node]
        except KeyError:
            resolved = self._resolved[node] = self._resolve(node)
            return resolved

    def _resolve(self, node: ast.AST) -> str | None:
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head in self.aliases:
            full = self.aliases[head]
        elif head in DEFAULT_ALIASES and head not in self.bound:
            full = DEFAULT_ALIASES[head]
        else:
            full = head
        return f"{full}.{rest}" if rest else full

    def _module_classes(self, classes: dict[str, ast.ClassDef]) -> set[str]:
        subclasses: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, cls in classes.items():
                if name in subclasses:
                    continue
                for base in cls.bases:
                    full = self.resolve(base) or ""
                    if (
                        base_name(base) in subclasses
                        or _MODULE_BASE.search(full)
                        or (full.startswith("torch.nn.") and full.rsplit(".", 1)[-1][:1].isupper())
                        or (full.endswith("Module") and self._builds_nn_layers(cls))
                        or (
                            self._foreign_base(base, full, classes)
                            and _has_forward(cls)
                            and self._builds_nn_layers(cls)
                        )
                    ):
                        subclasses.add(name)
                        changed = True
                        break
        return subclasses

    def _foreign_base(self, base: ast.AST, full: str, classes: dict[str, ast.ClassDef]) -> bool:
        """A base class imported from code the file does not define (`from .representation_base import
        RepresentationBase`, `PreTrainedModel`): what it is, the file cannot say."""
        local = (dotted(base) or "").split(".", 1)[0]
        if not local or local in classes or full in _PLAIN_BASES:
            return False
        return local in self.aliases or local not in self.bound  # (a relative import left unresolved)

    def _builds_nn_layers(self, cls: ast.ClassDef) -> bool:
        """`class _TFTModule(PLForecastingModule)` from another package: a base named `...Module` and an
        `__init__` that puts a `torch.nn` layer on `self` (`self.lstm = nn.LSTM(...)`) make a module."""
        for item in cls.body:
            if not (isinstance(item, ast.FunctionDef) and item.name == "__init__"):
                continue
            for node in ast.walk(item):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    if not any(isinstance(t, ast.Attribute) for t in node.targets):
                        continue
                    full = self.resolve(node.value.func) or ""
                    last = full.rsplit(".", 1)[-1]
                    if full.startswith("torch.nn.") and not full.startswith("torch.nn.functional"):
                        if last[:1].isupper():
                            return True
        return False

    def torch_function(self, call: ast.Call) -> str | None:
        """`zeros` for `torch.zeros(...)` (any alias of torch), else None."""
        full = self.resolve(call.func)
        if full and full.startswith("torch.") and full.count(".") == 1:
            return full[6:]
        return None

    def is_module_constructor(self, call: ast.Call) -> bool:
        """`nn.Linear(...)`, `Net(...)` for a local `nn.Module` subclass, `torchvision.models.resnet18()`."""
        full = self.resolve(call.func) or ""
        last = full.rsplit(".", 1)[-1]
        if isinstance(call.func, ast.Name) and call.func.id in self.module_classes:
            return True
        if isinstance(call.func, ast.Subscript):  # `models.__dict__[args.arch]()`: a torchvision model
            return (self.resolve(call.func.value) or "") == "torchvision.models.__dict__"
        if full.startswith("torch.nn.") and not full.startswith("torch.nn.functional"):
            if last == "from_pretrained":  # `nn.Embedding.from_pretrained(table)`: a class method that builds
                last = full.rsplit(".", 2)[-2]
            return last[:1].isupper() and last not in NN_NOT_MODULES
        if full.startswith("torchvision.models.") or full in {"timm.create_model"}:
            return True
        return last == "from_pretrained" and "Tokenizer" not in full and "Processor" not in full

    def is_loss_constructor(self, call: ast.Call) -> bool:
        """`nn.CrossEntropyLoss(...)` and the other `torch.nn` losses."""
        full = self.resolve(call.func) or ""
        return full.startswith("torch.nn.") and full.endswith("Loss")

    def is_parameter(self, call: ast.Call) -> bool:
        """`nn.Parameter(...)` in any spelling."""
        full = self.resolve(call.func) or ""
        return full.rsplit(".", 1)[-1] == "Parameter"

    def is_rnn_constructor(self, call: ast.Call) -> bool:
        """`nn.LSTM(...)`, `nn.GRU(...)`, `nn.RNN(...)` and their cells."""
        full = self.resolve(call.func) or ""
        return full.startswith("torch.nn.") and full.rsplit(".", 1)[-1] in RNN_CLASSES


def base_name(node: ast.AST) -> str | None:
    """The last part of a dotted name."""
    name = dotted(node)
    return name.rsplit(".", 1)[-1] if name else None


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    """The value of keyword argument `name` of `call`, or None."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def has_star_kwargs(call: ast.Call) -> bool:
    """`f(**options)`: any keyword may be hidden in it."""
    return any(kw.arg is None for kw in call.keywords)


def _has_forward(cls: ast.ClassDef) -> bool:
    """Whether the class defines `forward` itself (what a module's call runs)."""
    return any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "forward" for n in cls.body
    )
