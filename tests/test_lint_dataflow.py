"""The device-flow analysis (`devicekit.lint.dataflow`), one inference step at a time: what each name holds
after factories, moves, assignments, attributes, calls within the project, branches, loops, containers
and library calls; then the questions the rules ask of it, and the messages that say why."""

from __future__ import annotations

import textwrap

import pytest

from devicekit.lint import DEFAULT_CODES, RULES, lint_source
from devicekit.lint.dataflow import places, tensor_params
from devicekit.lint.engine import lint_paths


def where(source: str, function: str | None = None) -> dict[str, str]:
    """name -> "kind@place" (`tensor@host`, `module@device`) at the end of the function (or top level)."""
    env = places(textwrap.dedent(source), function)
    return {name: f"{value.kind}@{value.place.kind}" for name, value in env.items()}


def findings(source: str, codes=DEFAULT_CODES, path: str = "train.py") -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_source(textwrap.dedent(source), path=path, codes=codes)]


# --- factories and moves ----------------------------------------------------------------------------


def test_factories_without_and_with_a_device():
    env = where(
        """
        a = torch.zeros(3)
        b = torch.zeros(3, device="cuda")
        c = torch.zeros(3, device="cpu")
        d = torch.from_numpy(arr)
        e = torch.tensor([1, 2])
        f = torch.zeros_like(b)
        g = b.new_zeros(2)
        h = torch.zeros(3, device=b.device)
        with torch.device("cuda"):
            i = torch.ones(2)
        """
    )
    assert env["a"] == env["c"] == env["d"] == env["e"] == "tensor@host"
    assert env["b"] == env["f"] == env["g"] == env["h"] == env["i"] == "tensor@device"


def test_a_global_default_device_makes_factories_unknown():
    env = where('torch.set_default_device("cuda")\na = torch.zeros(3)\n')
    assert env["a"] == "tensor@unknown"


def test_moves():
    env = where(
        """
        x = torch.zeros(3)
        a = x.to(device)
        b = x.cuda()
        c = a.cpu()
        d = x.to(torch.float16)
        e = x.to(somewhere)
        f = x.type_as(a)
        """
    )
    assert env["a"] == env["b"] == env["f"] == "tensor@device"
    assert env["c"] == env["d"] == "tensor@host"  # moved back; a dtype-only `.to` moves nothing
    assert env["e"] == "tensor@unknown"  # moved, but where is not known


def test_device_variables_and_parameters():
    env = where(
        """
        def f(device, other_device=None, n=3):
            a = torch.zeros(n).to(device)
            b = torch.zeros(n).to(other_device)
        """,
        "f",
    )
    assert env["a"] == "tensor@device"
    assert env["b"] == "tensor@unknown"  # defaults to None: may be no device at all


# --- assignments, attributes, containers ------------------------------------------------------------


def test_tuple_unpacking_and_containers():
    env = where(
        """
        a, b = torch.zeros(2).cuda(), torch.ones(2)
        pair = (a, b)
        first, second = pair
        d = {"x": a, "y": b}
        y = d["y"]
        moved = {k: v.to(device) for k, v in d.items()}
        z = moved["anything"]
        """
    )
    assert (env["a"], env["b"], env["first"], env["second"]) == (
        "tensor@device",
        "tensor@host",
        "tensor@device",
        "tensor@host",
    )
    assert env["y"] == "tensor@host" and env["z"] == "tensor@device"


def test_a_container_written_by_an_unknown_key_is_forgotten():
    env = where(
        """
        for batch in loader:
            for k in batch:
                batch[k] = batch[k].to(device)
        d = {"x": torch.zeros(1)}
        d["x"] = d["x"].cuda()
        """
    )
    assert "batch" not in env
    assert env["d"] == "dict@unknown"
    assert where('d = {"x": torch.zeros(1)}\nd["x"] = d["x"].cuda()\nv = d["x"]\n')["v"] == "tensor@device"


