"""Lab 09 (capstone): the broken script is exactly the fixed one with the planted bugs listed here (each a
scenario from the course's list), every planted bug alone makes the self-check fail, the fixed script
passes, the audit check rejects typical wrong audits. (tests/test_grade.py grades every lab: the solution in
full, the untouched lab at zero.)"""

from __future__ import annotations

import re

import pytest
import torch
from mutations import lab09 as cases
from mutations import named

from check_outcome import expect
from devicekit_labs import exercises_for, run

LAB = cases.LAB

#: (scenario number in the course's list of 15, bug, fixed text, planted text). Together they turn the fixed
#: script into the broken one given to the learner; entries with the same bug name are one bug.
BUGS: list[tuple[int, str, str, str]] = [
    (
        4,
        "plain tensor attribute",
        'self.register_buffer("gate", torch.ones(dim))',
        "self.gate = torch.ones(dim)",
    ),
    (3, "arange in forward", "torch.arange(x.shape[1], device=x.device)", "torch.arange(x.shape[1])"),
    (
        5,
        "blocks in a list",
        "self.blocks = nn.ModuleList(PositionalMixer(dim) for _ in range(depth))",
        "self.blocks = [PositionalMixer(dim) for _ in range(depth)]",
    ),
    (7, "metric state on the CPU", "def __init__(self, device):", 'def __init__(self, device="cpu"):'),
    (7, "metric state on the CPU", "    metric = RunningAccuracy(device)", "    metric = RunningAccuracy()"),
    (
        10,
        "NumPy on the device",
        "hits, seen = self.hits.cpu().numpy(), self.seen.cpu().numpy()",
        "hits, seen = self.hits.numpy(), self.seen.numpy()",
    ),
    (
        9,
        "metric state left on the CPU after resume",
        'self.hits = state["hits"].to(self.hits.device)\n'
        '        self.seen = state["seen"].to(self.seen.device)',
        'self.hits = state["hits"]\n        self.seen = state["seen"]',
    ),
    (
        7,
        "loss weights on the CPU",
        "class_weights = torch.tensor([1.0, 2.0, 2.0], device=device)",
        "class_weights = torch.tensor([1.0, 2.0, 2.0])",
    ),
    (
        9,
        "resume built on the CPU, model moved after loading the optimizer",
        '    state = build(device)\n    checkpoint = torch.load(path, map_location="cpu")'
        "  # load_state_dict moves each part to its device\n"
        '    state["model"].load_state_dict(checkpoint["model"])\n'
        '    state["optimizer"].load_state_dict(checkpoint["optimizer"])',
        '    state = build("cpu")\n    checkpoint = torch.load(path, map_location="cpu")\n'
        '    state["model"].load_state_dict(checkpoint["model"])\n'
        '    state["optimizer"].load_state_dict(checkpoint["optimizer"])\n'
        '    state["model"].to(device)',
    ),
    (
        2,
        "x.to(device) as a statement",
        'tokens = batch["tokens"].to(device)\n',
        'tokens = batch["tokens"]\n        tokens.to(device)\n',
    ),
    (1, "labels never moved", 'labels = batch["labels"].to(device)', 'labels = batch["labels"]'),
    (
        6,
        "RNN hidden state on the CPU",
        "h0 = x.new_zeros(1, x.shape[0], x.shape[2])",
        "h0 = torch.zeros(1, x.shape[0], x.shape[2])",
    ),
]
BUG_NAMES = list(dict.fromkeys(name for _, name, _, _ in BUGS))


def _code(source: str) -> str:
    """Comments and docstrings removed: the twins translate them, the code is the same."""
    source = re.sub(r'"""[\s\S]*?"""', '""', source)
    return "\n".join(re.sub(r"\s*#.*$", "", line) for line in source.splitlines() if line.strip())


def _plant(source: str, bugs) -> str:
    for _, _, fixed, planted in bugs:
        assert source.count(fixed) == 1, fixed
        source = source.replace(fixed, planted)
    return source


def test_the_broken_script_is_the_fixed_one_with_the_listed_bugs():
    planted = _plant(cases.fixed_script(), BUGS)
    assert _code("# train.py\n" + planted) == _code(cases.broken_script())
    assert len({number for number, *_ in BUGS}) >= 6, "at least six different scenarios are planted"
    assert 120 <= len(cases.broken_script().splitlines()) <= 180, "about 150 lines"


def test_the_twins_share_the_code_of_both_scripts():
    assert _code(cases.broken_script("en")) == _code(cases.broken_script("zh"))
    assert _code(cases.fixed_script("en")) == _code(cases.fixed_script("zh"))


@pytest.mark.integration  # trains and resumes a model: seconds
@pytest.mark.parametrize(
    ("key", "answer", "hint"),
    named(
        cases,
        [
            ("fixed-script", "the fixed script"),
            ("fixed-script", "the broken script as given"),
            ("fixed-script", "scheduler state not restored"),
        ],
    ),
)
def test_the_fixed_script_passes_the_broken_one_and_a_forgotten_scheduler_fail(key, answer, hint):
    # StepLR(step_size=10) changes no loss within the check's steps: the check compares the scheduler itself
    expect(run(LAB, key, answer), hint)


@pytest.mark.integration  # trains and resumes a model: seconds
@pytest.mark.parametrize("bug", BUG_NAMES)
def test_each_planted_bug_alone_fails_the_check(bug):
    """Every bug is found by the check, also when it is the only one left."""
    result = run(
        LAB,
        "fixed-script",
        cases.train_and_resume(_plant(cases.fixed_script(), [b for b in BUGS if b[1] == bug])),
    )
    assert not result.passed, f"{bug!r} planted alone passed the check"
    assert any("\u4e00" <= ch <= "\u9fff" for ch in result.zh)


@pytest.mark.parametrize(
    ("key", "answer", "hint"),
    named(
        cases,
        [
            ("audit", "the solution notebook's misplaced"),
            ("audit", "the optimizer's state left out"),
            ("audit", "the metric's state left out"),
            ("audit", "the loss's weights left out"),
            ("audit", "Adam's step flagged"),
            ("audit", "a count, not names"),
            ("audit", "nothing ever flagged"),
            ("audit", "untouched stub"),
        ],
    ),
)
def test_audit(key, answer, hint):
    expect(run(LAB, key, answer), hint)


def test_two_exercises_in_order():
    assert [e.key for e in exercises_for(LAB)] == ["audit", "fixed-script"]


# --- the two-part check: observations are plain data, the judge decides from them alone -------------------


def _through_bytes(observations):
    import io

    buffer = io.BytesIO()
    torch.save(observations, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.integration  # runs each check, one trains and resumes a model: seconds
@pytest.mark.parametrize("key", [e.key for e in exercises_for(LAB)])
def test_observations_survive_bytes_and_the_judge_alone_decides(key):
    """As the grader does it: the probe's data crosses a process boundary as bytes, the judge runs apart."""
    from devicekit_labs import Fail

    (ex,) = [e for e in exercises_for(LAB) if e.key == key]
    assert ex.probe is not None and ex.judge is not None, "a two-part (judged) check"
    ex.judge(_through_bytes(ex.probe(cases.RIGHT[key][0][1])))
    _name, wrong, hint = cases.WRONG[key][0]
    with pytest.raises(Fail) as caught:
        ex.judge(_through_bytes(ex.probe(wrong)))
    assert hint in caught.value.en
