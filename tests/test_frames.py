"""devicekit.frames: the learner's own line of a device error, not PyTorch's or devicekit's."""

from __future__ import annotations

import dataclasses

import torch

from devicekit import strict_devices
from devicekit.frames import is_own_file, last_own_frame, own_frames
from devicekit.ipython import where_text


def _mix():
    a = torch.ones(2, device="meta")
    b = torch.ones(2)
    return a @ b  # the learner's line


def test_the_last_own_frame_is_the_learners_line_not_strict_or_torch():
    try:
        with strict_devices():
            _mix()
    except Exception as exc:  # whatever strict raised
        frame, frames = last_own_frame(exc), own_frames(exc)
    assert frame is not None and frame.name == "_mix" and "a @ b" in frame.line
    assert frames and all(is_own_file(f.filename) for f in frames)


def test_generated_code_and_libraries_are_not_own():
    @dataclasses.dataclass
    class Batch:
        x: int

    init_file = Batch.__init__.__code__.co_filename
    assert not is_own_file(init_file), init_file
    assert not is_own_file(torch.nn.modules.module.__file__)
    assert not is_own_file(dataclasses.__file__)
    assert is_own_file("/tmp/ipykernel_4242/1234567.py"), "a notebook cell is the learner's"
    assert is_own_file(__file__)


def test_the_explanation_names_the_cell_line_in_both_languages():
    try:
        _mix()
    except Exception as exc:  # meta checks the mix itself
        en, zh = where_text(exc)
    assert "In your code" in en and "a @ b" in en
    assert "你的代码" in zh and "第" in zh
