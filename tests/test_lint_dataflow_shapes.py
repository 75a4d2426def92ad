"""The place analysis on the shapes of real code it reaches since its second round (issue 43): each shape
that is found has a fixed twin that stays silent, and each inference step shows in what a name holds."""

from __future__ import annotations

import textwrap

import pytest

from devicekit.lint import DEFAULT_CODES, lint_source
from devicekit.lint.dataflow import places
from devicekit.lint.engine import lint_notebook, lint_paths


def where(source: str, function: str | None = None) -> dict[str, str]:
    """name -> "kind@place" at the end of the function (or the top level)."""
    env = places(textwrap.dedent(source), function)
    return {name: f"{value.kind}@{value.place.kind}" for name, value in env.items()}


def findings(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_source(textwrap.dedent(source), "train.py", DEFAULT_CODES)]


# --- inference steps ------------------------------------------------------------------------------


def test_a_device_chosen_by_a_conditional_is_the_accelerator():
    env = where('device = "cuda" if torch.cuda.is_available() else "cpu"\nmodel = Net().to(device)\n')
    assert env["device"] == "device@device"
    assert env["model"] == "moved@device"


def test_a_conditional_between_two_cpu_strings_is_no_accelerator():
    assert where('device = "cpu" if quick else "cpu"\n')["device"] == "device@host"


def test_a_torchvision_dataset_sample_is_a_cpu_batch():
    env = where(
        """
        from torchvision import datasets
        data = datasets.MNIST("data", transform=ToTensor())
        x, y = data[0]
        """
    )
    assert env["data"] == "dataset@host"
    assert env["x"] == "batch@host"


def test_next_of_a_loader_named_attribute_is_a_batch():
    env = where(
        """
        class Trainer:
            def validate(self):
                x, y = next(iter(self.valid_dataloader))
        """,
        "Trainer.validate",
    )
    assert env["x"] == env["y"] == "batch@host"


def test_a_helper_called_from_init_sets_attributes():
    env = where(
        """
        class Net(nn.Module):
            pass

        class Trainer:
            def __init__(self, options):
                self.build()

            def build(self):
                self.net = Net()
                self.net.to(self.device)

            def fit(self):
                pass
        """,
        "Trainer.fit",
    )
    assert env["self.net"] == "module@device"


def test_a_cpu_factory_on_one_path_is_kept_as_a_fallback():
    env = places(
        textwrap.dedent(
            """
            def f(w):
                w = torch.ones(3) if w is None else w
            """
        ),
        "f",
    )
    assert env["w"].place.kind == "unknown"
    assert env["w"].fallback is not None and env["w"].fallback.place.kind == "host"


def test_a_test_about_devices_keeps_no_fallback():
    env = places(
        textwrap.dedent(
            """
            def f(w):
                w = torch.ones(3) if w.device.type == "cpu" else w
            """
        ),
        "f",
    )
    assert "w" not in env or env["w"].fallback is None


# --- found, and the fixed twin silent --------------------------------------------------------------

PAIRS = {
    "a dataset sample fed to a moved model (DK001)": (
        """
        from torchvision import datasets
        device = "cuda" if torch.cuda.is_available() else "cpu"
        test_data = datasets.FashionMNIST(root="data", train=False, transform=ToTensor())
        model = Net().to(device)
        x, y = test_data[0][0], test_data[0][1]
        pred = model(x)
        """,
        "x = x.to(device)\n",
        [(7, "DK001")],
    ),
    "a validation batch from next(iter(...)) (DK001)": (
        """
        from core import DEVICE
        class Trainer:
            def __init__(self, model, valid_dataloader):
                self.model = model.to(DEVICE)
                self.valid_dataloader = valid_dataloader

            def validation(self):
                x, y = next(iter(self.valid_dataloader))
                out = self.model(x)
        """,
        "x = x.to(DEVICE)\n",
        [(10, "DK001")],
    ),
    "np.sum over losses of a model moved by a bare .cuda() (DK010)": (
        """
        import numpy as np
        import losses
        from mprnet import MPRNet
        model_restoration = MPRNet()
        model_restoration.cuda()
        criterion = losses.CharbonnierLoss()
        for i, data in enumerate(train_loader):
            target, inp = data[0].cuda(), data[1].cuda()
            restored = model_restoration(inp)
            loss = np.sum([criterion(restored[j], target) for j in range(3)])
        """,
        "loss = loss.item()\n",
        [(11, "DK010")],
    ),
    "DataParallel around a model never moved, with several device ids (DK013)": (
        """
        def build():
            net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
            return net

        def train(net, devices):
            net = nn.DataParallel(net, device_ids=devices)
            for X, y in train_iter:
                out = net(X.to(devices[0]))

        net = build()
        train(net, [0, 1])
        """,
        "pass\n",
        [(7, "DK013")],
    ),
    "DDP given device_ids around a CPU module (DK013)": (
        """
        def main_worker(gpu):
            model = nn.Linear(4, 2)
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
        """,
        "pass\n",
        [(4, "DK013")],
    ),
    "a hidden state for a model a trainer holds (DK006)": (
        """
        class CPC(nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = nn.GRU(8, 8)

            def forward(self, x, hidden):
                return self.gru(x, hidden)

        class Model:
            def __init__(self, options):
                self.set_cpc()

            def set_cpc(self):
                self.cpc = CPC()
                self.cpc.to(self.device)

            def fit(self, train_loader):
                for xb in train_loader:
                    xb = xb.to(self.device)
                    hidden = torch.zeros(2, 4, 8)
                    out, hidden = self.cpc(xb, hidden)
        """,
        "pass\n",
        [(21, "DK006")],
    ),
    "a default made on the CPU when the caller gives none (DK003)": (
        """
        class Metric(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("task_weights", torch.ones(1, 3))

            def update(self, preds, weights=None):
                weights = torch.ones(preds.shape[0]) if weights is None else weights
                return preds * weights.view(-1, 1) * self.task_weights
        """,
        "pass\n",
        [(8, "DK003")],
    ),
}