def test_module_attributes_from_init():
    env = where(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(2, 2)
                self.mask = torch.ones(2)
                self.register_buffer("scale", torch.ones(2))

            def forward(self, x):
                m = self.mask
                s = self.scale
                p = self.proj
                return x
        """,
        "Net.forward",
    )
    assert env["m"] == "tensor@host"  # a plain attribute stays on the CPU when the module moves
    assert env["s"] == "tensor@input" and env["p"] == "module@input"  # a buffer, a submodule: with the module
    assert env["x"] == "tensor@input"


def test_tensor_parameters_of_a_method():
    import ast

    function = ast.parse(
        textwrap.dedent(
            """
            def forward(self, x, mask=None, steps: int = 3, scale=0.5, h0: torch.Tensor = None, lengths=None):
                return x.view(-1) * scale
            """
        )
    ).body[0]
    assert tensor_params(function) == {"x", "h0"}


# --- branches and loops -----------------------------------------------------------------------------


def test_branches_join_to_unknown_when_they_disagree():
    env = where(
        """
        a = torch.zeros(2)
        b = torch.zeros(2)
        if flag:
            a = a.cuda()
            b = b.cpu()
        else:
            b = torch.ones(2)
        """
    )
    assert env["a"] == "tensor@unknown" and env["b"] == "tensor@host"


def test_a_branch_that_returns_does_not_reach_the_join():
    env = where(
        """
        def f(x, device):
            a = torch.zeros(2)
            if x is None:
                return None
            else:
                a = a.to(device)
            return a
        """,
        "f",
    )
    assert env["a"] == "tensor@device"


def test_a_loop_body_may_not_run():
    env = where("a = torch.zeros(2)\nfor i in range(3):\n    a = a.cuda()\n")
    assert env["a"] == "tensor@unknown"


def test_dataloader_batches():
    env = where(
        """
        loader = DataLoader(ds, batch_size=4)
        for x, y in loader:
            x = x.to(device)
        for batch in train_loader:
            tokens = batch["tokens"]
        first = next(iter(loader))
        """
    )
    assert env["x"] == "tensor@device" and env["y"] == "batch@host"
    assert env["tokens"] == "tensor@host" and env["first"] == "batch@host"
    assert places("for x, y in loader:\n    pass\n")["y"].batch


# --- calls within the project -----------------------------------------------------------------------


def test_a_helper_returns_its_place():
    env = where(
        """
        def make_mask(n):
            return torch.ones(n, n)

        def on(x, device):
            return x.to(device)

        a = make_mask(3)
        b = on(torch.zeros(2), "cuda")
        """
    )
    assert env["a"] == "tensor@host" and env["b"] == "tensor@device"


def test_a_helper_that_moves_a_module_in_place():
    env = where(
        """
        class Net(nn.Module):
            pass

        def setup(model, device):
            model.to(device)

        model = Net()
        setup(model, "cuda")
        """
    )
    assert env["model"] == "module@device"


def test_module_moves_and_outputs():
    env = where(
        """
        class Net(nn.Module):
            def forward(self, x):
                return x
        model = Net()
        out0 = model(torch.zeros(2))
        model = model.to(device)
        out = model(torch.zeros(2).to(device))
        other = Net()
        other.cuda()
        """
    )
    assert env["out0"] == "tensor@host" and env["out"] == "tensor@device"
    assert env["model"] == env["other"] == "module@device"


def test_calls_into_another_file(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "masks.py").write_text(
        "import torch\n\ndef causal_mask(n):\n    return torch.triu(torch.ones(n, n), diagonal=1)\n",
        encoding="utf-8",
    )
    (tmp_path / "pkg" / "model.py").write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn
            from .masks import causal_mask

            class Attn(nn.Module):
                def forward(self, x):
                    return x + causal_mask(x.size(1))
            """
        ),
        encoding="utf-8",
    )
    found, errors = lint_paths([str(tmp_path / "pkg")])
    assert errors == []
    [finding] = found
    assert finding.code == "DK003" and finding.path.endswith("model.py") and finding.line == 8
    assert "returned by `causal_mask`" in finding.detail.en and "causal_mask" in finding.detail.zh
    # the helper alone, without the model that uses it, says nothing
    alone, _ = lint_paths([str(tmp_path / "pkg" / "masks.py")])
    assert alone == []


def test_a_default_device_set_in_another_file_is_not_guessed(tmp_path):
    """Whether another file's global default device applies depends on the run: the analysis does not
    pretend to know (the loader's DK012 needs the call and the loader in view)."""
    (tmp_path / "a.py").write_text('import torch\ntorch.set_default_device("cuda")\n', encoding="utf-8")
    (tmp_path / "b.py").write_text("import torch\nx = torch.zeros(3)\n", encoding="utf-8")
    assert lint_paths([str(tmp_path)]) == ([], [])


# --- the questions ----------------------------------------------------------------------------------

