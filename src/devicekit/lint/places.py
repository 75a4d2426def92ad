"""The abstract values of the device-flow analysis: where a value lives, and why the analysis thinks so.

Every expression the analysis understands gets a `Val`: what it is (a tensor, a module, a container, a
DataLoader ...) and its `Place`:

- `host`: the CPU, for sure (a factory without `device=`, `torch.from_numpy`, `.cpu()`, a DataLoader batch);
- `device`: an accelerator, or a device variable that names one (`.to(device)`, `.cuda()`, `"cuda:1"`);
- `input`: where a module's input is, inside the module's own methods (its weights are there too);
- `unknown`: anything else. Two paths that disagree join to `unknown`, and nothing is reported about it.

Each place carries its origin (`Why`): a short sentence, in English and Chinese, that a finding's message
quotes ("`noise` is created on the CPU at line 28").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from devicekit.messages import Message

HOST, DEVICE, INPUT, UNKNOWN = "host", "device", "input", "unknown"


@dataclass(frozen=True)
class Place:
    """Where a value lives.

    Attributes:
        kind: `host`, `device`, `input` or `unknown`.
        device: for `device`, how the code names it (`"cuda:1"`, `device`, `args.device`).
        index: the accelerator index when the code writes it.
        why: where the analysis learned it, for messages.
        gpu_only: a place on the path a GPU machine takes (`if torch.cuda.is_available(): x = x.cuda()`):
            the path where device bugs show; on the other path the value is elsewhere.
    """

    kind: str
    device: str | None = None
    index: int | None = None
    why: Message | None = None
    gpu_only: bool = False

    def same(self, other: Place) -> bool:
        """The same place, whatever the reasons."""
        return (self.kind, self.device, self.index) == (other.kind, other.device, other.index)

    def differs(self, other: Place) -> bool:
        """Surely two different devices: the CPU against an accelerator or a module's device."""
        kinds = {self.kind, other.kind}
        return HOST in kinds and bool(kinds & {DEVICE, INPUT})


UNKNOWN_PLACE = Place(UNKNOWN)


@dataclass(frozen=True)
class Val:
    """What an expression holds.

    Attributes:
        kind: `tensor`, `module`, `seq` (tuple or list), `dict`, `loader`, `device`, `transform`, `optimizer`
            or `any` (a checkpoint's content).
        place: where it lives (a module: where its weights are).
        label: the code that names it (`noise`, `batch["x"]`), for messages.
        zero_dim: a 0-dim tensor for sure (True), surely not (False), or unknown (None).
        batch: a tensor straight out of a DataLoader, never moved since.
        made: a CPU tensor that code made (a factory without `device=`, `torch.from_numpy`, a transform
            pipeline), and that nothing moved since.
        created: the `(line, col)` of the factory call that made this CPU tensor in the file being
            linted (where DK003 is reported), else None.
        attribute: a plain module attribute (`self.pe = torch.zeros(...)`): DK004 reports it where it is set.
        moved: a module that was moved (`.to(...)`, `.cuda()`) at least once.
        items: the elements of a `seq`, when known; for a `dict`, its values by constant key.
        item: what every element of a container holds, when they all agree.
        cls: the project class a module was built from (its qualified name).
        loss: a loss module (`nn.CrossEntropyLoss()`): no weights of its own unless given some.
        to_tensor: a transform pipeline that makes tensors (`ToTensor`), on the CPU.
        whole: a DataLoader's whole batch (`for batch in loader`), which may be a dict-like object whose
            `.to()` moves in place (a tokenizer's `BatchEncoding`): DK002 leaves it alone.
        wrapper: for a module, the `(line, col)` of the `nn.DataParallel(...)` call in the file being
            linted that wrapped it while it was on the CPU (DK013 is reported there if it runs so).
        fallback: a tensor on some other path, made on the CPU in the file being linted: `w =
            torch.ones(n) if w is None else w` holds the caller's `w`, or that CPU tensor when the caller
            gives none. Where it meets a tensor on a device, that path fails (DK003).
        node: for a batch, the expression it was last read from (DK001 is reported there).
    """

    kind: str
    place: Place = UNKNOWN_PLACE
    label: str | None = None
    zero_dim: bool | None = None
    batch: bool = False
    made: bool = False
    created: tuple[int, int] | None = None
    attribute: bool = False
    moved: bool = False
    items: tuple[tuple[object, Val | None], ...] | None = None
    item: Val | None = None
    cls: str | None = None
    to_tensor: bool = False
    loss: bool = False
    whole: bool = False
    wrapper: tuple[int, int] | None = None
    fallback: Val | None = None
    node: object = field(default=None, compare=False, repr=False)

    def at(self, place: Place, **changes: object) -> Val:
        """The same value somewhere else (a move): no longer a fresh batch or a CPU creation."""
        return replace(
            self,
            place=place,
            batch=False,
            made=False,
            created=None,
            attribute=False,
            wrapper=None,
            fallback=None,
            **changes,
        )

    def named(self, label: str | None) -> Val:
        """The value under a new name (an assignment keeps the first name that is short enough)."""
        return self if label is None else replace(self, label=label)