FIXES = {
    "a dataset sample fed to a moved model (DK001)": (
        "x, y = test_data[0][0], test_data[0][1]",
        "x, y = test_data[0][0].to(device), test_data[0][1]",
    ),
    "a validation batch from next(iter(...)) (DK001)": (
        "x, y = next(iter(self.valid_dataloader))",
        "x, y = [t.to(DEVICE) for t in next(iter(self.valid_dataloader))]",
    ),
    "np.sum over losses of a model moved by a bare .cuda() (DK010)": ("np.sum(", "sum("),
    "DataParallel around a model never moved, with several device ids (DK013)": (
        "net = nn.DataParallel(net, device_ids=devices)",
        "net = nn.DataParallel(net.to(devices[0]), device_ids=devices)",
    ),
    "DDP given device_ids around a CPU module (DK013)": (
        "model = nn.Linear(4, 2)",
        "model = nn.Linear(4, 2).cuda(gpu)",
    ),
    "a hidden state for a model a trainer holds (DK006)": (
        "hidden = torch.zeros(2, 4, 8)",
        "hidden = torch.zeros(2, 4, 8, device=self.device)",
    ),
    "a default made on the CPU when the caller gives none (DK003)": (
        "torch.ones(preds.shape[0])",
        "torch.ones(preds.shape[0], device=preds.device)",
    ),
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_found(name):
    source, _, expected = PAIRS[name]
    assert findings(source) == expected


@pytest.mark.parametrize("name", list(PAIRS))
def test_fixed_twin_silent(name):
    source = textwrap.dedent(PAIRS[name][0])
    old, new = FIXES[name]
    assert old in source
    assert findings(source.replace(old, new)) == []


SILENT = {
    "DataParallel with one device id moves the module itself": """
        model = nn.Linear(2, 2)
        model = nn.DataParallel(model, device_ids=[0])
        out = model(x.cuda())
    """,
    "DataParallel, then the model moved before it runs": """
        model = nn.Linear(2, 2)
        model = nn.DataParallel(model)
        model.to("cuda")
        out = model(x.cuda())
    """,
    "DDP without device_ids around a CPU module (gloo)": """
        model = nn.Linear(2, 2)
        model = torch.nn.parallel.DistributedDataParallel(model)
    """,
    "a CPU tensor moved on one path is no fallback": """
        class Loss(nn.Module):
            def __init__(self, w=None):
                super().__init__()
                self.w = None
                if w is not None:
                    self.w = torch.Tensor(w)  # noqa: DK004

            def forward(self, score, label):
                if self.w is not None:
                    self.w = self.w.to(score.device)
                    score = score * self.w
                return score.sum() / torch.sum(self.w * label)
    """,
    "a default chosen by a test about devices": """
        def f(x, w=None):
            x = x.cuda()
            w = torch.ones(3) if x.device.type == "cpu" else w
            return x * w
    """,
    "a model-named object from unread code moved without a model call": """
        from lib import Thing
        model_a = Thing()
        model_a.cuda()
        total = model_a.count + 1
    """,
}


@pytest.mark.parametrize("name", list(SILENT))
def test_silent(name):
    assert findings(SILENT[name]) == []


def test_a_trainer_in_another_file_holds_the_moved_model(tmp_path):
    """The model is moved in `Trainer.__init__` (trainer.py) to a constant of a third file; the
    validation batch is read with `next(iter(...))` and never moved."""
    (tmp_path / "constants.py").write_text('DEVICE = "cuda" if ok else "cpu"\n', encoding="utf-8")
    (tmp_path / "trainer.py").write_text(
        textwrap.dedent(
            """
            import torch
            from constants import DEVICE

            class Trainer:
                def __init__(self, model, valid_dataloader):
                    self.model = model.to(DEVICE)
                    self.valid_dataloader = valid_dataloader

                def validation(self):
                    with torch.no_grad():
                        inp, target = next(iter(self.valid_dataloader))
                        return self.model(inp)
            """
        ),
        encoding="utf-8",
    )
    found, errors = lint_paths([str(tmp_path)])
    assert errors == []
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in found] == [("trainer.py", 13, "DK001")]
    assert "self.valid_dataloader" in found[0].message() and "DEVICE" in found[0].message()
    assert "self.valid_dataloader" in found[0].message("zh")


def test_a_block_of_magics_in_a_notebook_parses(tmp_path):
    """`elif x:` followed only by `%magic` lines: the magics become `pass`, so the cell parses."""
    import json

    cell = "if a:\n    %pip install x\nelif b:\n    %load_ext tensorboard\nx = 1\n"
    notebook = {"cells": [{"cell_type": "code", "source": cell}], "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    assert lint_notebook(str(path)) == ([], [])
