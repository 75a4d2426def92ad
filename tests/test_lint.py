"""devicekit.lint's rules: every rule's bad example fires and its good twin does not, the inference stays
silent where the code does not show enough, `# noqa` and rule selection work, notebooks are linted as one
program with findings named by cell."""

from __future__ import annotations

import json
import textwrap

import pytest

from devicekit.lint import DEFAULT_CODES, RULES, lint_notebook, lint_source, select_codes

ALL = frozenset(RULES)


def codes_in(source: str, codes=ALL, notebook: bool = False) -> list[str]:
    return [f.code for f in lint_source(textwrap.dedent(source), codes=codes, notebook=notebook)]


@pytest.mark.parametrize("code", list(RULES))
def test_bad_example_fires_and_good_twin_does_not(code):
    rule = RULES[code]
    assert code in codes_in(rule.bad, notebook=True), rule.bad
    assert code not in codes_in(rule.good, notebook=True), rule.good


def test_registry_is_complete_and_bilingual():
    assert len(RULES) >= 15
    for code, rule in RULES.items():
        assert code == rule.code and code.startswith("DK") and len(code) == 5
        assert rule.title_en and rule.title_zh and rule.fix_en and rule.fix_zh
        assert any("\u4e00" <= ch <= "\u9fff" for ch in rule.title_zh + rule.fix_zh), code
        assert rule.scenario == 0 or int(code[-2:]) == rule.scenario, code  # last two digits: the scenario
        assert rule.default == (not code.startswith("DK9")), code
    assert {r.scenario for r in RULES.values() if r.default} >= {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14}


def test_style_rules_are_opt_in():
    source = 'model = Net().cuda()\nx = torch.ones(3, device="cuda")\n'
    assert codes_in(source, codes=DEFAULT_CODES) == []
    assert sorted(codes_in(source)) == ["DK901", "DK902"]


# --- silent when unsure, or when the code is right -------------------------------------------------

SILENT = {
    "module moved in place": """
        class Net(nn.Module):
            pass
        model = Net()
        model.to(device)
        model.cuda()
    """,
    "unknown receiver": "thing.to(device)\n",
    "module out of a dict": 'state["model"].to(device)\nnets["encoder"].cuda()\n',
    "factories placed right in forward": """
        class Net(nn.Module):
            def forward(self, x):
                a = torch.zeros(3, device=x.device)
                b = torch.zeros_like(x)
                c = torch.arange(x.size(1)).to(x.device)
                d = x.new_zeros(3)
                e = x * torch.tensor(0.5)
                f = x[:, torch.arange(2)]
                g = torch.ones(2, 2, **self.factory_kwargs)
                mask = torch.ones(3, 3)
                mask = mask.to(x.device)
                return a + b + c + d + e + f + g + mask
    """,
    "buffers and parameters": """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(3))
                self.register_buffer("m", torch.ones(3))
                self.register_buffer("pe", None)
                self.pe = torch.zeros(3)
                self.sizes = [1, 2, 3]
                self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])
                self.scale = torch.tensor(2.0)
    """,
    "not a module": """
        class Data:
            def __init__(self):
                self.x = torch.zeros(3)
                self.layers = [nn.Linear(2, 2)]
            def forward(self, x):
                return torch.zeros(3)
    """,
    "load with map_location": """
        a = torch.load(p, map_location="cpu")
        b = torch.load(p, "cpu")
        c = torch.load(p, **options)
    """,
    "optimizer loaded after the move": """
        model = Net().to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        optimizer.load_state_dict(state["optimizer"])
    """,
    "numpy after cpu": """
        x = x.to(device)
        out = model(x)
        a = out.detach().cpu().numpy()
        b = torch.ones(3).numpy()
        c = x.to("cpu").numpy()
    """,
    "cpu default device": """
        torch.set_default_device("cpu")
        loader = DataLoader(ds, shuffle=True)
    """,
    "default device with a generator": """
        torch.set_default_device("cuda")
        loader = DataLoader(ds, shuffle=True, generator=torch.Generator(device="cpu"))
    """,
    "PyG moves in place": """
        from torch_geometric.loader import DataLoader
        for data in DataLoader(ds):
            data.to(device)
    """,
    "collate_fn may move the batch": """
        model = Net().to(device)
        loader = DataLoader(ds, collate_fn=to_device_collate)
        for x, y in loader:
            out = model(x)
    """,
    "batch moved before use": """
        model = Net().to(device)
        loader = DataLoader(ds)
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            loss = criterion(model(x), y)
        for batch in loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            out = model(**batch)
    """,
    "model on the CPU": """
        model = Net()
        for x, y in DataLoader(ds):
            loss = criterion(model(x), y)
    """,
    "DataParallel moved afterwards": """
        class Net(nn.Module):
            pass
        model = Net()
        model = nn.DataParallel(model)
        model.to(device)
        other = nn.DataParallel(Net()).cuda()
    """,
    "DDP with set_device": """
        def main(rank):
            torch.cuda.set_device(rank)
            model = DDP(Net().cuda(), device_ids=[rank])
    """,
    "spawn in a script": """
        def worker(rank):
            pass
        mp.spawn(worker, nprocs=2)
    """,
    "default device reset before the loader": """
        torch.set_default_device("cuda")
        model = Net()
        torch.set_default_device(None)
        loader = DataLoader(ds, shuffle=True)
    """,
    "DataParallel only inspected": """
        dp = nn.DataParallel(nn.Linear(4, 2))
        print(dp.device_ids)
    """,
    "gloo DDP on CPU ranks": """
        def main(rank):
            dist.init_process_group("gloo", rank=rank, world_size=2)
            model = DDP(Net(), device_ids=None)
    """,
    "a launch helper sets the device": """
        from devicekit.distributed import setup

        def main():
            dist.init_process_group("nccl")
            info = setup()
            model = DDP(Net().to(info.device), device_ids=[info.local_rank])
    """,
    "cuda compared, not placed": """
        if device.type == "cuda":
            pass
    """,
}