QUESTIONS = {
    "a CPU tensor meets a moved one (DK003)": (
        """
        x = torch.zeros(3).to(device)
        noise = torch.randn(3)
        y = x + noise
        """,
        [(3, "DK003")],
    ),
    "a 0-dim CPU tensor mixes freely": (
        """
        x = torch.zeros(3).to(device)
        y = x * torch.tensor(2.0) + torch.ones(3).sum()
        """,
        [],
    ),
    "but not in torch.cat": (
        """
        x = torch.zeros(3).to(device)
        y = torch.cat([x, torch.zeros(3)])
        """,
        [(3, "DK003")],
    ),
    "a batch never moved meets a moved model (DK001)": (
        """
        model = Net().to(device)
        for x, y in loader:
            out = model(x)
        """,
        [(4, "DK001")],
    ),
    "a model never moved meets moved data (DK201)": (
        """
        class Net(nn.Module):
            pass
        def train(loader, device):
            model = Net()
            for x, y in loader:
                out = model(x.to(device))
        """,
        [(7, "DK201")],
    ),
    "a model built under a device block is on that device": (
        """
        with torch.device("cuda"):
            model = Net()
        out = model(torch.zeros(2, device="cuda"))
        """,
        [],
    ),
    "np.* on an accelerator tensor (DK010)": (
        """
        out = model.to(device)(x.to(device))
        total = np.sum(out)
        """,
        [(3, "DK010")],
    ),
    "a CPU table indexed with accelerator indices (DK011)": (
        """
        table = torch.arange(10)
        idx = torch.tensor([1, 2], device="cuda")
        picked = table[idx]
        """,
        [(4, "DK011")],
    ),
    "an accelerator table indexed with CPU indices is fine": (
        """
        table = torch.arange(10, device="cuda")
        picked = table[torch.tensor([1, 2])]
        mask = table[table.cpu() > 3]
        """,
        [],
    ),
    "a transform's output moved as a statement (DK002)": (
        """
        tf = transforms.Compose([transforms.Resize(224), transforms.ToTensor()])
        img = tf(pil_image)
        img.to(device)
        """,
        [(4, "DK002")],
    ),
    "a loss without weights compares its arguments": (
        """
        def loss(theta, x):
            labels = torch.ones(theta.shape[0])
            return torch.nn.BCELoss()(torch.sigmoid(theta), labels)

        out = model.to(device)(x.to(device))
        value = loss(out, x)
        """,
        [(3, "DK003")],
    ),
    "a moved-to-the-CPU tensor is left alone": (
        """
        pred = model.to(device)(x.to(device))
        back = pred.cpu()
        same = back == pred
        """,
        [],
    ),
}


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_questions(name):
    source, expected = QUESTIONS[name]
    assert findings(source) == expected


def test_a_helper_that_makes_a_cpu_tensor_used_in_forward():
    source = """
        def make_mask(n):
            return torch.ones(n, n)

        class Net(nn.Module):
            def forward(self, x):
                return x * make_mask(x.size(1))
    """
    [finding] = lint_source(textwrap.dedent(source), codes=DEFAULT_CODES)
    assert (finding.line, finding.code) == (3, "DK003")  # where the helper makes it, in this file
    assert "`make_mask(x.size(1))` is returned by `make_mask` (called at line 7)" in finding.detail.en
    assert (
        "it meets `x` (line 7), which is an input of `forward`, on the module's device" in finding.detail.en
    )


def test_a_function_called_with_data_on_the_gpu():
    """The caller moves the data; the callee makes its own tensor on the CPU: reported in the callee, with
    where the caller's data comes from."""
    source = """
        def score(boxes1, boxes2):
            c2 = torch.zeros(boxes1.shape[0])
            return boxes1 + c2

        def main(loader, device):
            for boxes, other in loader:
                boxes = boxes.to(device)
                score(boxes, other)
    """
    [finding] = lint_source(textwrap.dedent(source), codes=DEFAULT_CODES)
    assert (finding.line, finding.code) == (3, "DK003")
    assert finding.detail.en == (
        "`c2` is created on the CPU at line 3, in `score`; it meets `boxes1` (line 4), which comes from the "
        "caller at line 9 (it is moved to `device` at line 8)"
    )
    assert finding.detail.zh == (
        "`c2` 在 `score` 里第 3 行创建于 CPU 上；它与 `boxes1` 相遇（第 4 行），而后者来自第 9 行的调用方"
        "（它在第 8 行移到了 `device` 上）"
    )


