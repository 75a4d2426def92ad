"""Mutation cases for lab 09 (capstone). WRONG: (name, answer, hint substring in English), the taught bug
first; RIGHT: (name, answer), different right answers, among them the ones a GPU accepts although they look
suspicious: a metric kept on the host, an optimizer built before the model's move. A wrong answer that only a
second GPU reveals has "cuda:1" in its hint (tests/gpu skips it on a machine with one GPU).

The script answers are the lab's fixed script (read from `solutions/09-capstone.ipynb`, so they stay the code
the notebook teaches) with one edit each, executed in a namespace of its own as a notebook cell would be.
"""

from __future__ import annotations

import nbformat
import torch

from course_tools.paths import SOLUTIONS
from mutations import untouched

LAB = "09-capstone"


# --- audit -------------------------------------------------------------------------------------------------


def audit_model_only(state, device):
    """The taught bug: model.to() thinking, only the model is looked at."""
    model = state["model"]
    return [
        f"model.{n}" for n, t in [*model.named_parameters(), *model.named_buffers()] if t.device != device
    ]


def audit_flags_cpu(state, device):
    """Flags CPU tensors instead of tensors off `device`: right only when `device` is an accelerator."""
    found = []
    model, loss_fn = state["model"], state["loss_fn"]
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if tensor.is_cpu:
            found.append(f"model.{name}")
    for name, tensor in loss_fn.named_buffers():
        if tensor.is_cpu:
            found.append(f"loss_fn.{name}")
    for index, slot in enumerate(state["optimizer"].state.values()):
        for key, tensor in slot.items():
            if key != "step" and isinstance(tensor, torch.Tensor) and tensor.is_cpu:
                found.append(f"optimizer.state[{index}][{key!r}]")
    for name, tensor in vars(state["metric"]).items():
        if isinstance(tensor, torch.Tensor) and tensor.is_cpu:
            found.append(f"metric.{name}")
    return found


def audit_device_type(state, device):
    """Compares device types only: cuda:0 and cuda:1 look the same to it."""
    found = []
    model, loss_fn = state["model"], state["loss_fn"]
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if tensor.device.type != device.type:
            found.append(f"model.{name}")
    for name, tensor in loss_fn.named_buffers():
        if tensor.device.type != device.type:
            found.append(f"loss_fn.{name}")
    for index, slot in enumerate(state["optimizer"].state.values()):
        for key, tensor in slot.items():
            if key != "step" and isinstance(tensor, torch.Tensor) and tensor.device.type != device.type:
                found.append(f"optimizer.state[{index}][{key!r}]")
    for name, tensor in vars(state["metric"]).items():
        if isinstance(tensor, torch.Tensor) and tensor.device.type != device.type:
            found.append(f"metric.{name}")
    return found


def audit_exp_avg_only(state, device):
    found = []
    model, loss_fn = state["model"], state["loss_fn"]
    for name, tensor in [*model.named_parameters(), *model.named_buffers(), *loss_fn.named_buffers()]:
        if tensor.device != device:
            found.append(name)
    for index, slot in enumerate(state["optimizer"].state.values()):
        if slot["exp_avg"].device != device:
            found.append(f"optimizer.state[{index}]['exp_avg']")
    for name, tensor in vars(state["metric"]).items():
        if isinstance(tensor, torch.Tensor) and tensor.device != device:
            found.append(f"metric.{name}")
    return found


def audit_including_step(state, device):
    found = audit_ok(state, device)
    for index, slot in enumerate(state["optimizer"].state.values()):
        if slot["step"].device != device:
            found.append(f"optimizer.state[{index}]['step']")
    return found


def audit_one_name(state, device):
    return ["misplaced"] * len(audit_ok(state, device))


def audit_count(state, device):
    return len(audit_ok(state, device))


def audit_ok(state, device):
    found = []
    model, loss_fn = state["model"], state["loss_fn"]
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if tensor.device != device:
            found.append(f"model.{name}")
    for name, tensor in loss_fn.named_buffers():
        if tensor.device != device:
            found.append(f"loss_fn.{name}")
    for index, slot in enumerate(state["optimizer"].state.values()):
        for key, tensor in slot.items():
            if key != "step" and isinstance(tensor, torch.Tensor) and tensor.device != device:
                found.append(f"optimizer.state[{index}][{key!r}]")
    for name, tensor in vars(state["metric"]).items():
        if isinstance(tensor, torch.Tensor) and tensor.device != device:
            found.append(f"metric.{name}")
    return found


def audit_without(part: str):
    """`audit_ok` leaving out one part of the state: ``optimizer``, ``metric`` or ``loss_fn``."""

    def misplaced(state, device):
        return [name for name in audit_ok(state, device) if not name.startswith(part)]

    return misplaced