@pytest.mark.parametrize("name", list(SILENT))
def test_silent(name):
    assert codes_in(SILENT[name], codes=DEFAULT_CODES) == []


def test_hard_coded_cuda_in_comparison_is_not_reported():
    assert codes_in('if device.type == "cuda":\n    pass\n') == []


# --- inferred and reported ------------------------------------------------------------------------

FIRES = {
    "DK002": [
        """
        class Net(nn.Module):
            def forward(self, x):
                x.to(self.device)
                return x
        """,
        """
        for batch in train_loader:
            batch["input_ids"].to(device)
        """,
        "t = torch.randn(3)\nt.cuda()\n",
        """
        def train(device):
            batch = make_batch()
            tokens = batch["tokens"]
            tokens.to(device)
        """,
    ],
    "DK003": [
        """
        class Block(nn.Module):
            def forward(self, x):
                pos = torch.arange(x.size(1))
                return x + self.emb(pos)
        """,
        """
        class Attn(nn.Module):
            def forward(self, x):
                return x.masked_fill(self.mask(x.size(1)), 0)
            def mask(self, n):
                return torch.triu(torch.ones(n, n), diagonal=1).bool()
        """,
        """
        class Net(nn.Module):
            def forward(self, x):
                return x + torch.from_numpy(self.table)
        """,
    ],
    "DK004": [
        """
        class PositionalEncoding(nn.Module):
            def __init__(self, d, n):
                super().__init__()
                pe = torch.zeros(n, d)
                pe[:, 0::2] = torch.sin(torch.arange(n).unsqueeze(1))
                self.pe = pe.unsqueeze(0)
        """,
    ],
    "DK005": [
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.heads = []
                for _ in range(3):
                    self.heads.append(nn.Linear(4, 4))
        """,
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = {"a": nn.Conv2d(3, 3, 1), "b": nn.Conv2d(3, 3, 1)}
        """,
    ],
    "DK006": [
        """
        class RNNModel(nn.Module):
            def init_hidden(self, batch_size):
                return (torch.zeros(2, batch_size, 64), torch.zeros(2, batch_size, 64))
        """,
    ],
    "DK009": [
        """
        def resume(path, device):
            state = build("cpu")
            checkpoint = torch.load(path, map_location="cpu")
            state["optimizer"].load_state_dict(checkpoint["optimizer"])
            state["model"].to(device)
        """,
    ],
    "DK010": [
        """
        model = Net().to(device)
        preds = model(x.to(device)).argmax(1).numpy()
        """,
        "y = x.cuda().numpy()\n",
    ],
    "DK001": [
        """
        def train(model, train_loader, device):
            for data, target in train_loader:
                data = data.to(device)
                output = model(data)
                loss = F.nll_loss(output, target)
        """,
    ],
    "DK012": [
        """
        torch.set_default_tensor_type("torch.cuda.FloatTensor")
        loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True)
        """,
    ],
    "DK201": [
        """
        model = Classifier()
        for x, y in DataLoader(ds):
            logits = model(x.to(device))
        """,
    ],
    "DK013": [
        """
        class Net(nn.Module):
            pass
        model = Net()
        model = nn.DataParallel(model, device_ids=[0, 1])
        out = model(x)
        """,
    ],
}


