"""Round 3 of issue 43: DK001, DK002, DK010 and DK201 are questions to the device-flow analysis only
(`flow.py` no longer finds them by surface patterns). Each inference the analysis gained for them has a
found case and a silent twin, and shows in what a name holds."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from devicekit.lint import DEFAULT_CODES, lint_source
from devicekit.lint.core import Context
from devicekit.lint.dataflow import places
from devicekit.lint.flow import check_flow
from devicekit.lint.rules import RULES

ROOT = Path(__file__).resolve().parents[1]


def where(source: str, function: str | None = None) -> dict[str, str]:
    env = places(textwrap.dedent(source), function)
    return {name: f"{value.kind}@{value.place.kind}" for name, value in env.items()}


def findings(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_source(textwrap.dedent(source), "train.py", DEFAULT_CODES)]


def test_flow_no_longer_reports_the_rules_of_the_place_analysis():
    source = textwrap.dedent(
        """
        model = Classifier()
        for x, y in loader:
            x = x.to(device)
            x.to(device)
            out = model(x)
            print(out.numpy(), (out == y))
        """
    )
    tree = ast.parse(source)
    ctx = Context(tree=tree, lines=source.splitlines(), codes=frozenset(RULES))
    check_flow(ctx)
    assert {code for _, _, code in ctx.found} <= {"DK007", "DK009", "DK013", "DK014"}
    assert {code for _, code in findings(source)} >= {"DK002", "DK201"}


# --- a loss checks its inputs' devices ----------------------------------------------------------------

LOSS = """
    def test(net, testloader):
        criterion = torch.nn.CrossEntropyLoss()
        for images, labels in testloader:
            outputs = net(images.to(DEVICE))
            loss = criterion(outputs, labels.to(DEVICE))
            correct = (outputs.argmax(1) == labels).sum()
    """


def test_an_output_that_met_a_moved_tensor_in_a_loss_is_on_its_device():
    env = where("criterion = torch.nn.MSELoss()\nout = f(x)\nloss = criterion(out, y.to(device))\n")
    assert env["out"] == "tensor@device"


def test_nothing_is_learnt_from_a_loss_with_a_cpu_operand():
    env = where("criterion = torch.nn.MSELoss()\nout = f(x)\nloss = criterion(out, torch.zeros(3))\n")
    assert "out" not in env


def test_labels_compared_with_an_output_that_met_moved_labels_are_found():
    assert findings(LOSS) == [(7, "DK001")]


def test_labels_moved_once_for_all_are_silent():
    fixed = LOSS.replace(
        "for images, labels in testloader:",
        "for images, labels in testloader:\n            labels = labels.to(DEVICE)",
    )
    assert findings(fixed) == []


# --- the output of a model the analysis cannot read ---------------------------------------------------


def test_a_model_called_with_a_device_tensor_gives_a_device_tensor():
    assert where("x = x.to(device)\npred = model(x)\n")["pred"] == "tensor@device"


def test_a_function_not_named_like_a_model_gives_nothing():
    assert "pred" not in where("x = x.to(device)\npred = postprocess(x)\n")


def test_numpy_on_an_unread_models_output_is_found_and_its_twin_silent():
    bad = "def run(model, x):\n    x = x.to(device)\n    pred = model(x)\n    return pred.detach().numpy()\n"
    assert findings(bad) == [(4, "DK010")]
    assert findings(bad.replace(".detach().numpy()", ".detach().cpu().numpy()")) == []


# --- a class neither defined nor imported -----------------------------------------------------------


def test_an_undefined_model_class_is_built_on_the_cpu():
    assert where("model = Classifier()\n")["model"] == "module@host"


def test_an_imported_or_star_imported_class_is_not_guessed():
    assert "model" not in where(
        "from sentence_transformers import SentenceTransformer\nmodel = SentenceTransformer('x')\n"
    )
    assert "model" not in where("from models import *\nmodel = Classifier()\n")
    assert "model" not in where("model = Classifier(device=device)\n")
    assert "model" not in where("model = Wrapper(backbone)\n")


def test_an_undefined_model_never_moved_is_found_and_its_moved_twin_silent():
    bad = """
        model = Classifier()
        for x, y in loader:
            logits = model(x.to(device))
        """
    assert findings(bad) == [(4, "DK201")]
    assert findings(bad.replace("Classifier()", "Classifier().to(device)")) == []


# --- an item of a batch -------------------------------------------------------------------------------


def test_a_batch_item_moved_as_a_statement_is_found_and_its_twin_silent():
    bad = """
        def train(device):
            batch = make_batch()
            tokens = batch["tokens"]
            tokens.to(device)
            batch["labels"].to(device)
        """
    assert findings(bad) == [(5, "DK002"), (6, "DK002")]
    fixed = bad.replace("tokens.to(device)", "tokens = tokens.to(device)").replace(
        'batch["labels"].to(device)', 'labels = batch["labels"].to(device)'
    )
    assert findings(fixed) == []


def test_a_model_under_a_key_is_no_batch_item():
    assert findings("def f(batch, device):\n    batch['model'].to(device)\n") == []


# --- one device model: the table of arguments that may stay on the CPU ---------------------------------


def test_the_simulator_and_the_linter_read_one_table():
    import devicekit.cpu_args as table

    source = (ROOT / "src" / "devicekit" / "device_rules.py").read_text(encoding="utf-8")
    assert "from .cpu_args import CPU_ARGS, INDEX_OPS" in source
    assert '"aten::_pack_padded_sequence"' not in source  # the table lives in one place
    assert table.cpu_positions("torch.nn.utils.rnn.pack_padded_sequence") == (
        frozenset({1}),
        frozenset({"lengths"}),
    )
    positions, _ = table.cpu_positions("torch.nn.functional.ctc_loss")
    assert positions == {1, 2, 3}  # input_lengths, target_lengths; targets: not judged
    assert table.cpu_positions("torch.nn.functional.nll_loss") is None


def test_ctc_lengths_on_the_cpu_are_silent_and_other_losses_still_judged():
    ctc = """
        def step(model, x, targets, device):
            log_probs = model(x.to(device)).log_softmax(2)
            input_lengths = torch.full((4,), 50)
            loss = F.ctc_loss(log_probs, targets, input_lengths, torch.tensor([9, 9, 9, 9]))
            loss2 = nn.CTCLoss()(log_probs, targets, input_lengths, torch.tensor([9, 9, 9, 9]))
        """
    assert findings("import torch.nn.functional as F\nimport torch.nn as nn\n" + textwrap.dedent(ctc)) == []
    nll = """
        import torch.nn.functional as F
        def step(model, x, device):
            out = model(x.to(device))
            weights = torch.ones(10)
            return F.nll_loss(out, weights)
        """
    assert findings(nll) == [(5, "DK003")]


# --- a module's own output and its loss attribute -------------------------------------------------------

STEP = """
    import torch
    import pytorch_lightning as pl

    class NPairs(pl.LightningModule):
        def training_step(self, batch, batch_idx):
            x1, x2 = batch["x1"], batch["x2"]
            predict = self(x1, x2)
            target = torch.arange(x1.size()[0])
            loss = self.loss_fn(predict, target)
            return {"loss": loss}
    """


def test_a_modules_own_output_is_on_its_device():
    assert where(STEP, "NPairs.training_step")["predict"] == "tensor@input"


def test_a_cpu_target_given_to_the_modules_loss_with_its_output_is_found_and_its_twin_silent():
    assert findings(STEP) == [(9, "DK003")]
    assert (
        findings(STEP.replace("torch.arange(x1.size()[0])", "torch.arange(x1.size()[0], device=self.device)"))
        == []
    )


def test_an_attribute_not_named_like_a_loss_compares_nothing():
    """`self.score` set in `__init__` from code not read: neither a loss by its name nor a submodule a base
    class set."""
    scored = STEP.replace("self.loss_fn(", "self.score(").replace(
        "    def training_step",
        "    def __init__(self, score):\n            super().__init__()\n"
        "            self.score = score\n\n        def training_step",
    )
    assert findings(scored) == []


INHERITED = """
    import torch
    from torch import nn

    class Block(nn.Module):
        def forward(self, x):
            pos = torch.arange(x.size(1))
            return x + self.emb(pos)
    """


def test_a_submodule_set_by_a_base_class_is_on_the_modules_device():
    assert findings(INHERITED) == [(7, "DK003")]
    assert (
        findings(INHERITED.replace("torch.arange(x.size(1))", "torch.arange(x.size(1), device=x.device)"))
        == []
    )


def test_module_methods_and_attributes_the_class_sets_are_no_inherited_submodules():
    assert findings(INHERITED.replace("self.emb(pos)", "self.log('pos', pos)")) == []
    assert findings(INHERITED.replace("self.emb(pos)", "self.register_buffer('pos', pos)")) == []


def test_a_helper_method_that_makes_a_cpu_mask_is_followed_without_known_inputs():
    source = """
        import torch
        from torch import nn

        class Attn(nn.Module):
            def forward(self, x):
                return x.masked_fill(self.mask(x.size(1)), 0)
            def mask(self, n):
                return torch.triu(torch.ones(n, n), diagonal=1).bool()
        """
    assert findings(source) == [(9, "DK003")]
    assert findings(source.replace("torch.ones(n, n)", "torch.ones(n, n, device=self.device)")) == []