def test_messages_say_both_halves_in_both_languages():
    [finding] = lint_source(
        textwrap.dedent(
            """
            model = Net().to(device)
            for x, y in loader:
                out = model(x)
            """
        ),
        codes=DEFAULT_CODES,
    )
    en, zh = finding.message("en"), finding.message("zh")
    assert "`x` comes from `loader` at line 3 and is never moved" in en
    assert "`x` 来自第 3 行的 `loader`，从未移动" in zh
    assert RULES["DK001"].title_zh in zh and not any("\u4e00" <= ch <= "\u9fff" for ch in en)


def test_precision_first_unknown_stays_silent():
    source = """
        def f(a, b):
            return a + torch.zeros(3) + b      # where a and b are is not known

        class Data:
            def get(self, x):
                return x + torch.ones(3)        # not a module: its input is not on a device for sure

        t = torch.zeros(3)
        u = t.to(place_from_config())           # moved somewhere unknown
        v = t + u
    """
    assert findings(source) == []


# --- the shapes issue 43 found missed ---------------------------------------------------------------

MISSED_SHAPES = {
    "a plain attribute built with torch.cat (DK004)": (
        """
        class PE(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.table = torch.cat([torch.zeros(1, n), torch.ones(1, n)])
        """,
        [(5, "DK004")],
    ),
    "a plain attribute built by a helper (DK004)": (
        """
        def make_table(n):
            return torch.arange(n).float()

        class PE(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.table = make_table(n)
        """,
        [(8, "DK004")],
    ),
    "a hidden state made outside the module that owns the RNN (DK006)": (
        """
        class RNNNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.GRU(8, 16)

            def forward(self, x, h):
                return self.rnn(x, h)

        model = RNNNet().to(device)
        h0 = torch.zeros(1, 4, 16)
        for x, y in loader:
            out, h = model(x.to(device), h0)
        """,
        [(11, "DK006")],
    ),
    "a method named _forward (DK003)": (
        """
        class Net(nn.Module):
            def _forward(self, x):
                return x + torch.randn(x.shape)
        """,
        [(4, "DK003")],
    ),
}

STILL_SILENT = {
    "a module that moves its plain attributes itself (`_apply`)": """
        class Base(nn.Module):
            def _apply(self, fn):
                self = super()._apply(fn)
                self.stride = fn(self.stride)
                return self

        class Detect(Base):
            def __init__(self):
                super().__init__()
                self.stride = torch.tensor([8.0, 16.0, 32.0])
    """,
    "a batch converted to the tensor type the script picked": """
        Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
        generator = Generator().cuda()
        for i, batch in enumerate(dataloader):
            real_A = Variable(batch["A"].type(Tensor))
            fake_B = generator(real_A)
    """,
    "DDP and torch.compile keep the model where it is": """
        class Net(nn.Module):
            pass
        def main(device, rank):
            model = Net().to(device)
            model = DDP(model, device_ids=[rank])
            model = torch.compile(model)
            for x, y in loader:
                out = model(x.to(device))
    """,
}


@pytest.mark.parametrize("name", list(MISSED_SHAPES))
def test_shapes_the_rules_missed(name):
    source, expected = MISSED_SHAPES[name]
    assert findings(source) == expected


@pytest.mark.parametrize("name", list(STILL_SILENT))
def test_shapes_that_stay_silent(name):
    assert findings(STILL_SILENT[name]) == []


def test_a_default_device_set_by_an_imported_file(tmp_path):
    """`set_default_tensor_type` in `model.py`, the shuffled DataLoader in `main.py` that imports it."""
    (tmp_path / "model.py").write_text(
        'import torch\ntorch.set_default_tensor_type("torch.cuda.FloatTensor")\n\n'
        "class Net(torch.nn.Module):\n    pass\n",
        encoding="utf-8",
    )
    main = (
        "import torch\nfrom torch.utils.data import DataLoader\nfrom model import Net\n\n"
        "loader = DataLoader(ds, shuffle=True)\n"
    )
    (tmp_path / "main.py").write_text(main, encoding="utf-8")
    found, _ = lint_paths([str(tmp_path)])
    [finding] = found
    assert (finding.path, finding.line, finding.code) == (str(tmp_path / "main.py"), 5, "DK012")
    assert (
        "model.py" in finding.detail.en and "line 2" in finding.detail.en and "第 2 行" in finding.detail.zh
    )
    # the same main.py without that import: silent
    (tmp_path / "main.py").write_text(main.replace("from model import Net\n", ""), encoding="utf-8")
    assert lint_paths([str(tmp_path)]) == ([], [])