_FIELDS: dict[type, frozenset[str]] = {
    cls: frozenset(f.name for f in dataclasses.fields(cls)) for cls in (Place, Val)
}


def replace(value, /, **changes):
    """`dataclasses.replace(value, **changes)`, the same result at a tenth of its cost for the analysis'
    own values (`Place`, `Val`; anything else goes to `dataclasses.replace`).

    The analysis makes about 5,000 of these on the 190 files of `benchmarks/bench_lint.py`;
    `dataclasses.replace` reads all 18 fields of a `Val` into a dictionary and calls `__init__` with them
    (about 13 microseconds each). Both classes are frozen dataclasses whose fields are all set by
    `__init__` and that have no `__post_init__`, so copying the instance's attributes and overwriting the
    changed ones gives the same value. A name that is not a field is left to `dataclasses.replace`, which
    raises its own `TypeError`.
    """
    names = _FIELDS.get(type(value))
    if names is None or not names.issuperset(changes):
        return dataclasses.replace(value, **changes)
    copy = object.__new__(type(value))
    attributes = copy.__dict__
    attributes.update(value.__dict__)
    attributes.update(changes)
    return copy


def join(a: Val | None, b: Val | None, fallback: bool = False) -> Val | None:
    """What a name holds after two paths (an `if` and its `else`, a loop run or not).

    With `fallback` (two paths of a test that is not about devices), a tensor made on the CPU on one path
    and a tensor from elsewhere on the other is the other one, keeping the CPU tensor as its `fallback`.
    """
    if fallback and a is not None and b is not None and a.kind == b.kind == "tensor":
        for made, other in ((a, b), (b, a)):
            if made.place.kind == HOST and made.made and other.place.kind != HOST:
                return replace(other, fallback=other.fallback or made)
    if (
        a is not None
        and b is not None
        and a.kind == b.kind == "module"
        and a.place.kind == b.place.kind == HOST
        and (a.wrapper is None) != (b.wrapper is None)
        and a.cls == b.cls
    ):
        # round 5: `if config["data_parallel"]: model = nn.DataParallel(model)` around a model never moved:
        # on the path that wraps it, calling it fails; the other path is the same module unwrapped
        return a if a.wrapper is not None else b
    if a is None or b is None:
        return None
    if a is b:
        return a
    if {a.kind, b.kind} == {"module", "moved"} and a.place.same(b.place):
        # a module on one path, a value of unknown kind moved to the same place on the other (`self.model
        # = BertModel.from_pretrained(...).to(dev)` or `model.to(dev)`): something moved there
        a, b = (a, replace(b, kind="moved")) if a.kind == "moved" else (replace(a, kind="moved"), b)
    if a.kind != b.kind:
        return None
    place = a.place if a.place.same(b.place) else UNKNOWN_PLACE
    item = a.item if a.item == b.item else None
    if a.kind == "seq" and item is None:  # an empty list (`losses = []`) and the list a loop filled
        if a.items == () and a.item is None:
            item = b.item
        elif b.items == () and b.item is None:
            item = a.item
    if a.kind == "module" and a.cls != b.cls:  # one of two modules (a CTC or a cross-entropy loss): unknown
        place = UNKNOWN_PLACE
    return Val(
        a.kind,
        place,
        a.label if a.label == b.label else None,
        a.zero_dim if a.zero_dim == b.zero_dim else None,
        a.batch and b.batch,
        a.made and b.made,
        a.created if a.created == b.created else None,
        a.attribute and b.attribute,
        a.moved or b.moved,
        a.items if a.items == b.items else None,
        item,
        a.cls if a.cls == b.cls else None,
        a.to_tensor and b.to_tensor,
        a.loss and b.loss and a.cls == b.cls,  # one of two losses: which arguments it compares is unknown
        a.whole and b.whole,
        a.wrapper if a.wrapper == b.wrapper else None,
        a.fallback if a.fallback == b.fallback else None,
    )