def audit_nothing(state, device):
    return []


def audit_solution():
    """The solution notebook's own ``misplaced``, run as its cell."""
    (cell,) = [c for c in cells() if c.cell_type == "code" and c.source.lstrip().startswith("def misplaced(")]
    namespace: dict = {"torch": torch}
    exec(cell.source, namespace)
    return namespace["misplaced"]


def audit_by_state_dicts(state, device):
    """Walks the state dicts instead: the same tensors, other names."""
    tensors = {f"model/{k}": v for k, v in state["model"].state_dict(keep_vars=True).items()}
    tensors.update({f"loss/{k}": v for k, v in state["loss_fn"].state_dict().items()})
    for pid, slot in state["optimizer"].state_dict()["state"].items():
        tensors.update({f"opt/{pid}/{k}": v for k, v in slot.items() if k != "step"})
    tensors.update({f"metric/{k}": v for k, v in vars(state["metric"]).items()})
    return [name for name, t in tensors.items() if isinstance(t, torch.Tensor) and t.device != device]


# --- fixed-script ------------------------------------------------------------------------------------------


def cells(lang: str = "en") -> list:
    """The cells of the solution notebook in ``lang`` ("en" or "zh")."""
    return nbformat.read(SOLUTIONS / f"{LAB}{'.zh' if lang == 'zh' else ''}.ipynb", as_version=4).cells


def fixed_script(lang: str = "en") -> str:
    """The solution's fixed training script, without its solution markers and hint lines."""
    (cell,) = [c for c in cells(lang) if "### BEGIN SOLUTION" in c.source and "train_and_resume" in c.source]
    body = cell.source.split("### BEGIN SOLUTION\n", 1)[1].split("### END SOLUTION", 1)[0]
    return "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("### HINT:"))


def broken_script(lang: str = "en") -> str:
    """The broken training script the lab hands the learner."""
    (cell,) = [c for c in cells(lang) if c.cell_type == "code" and c.source.startswith("# train.py")]
    return cell.source


def train_and_resume(source: str, *edits: tuple[str, str]):
    """`train_and_resume` of ``source`` with each (old, new) edit made exactly once, run as its own cell."""
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    namespace: dict = {"__name__": "lab09_answer"}
    exec(compile(source, "train.py", "exec"), namespace)
    return namespace["train_and_resume"]


FIXED = fixed_script()

WRONG = {
    "audit": [
        ("only the model", audit_model_only, "Look at every tensor the state holds"),
        ("t.is_cpu instead of t.device != device", audit_flags_cpu, "on a correct state"),
        ("only exp_avg of the optimizer state", audit_exp_avg_only, "one optimizer exp_avg_sq tensor"),
        ("Adam's step flagged", audit_including_step, "`step` counter"),
        ("one name for every tensor", audit_one_name, "different names"),
        ("a count, not names", audit_count, "list of strings"),
        (
            "device types compared, not devices (cuda:0 == cuda:1)",
            audit_device_type,
            "cuda:0 and cuda:1 are two different GPUs",
        ),
        ("the optimizer's state left out", audit_without("optimizer"), "one optimizer exp_avg tensor"),
        ("the metric's state left out", audit_without("metric"), "one metric state tensor"),
        ("the loss's weights left out", audit_without("loss_fn"), "one loss weight tensor"),
        ("nothing ever flagged", audit_nothing, "your audit reports 0 tensor(s)"),
        ("untouched stub", untouched, "not done yet"),
    ],
    "fixed-script": [
        ("the broken script as given", train_and_resume(broken_script()), "index is on cpu"),
        (
            "batches moved with .cuda() (always cuda:0)",
            train_and_resume(
                FIXED,
                (
                    'tokens = batch["tokens"].to(device)',
                    'tokens = batch["tokens"].cuda() if device.type == "cuda" else batch["tokens"]',
                ),
                (
                    'labels = batch["labels"].to(device)',
                    'labels = batch["labels"].cuda() if device.type == "cuda" else batch["labels"]',
                ),
            ),
            "went to cuda:0 although the script was given cuda:1",
        ),
        (
            'device rebuilt from its type: torch.device("cuda") drops the index',
            train_and_resume(
                FIXED,
                (
                    "    device = torch.device(device)\n    state = state or build(device)\n",
                    "    device = torch.device(torch.device(device).type)\n"
                    "    state = state or build(device)\n",
                ),
            ),
            "went to cuda:0 although the script was given cuda:1",
        ),
        (
            "loss from bf16 logits (no .float())",
            train_and_resume(
                FIXED, ("loss = loss_fn(logits.float(), labels)", "loss = loss_fn(logits, labels)")
            ),
            "expected scalar type",
        ),
        (
            "a CPU generator drawing for the device",
            train_and_resume(
                FIXED,
                ("def make_batch(step):", "def make_batch(step, device):"),
                (
                    "tokens = torch.randint(0, VOCAB, (BATCH, SEQ_LEN), generator=generator)",
                    "tokens = torch.randint(0, VOCAB, (BATCH, SEQ_LEN), generator=generator, device=device)",
                ),
                ("batch = make_batch(step)", "batch = make_batch(step, device)"),
            ),
            "device type for generator",  # CUDA's own message: a generator belongs where it draws
        ),
        (
            "torch.load without map_location",
            train_and_resume(FIXED, ('torch.load(path, map_location="cpu")', "torch.load(path)")),
            "Attempting to deserialize",
        ),
        (
            "metric state not moved when loaded",
            train_and_resume(
                FIXED,
                ('self.hits = state["hits"].to(self.hits.device)', 'self.hits = state["hits"]'),
                ('self.seen = state["seen"].to(self.seen.device)', 'self.seen = state["seen"]'),
            ),
            "different from other tensors on cpu",
        ),
        (
            "scheduler state not restored",
            train_and_resume(
                FIXED, ('    state["scheduler"].load_state_dict(checkpoint["scheduler"])\n', "")
            ),
            "scheduler does not continue",
        ),
        (
            "class weights on the CPU",
            train_and_resume(
                FIXED,
                (
                    "class_weights = torch.tensor([1.0, 2.0, 2.0], device=device)",
                    "class_weights = torch.tensor([1.0, 2.0, 2.0])",
                ),
            ),
            "weight is on cpu",
        ),
    ],
}

