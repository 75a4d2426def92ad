"""Round 3 of issue 43: the set-up shapes of scenarios 9, 13 and 14 that sit in two files or behind a
lookup: optimizer state loaded by a helper of another file before the model moves (DK009), DDP whose
process group starts in another file without any `set_device` (DK014), a torchvision model built by name
and wrapped with device ids while on the CPU (DK013). Each has a silent twin."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devicekit.lint import DEFAULT_CODES, lint_source
from devicekit.lint.engine import lint_paths


def project(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    found, errors = lint_paths([str(tmp_path)], DEFAULT_CODES)
    assert errors == []
    return sorted((Path(f.path).name, f.line, f.code) for f in found)


HELPER = """
    import torch

    def load_epoch(path, model, optm):
        checkpoint = torch.load(path, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optm.load_state_dict(checkpoint["optim"])
    """
TRAIN = """
    import torch
    from utils import load_epoch

    def train(model, path, device):
        optm = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        load_epoch(path, model, optm)
        model.to(device)
    """


def test_optimizer_state_loaded_by_a_helper_of_another_file_before_the_move(tmp_path):
    assert project(tmp_path, {"utils.py": HELPER, "train.py": TRAIN}) == [("train.py", 7, "DK009")]


def test_a_helper_that_moves_the_state_too_is_silent(tmp_path):
    moving = HELPER.rstrip(" ") + (
        "        for state in optm.state.values():\n"
        "            for k, v in state.items():\n"
        "                state[k] = v.to(next(model.parameters()).device)\n"
    )
    assert project(tmp_path, {"utils.py": moving, "train.py": TRAIN}) == []


def test_loading_after_the_move_is_silent(tmp_path):
    after = TRAIN.replace(
        "load_epoch(path, model, optm)\n        model.to(device)",
        "model.to(device)\n        load_epoch(path, model, optm)",
    )
    assert project(tmp_path, {"utils.py": HELPER, "train.py": after}) == []


MAIN = """
    import os
    import torch.distributed as dist
    from trainer import Trainer

    def main(config):
        dist.init_process_group(backend="nccl")
        return Trainer(config)
    """
TRAINER = """
    import os
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))

    class Trainer:
        def __init__(self, model):
            self.model = model.to(f"cuda:{LOCAL_RANK}")
            self.wrapper = DDP(self.model, device_ids=[LOCAL_RANK])
    """


def test_ddp_whose_process_group_starts_in_another_file_without_set_device(tmp_path):
    assert project(tmp_path, {"main.py": MAIN, "trainer.py": TRAINER}) == [("trainer.py", 11, "DK014")]


def test_set_device_in_either_file_is_silent(tmp_path):
    fixed = TRAINER.replace(
        "        self.wrapper", "        torch.cuda.set_device(LOCAL_RANK)\n        self.wrapper"
    )
    assert project(tmp_path, {"main.py": MAIN, "trainer.py": fixed}) == []
    entry = MAIN.replace("import os", "import torch").replace(
        'dist.init_process_group(backend="nccl")',
        'torch.cuda.set_device(0)\n        dist.init_process_group(backend="nccl")',
    )
    assert project(tmp_path, {"main.py": entry, "trainer.py": TRAINER}) == []


def test_a_gloo_process_group_is_no_gpu_setup(tmp_path):
    gloo = MAIN.replace('backend="nccl"', 'backend="gloo"')
    assert project(tmp_path, {"main.py": gloo, "trainer.py": TRAINER}) == []


TORCHVISION = """
    import torch
    import torchvision.models as models

    def main_worker(gpu, args):
        model = models.__dict__[args.arch]()
        if args.gpu is not None:
            torch.cuda.set_device(args.gpu)
            # model.cuda(args.gpu)
            model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
        return model
    """


def test_a_torchvision_model_built_by_name_and_wrapped_on_the_cpu_is_found():
    found = lint_source(textwrap.dedent(TORCHVISION), "main.py", DEFAULT_CODES)
    assert [(f.line, f.code) for f in found] == [(10, "DK013")]
    fixed = TORCHVISION.replace("# model.cuda(args.gpu)", "model.cuda(args.gpu)")
    assert lint_source(textwrap.dedent(fixed), "main.py", DEFAULT_CODES) == []


def test_a_model_moved_before_the_load_and_again_after_is_silent(tmp_path):
    """yolov5's train.py (found on issue 43's code bases): `Model(cfg).to(device)`, then the resume, then
    `convert_sync_batchnorm(model).to(device)`: the state was cast to parameters already on the device."""
    again = TRAIN.replace("        optm = torch", "        model = model.to(device)\n        optm = torch")
    assert project(tmp_path, {"utils.py": HELPER, "train.py": again}) == []