def join_envs(
    a: dict[str, Val],
    b: dict[str, Val],
    before: dict[str, Val] | None = None,
    a_set: set[str] | frozenset[str] = frozenset(),
    b_set: set[str] | frozenset[str] = frozenset(),
    fallback: bool = False,
) -> dict[str, Val]:
    """Two environments joined name by name. A name that both paths know is joined. A name that only one
    path knows, that was not bound `before` the paths split and that the other path did not set at all
    (`a_set`, `b_set`: the names each path assigned), keeps that path's value: on the other path it does
    not exist, and using it there would fail anyway. Otherwise it is dropped (unknown)."""
    out = {}
    for key, value in a.items():
        other = b.get(key)
        if other is None:
            if before is not None and key not in before and key not in b_set:
                out[key] = value
            elif fallback and key in b_set and _made_here(value):
                out[key] = Val("tensor", UNKNOWN_PLACE, fallback=value)
            continue
        prior = before.get(key) if before is not None else None
        # (a CPU tensor that was there before the test, moved on one path, is no tensor made on the other)
        joined = join(value, other, fallback and (prior is None or prior.place.kind != HOST))
        if joined is not None:
            out[key] = joined
    for key, value in b.items():
        if key in a:
            continue
        if before is not None and key not in before and key not in a_set:
            out[key] = value
        elif fallback and key in a_set and _made_here(value):
            out[key] = Val("tensor", UNKNOWN_PLACE, fallback=value)
    return out


def _made_here(value: Val) -> bool:
    """Round 6: a tensor made on the CPU on one path of a test that is not about devices, where the other
    path set the same name to something unknown (`if self.training: x = batch["x"] else: x =
    torch.zeros(n)`): the name holds the unknown value, with the CPU tensor as its `fallback` (as `w =
    torch.ones(n) if w is None else w` already did for one expression)."""
    return value.kind == "tensor" and value.place.kind == HOST and value.made and value.fallback is None


# --- why a value is where it is ---------------------------------------------------------------------


def on_gpu_path(reason: Message | None, line: int) -> Message:
    """A place that holds on the path a machine with a GPU takes (the test at `line`)."""
    en = reason.en if reason is not None else "is on the device"
    zh = reason.zh if reason is not None else "在设备上"
    return Message(
        f"{en}, when a GPU is there (the test at line {line})",
        f"{zh}（有 GPU 时，见第 {line} 行的判断）",
    )


def created_on_cpu(line: int, where: str | None = None) -> Message:
    if where:
        return Message(
            f"is created on the CPU at line {line}, in `{where}`", f"在 `{where}` 里第 {line} 行创建于 CPU 上"
        )
    return Message(f"is created on the CPU at line {line}", f"在第 {line} 行创建于 CPU 上")


def from_numpy(line: int) -> Message:
    return Message(
        f"is made from a NumPy array at line {line}, on the CPU",
        f"在第 {line} 行由 NumPy 数组生成，在 CPU 上",
    )


def moved_to_cpu(line: int) -> Message:
    return Message(f"is moved to the CPU at line {line}", f"在第 {line} 行移到了 CPU 上")


def batch_from(loader: str, line: int) -> Message:
    return Message(
        f"comes from `{loader}` at line {line} and is never moved", f"来自第 {line} 行的 `{loader}`，从未移动"
    )


def sample_of(dataset: str, line: int) -> Message:
    return Message(
        f"is a sample of the dataset `{dataset}` taken at line {line}, on the CPU, and is never moved",
        f"是第 {line} 行从数据集 `{dataset}` 取出的样本，在 CPU 上，从未移动",
    )


def wrapped_on_cpu(module: str, why: Message | None, line: int) -> Message:
    reason = why or Message("is on the CPU", "在 CPU 上")
    return Message(
        f"`{module}` {reason.en}, and is wrapped at line {line} while it is there",
        f"`{module}` {reason.zh}，并在第 {line} 行仍在那里时被包装",
    )