RIGHT = {
    "audit": [
        ("the lesson's walk", audit_ok),
        ("walks the state dicts", audit_by_state_dicts),
        ("the solution notebook's misplaced", audit_solution()),
    ],
    "fixed-script": [
        ("the fixed script", train_and_resume(FIXED)),
        (
            "logs loss.item() and the metric every step",
            train_and_resume(
                FIXED,
                (
                    "        losses.append(loss.detach())\n",
                    "        losses.append(loss.detach())\n"
                    '        state.setdefault("log", []).append('
                    '(step, loss.item(), state["metric"].compute()))\n',
                ),
            ),
        ),
        (
            "metric read with .item()",
            train_and_resume(
                FIXED,
                (
                    "hits, seen = self.hits.cpu().numpy(), self.seen.cpu().numpy()\n"
                    "        return float(hits.sum() / max(seen.sum(), 1.0))",
                    "return self.hits.sum().item() / max(self.seen.sum().item(), 1.0)",
                ),
            ),
        ),
        (
            "a metric kept on the host and fed .cpu() copies",
            train_and_resume(
                FIXED,
                ("    metric = RunningAccuracy(device)", '    metric = RunningAccuracy("cpu")'),
                (
                    'state["metric"].update(logits.detach(), labels)',
                    'state["metric"].update(logits.detach().cpu(), labels.cpu())',
                ),
            ),
        ),
        (
            "the optimizer built before the model's move, its state loaded after it",
            train_and_resume(
                FIXED,
                (
                    "    model = Classifier().to(device)\n",
                    "    model = Classifier()\n",
                ),
                (
                    "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)\n",
                    "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)\n"
                    "    model.to(device)  # Module.to keeps the parameter objects the optimizer holds\n",
                ),
            ),
        ),
        (
            "resume built on the CPU, the model moved, then the optimizer's state loaded",
            train_and_resume(
                FIXED,
                (
                    '    state = build(device)\n    checkpoint = torch.load(path, map_location="cpu")'
                    "  # load_state_dict moves each part to its device\n"
                    '    state["model"].load_state_dict(checkpoint["model"])\n',
                    '    state = build("cpu")\n    checkpoint = torch.load(path, map_location="cpu")\n'
                    '    state["model"].load_state_dict(checkpoint["model"])\n'
                    '    state["model"].to(device)  # the optimizer still holds these parameters\n'
                    '    state["loss_fn"].to(device)\n'
                    '    state["metric"] = RunningAccuracy(device)\n',
                ),
            ),
        ),
        (
            "batches moved with non_blocking=True",
            train_and_resume(
                FIXED,
                ('batch["tokens"].to(device)', 'batch["tokens"].to(device, non_blocking=True)'),
                ('batch["labels"].to(device)', 'batch["labels"].to(device, non_blocking=True)'),
            ),
        ),
    ],
}