@pytest.mark.parametrize(("code", "index"), [(c, i) for c, items in FIRES.items() for i in range(len(items))])
def test_fires(code, index):
    assert set(codes_in(FIRES[code][index], codes=DEFAULT_CODES)) == {code}


def test_finding_position_and_messages():
    [finding] = lint_source("import torch\nstate = torch.load(path)\n")
    assert (finding.line, finding.col, finding.code, finding.scenario) == (2, 9, "DK008", 8)
    assert finding.message("en").startswith("`torch.load` without `map_location`")
    assert "解决方法" in finding.message("zh") and "map_location" in finding.message("zh")


def test_noqa():
    assert codes_in("s = torch.load(p)  # noqa: DK008\n") == []
    assert codes_in("s = torch.load(p)  # noqa\n") == []
    assert codes_in("s = torch.load(p)  # noqa: DK003, E501\n") == ["DK008"]
    assert codes_in("s = torch.load(p)  # NOQA:DK002,DK008\n") == []


def test_select_and_ignore():
    assert select_codes() == DEFAULT_CODES
    assert select_codes(["DK008"]) == {"DK008"}
    assert select_codes(["DK9"]) == {"DK901", "DK902"}
    assert select_codes(["DK"]) == DEFAULT_CODES
    assert select_codes(None, ["DK008", "DK2"]) == DEFAULT_CODES - {"DK008", "DK201", "DK214"}
    with pytest.raises(ValueError, match="matches no devicelint rule"):
        select_codes(["DK777"])


def test_syntax_error_raises():
    with pytest.raises(SyntaxError):
        lint_source("def broken(:\n")


def _code_fields(kind):
    return {"outputs": [], "execution_count": None} if kind == "code" else {}


def _notebook(tmp_path, cells):
    nb = {
        "cells": [
            {
                "cell_type": kind,
                "metadata": {},
                "source": source,
                **({"outputs": []} if kind == "code" else {}),
            }
            for kind, source in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_notebook_cells_are_one_program(tmp_path):
    path = _notebook(
        tmp_path,
        [
            ("markdown", "# title"),
            ("code", "%matplotlib inline\nimport torch\nmodel = Net().to(device)\n"),
            ("code", "def worker(rank):\n    pass\n"),
            ("code", "def broken(:\n"),
            ("code", ["x = torch.ones(3)\n", "x.to(device)\n", "mp.spawn(worker, nprocs=2)\n"]),
        ],
    )
    findings, errors = lint_notebook(str(path))
    assert [(f.cell, f.line, f.code) for f in findings] == [(5, 2, "DK002"), (5, 3, "DK214")]
    assert [(e.cell, e.line) for e in errors] == [(4, 1)]


def test_lint_does_not_import_torch(tmp_path):
    """The linter's modules run where torch is not importable (as in the browser)."""
    import subprocess
    import sys
    from pathlib import Path

    import devicekit

    src = Path(devicekit.__file__).parent
    script = textwrap.dedent(
        f"""
        import sys, types
        sys.modules["torch"] = None  # `import torch` now raises ImportError
        package = types.ModuleType("devicekit")
        package.__path__ = [{str(src)!r}]
        sys.modules["devicekit"] = package
        from devicekit.lint import lint_source
        print([f.code for f in lint_source("x = torch.zeros(3)\\nx.to(dev)\\n")])
        assert sys.modules["torch"] is None
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['DK002']"