def moved_to(device: str, line: int) -> Message:
    return Message(f"is moved to `{device}` at line {line}", f"在第 {line} 行移到了 `{device}` 上")


def met_in_loss(other: str, line: int, why: Message | None) -> Message:
    tail_en = f" (which {why.en})" if why is not None else ""
    tail_zh = f"（而后者{why.zh}）" if why is not None else ""
    return Message(
        f"met `{other}` in a loss at line {line}, so it is on that device{tail_en}",
        f"在第 {line} 行与 `{other}` 一起进入了损失函数，所以它在同一设备上{tail_zh}",
    )


def called_with(arg: str, why: Message | None) -> Message:
    tail_en = f" (which {why.en})" if why is not None else ""
    tail_zh = f"（而它{why.zh}）" if why is not None else ""
    return Message(
        f"is called with `{arg}`{tail_en}, so it runs on that device",
        f"以 `{arg}` 为输入调用{tail_zh}，所以它在那个设备上运行",
    )


def made_on(device: str, line: int) -> Message:
    return Message(f"is created on `{device}` at line {line}", f"在第 {line} 行创建于 `{device}` 上")


def output_of(module: str, why: Message | None) -> Message:
    tail_en = f", which {why.en}" if why is not None else ""
    tail_zh = f"，而它{why.zh}" if why is not None else ""
    return Message(f"is the output of `{module}`{tail_en}", f"是 `{module}` 的输出{tail_zh}")


def module_input(method: str) -> Message:
    return Message(
        f"is an input of `{method}`, on the module's device", f"是 `{method}` 的输入，在模块所在的设备上"
    )


def submodule(name: str) -> Message:
    return Message(
        f"goes into `{name}`, a submodule whose weights are on the module's device",
        f"进入了子模块 `{name}`，它的权重在模块所在的设备上",
    )


def built_here(line: int) -> Message:
    return Message(
        f"is built at line {line} and never moved: its weights are on the CPU",
        f"在第 {line} 行构建，从未移动：它的权重在 CPU 上",
    )


def from_caller(line: int | None, why: Message | None) -> Message:
    tail_en = f" (it {why.en})" if why is not None else ""
    tail_zh = f"（它{why.zh}）" if why is not None else ""
    if line is None:
        return Message(f"comes from the caller{tail_en}", f"来自调用方{tail_zh}")
    return Message(f"comes from the caller at line {line}{tail_en}", f"来自第 {line} 行的调用方{tail_zh}")


def returned_by(function: str, line: int, why: Message | None) -> Message:
    tail_en = f": it {why.en}" if why is not None else ""
    tail_zh = f"：它{why.zh}" if why is not None else ""
    return Message(
        f"is returned by `{function}` (called at line {line}){tail_en}",
        f"是 `{function}`（第 {line} 行调用）的返回值{tail_zh}",
    )


def transform_output(line: int) -> Message:
    return Message(
        f"comes out of a transform pipeline at line {line}, on the CPU",
        f"在第 {line} 行由变换流水线生成，在 CPU 上",
    )


def made_under(device: str, line: int) -> Message:
    return Message(
        f"is created under `with torch.device({device})` at line {line}",
        f"在第 {line} 行的 `with torch.device({device})` 之下创建",
    )


def default_reason(place: Place) -> Message:
    """What to say about a place whose origin was not recorded."""
    if place.kind == HOST:
        return Message("is on the CPU", "在 CPU 上")
    if place.kind == INPUT:
        return Message("is on the module's device", "在模块所在的设备上")
    if place.kind == DEVICE:
        name = place.device or "the accelerator"
        return Message(f"is on `{name}`", f"在 `{name}` 上")
    return Message("is somewhere unknown", "位置未知")


def buffer_of(name: str) -> Message:
    return Message(
        f"is `{name}`, a buffer or a parameter of the module, which moves with it",
        f"是 `{name}`，模块的缓冲区或参数，随模块一起移动",
    )


def own_output() -> Message:
    return Message(
        "is the module's own output (`self(...)`), on the module's device",
        "是模块自身的输出（`self(...)`），在模块所在的设备上",
    )


def module_device() -> Message:
    return Message("is the module's own device", "是模块自己所在的设备")


def submodule_output(name: str) -> Message:
    return Message(
        f"is the output of `{name}`, a submodule on the module's device",
        f"是子模块 `{name}` 的输出，在模块所在的设备上",
    )
