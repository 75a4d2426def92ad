"""Lab 1 submissions for the grader's tests: a learner's own correct work, and each attack of issue 22 as
a notebook built from the released lab (``labs/01-devices.ipynb``). `CLASS` maps a file name to its maker.

Every attack is real code a learner could put in a cell; none of them may raise the score, and each one
the grader can see gets its flag.
"""

from __future__ import annotations

import nbformat

from course_tools.submissions import lab_notebook, solved_lab

LAB = "01-devices"

#: A learner's own right answers (not the published solution's code).
MINE = {
    "def move_batch(": (
        "def move_batch(x, device):\n"
        '    """Return x on `device`."""\n'
        "    result = x.to(device=device)  # a new tensor; x stays\n"
        "    return result"
    ),
    "def causal_mask(": (
        "def causal_mask(x):\n"
        "    n = x.size(1)\n"
        "    full = torch.ones((n, n), device=x.device)\n"
        "    return torch.tril(full).to(torch.bool)"
    ),
    "def my_predictions(": (
        "def my_predictions():\n"
        "    works, raises = False, True\n"
        "    return dict(a=works, b=raises, c=works, d=raises)"
    ),
}

#: The same answers, renamed and recommented: a copy that changed the surface only.
RENAMED = {
    "def move_batch(": (
        "def move_batch(tensor, where):\n"
        '    """Move it."""\n'
        "    out = tensor.to(device=where)  # moved copy\n"
        "    return out"
    ),
    "def causal_mask(": (
        "def causal_mask(inp):\n"
        "    size = inp.size(1)\n"
        "    ones = torch.ones((size, size), device=inp.device)  # square of ones\n"
        "    return torch.tril(ones).to(torch.bool)"
    ),
    "def my_predictions(": (
        "def my_predictions():\n    fine, bad = False, True\n    return dict(a=fine, b=bad, c=fine, d=bad)"
    ),
}

# The first attack: find solutions/ through the installed package's path and run its cells.
READS_SOLUTIONS = """import json, pathlib
import devicekit_labs
for _up in pathlib.Path(devicekit_labs.__file__).resolve().parents:
    for _nb in (_up / "solutions").glob("01-devices.ipynb"):
        for _cell in json.loads(_nb.read_text())["cells"]:
            _src = "".join(_cell["source"])
            if _cell["cell_type"] == "code" and "### BEGIN SOLUTION" in _src:
                exec(_src, globals())"""

# The second attack: forged "passed" rows written to any `--fd N` on an ancestor's command line
# (where the old replay process's result pipe was named) and to the grader's socket, whose address is in
# the notebook copy. (Writing to every descriptor would only wedge the kernel's own ZeroMQ sockets.)
FORGED = "FORGED-ROW ✓ passed"
FORGE_RESULTS = """import json, os, re, socket, struct
_rows = [{"key": k, "number": n, "status": "checked", "how": "judged", "passed": True,
          "en": "FORGED_TEXT", "zh": "FORGED_TEXT"}
         for n, k in enumerate(["move-batch", "causal-mask", "predict-raises"], 1)]
_forged = (json.dumps({"results": _rows}) + "\\n").encode()
_fds = set()
_pid = os.getpid()
for _ in range(4):
    try:
        _cmd = open(f"/proc/{_pid}/cmdline", "rb").read().decode(errors="replace")
        _fds |= {int(m) for m in re.findall(r"--fd\\x00(\\d+)", _cmd)}
        _pid = int(re.search(r"PPid:\\s+(\\d+)", open(f"/proc/{_pid}/status").read()).group(1))
    except Exception:
        break
for _fd in sorted(_fds):
    try:
        os.set_blocking(_fd, False)
        os.write(_fd, _forged)
    except OSError:
        pass
try:
    _text = open("notebook.ipynb").read()
    for _address in set(re.findall(r"[^'\\"\\\\]+\\.sock", _text)):
        _s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        _s.connect(_address)
        _s.sendall(struct.pack("!Q", len(_forged)) + _forged)
        _s.close()
except Exception:
    pass""".replace("FORGED_TEXT", FORGED)

IMPORTS_INTERNALS = """from devicekit_labs.lab01 import mix_cases, _raises
from devicekit.device import mismatch_device

def my_predictions():
    return {k: _raises(f) for k, f in mix_cases(mismatch_device()).items()}"""

FAKE_CHECK = 'print("✓ Exercise {n} passed.")'

WRONG = 'def my_predictions():\n    return {"a": True, "b": False, "c": True, "d": False}'

#: An answer that never returns. It sleeps rather than spins (the probe's timer signal stops both alike), so
#: its wait costs the machine no CPU; test_grade_stops.py grades it in a run of its own, with a short
#: --timeout.
HANG = "def move_batch(x, device):\n    import time\n    while True:\n        time.sleep(0.1)"


def _index(nb: nbformat.NotebookNode, text: str) -> int:
    found = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and text in c.source]
    assert found, f"no code cell contains {text!r}"
    return found[0]


def with_answers(answers: dict[str, str], lang: str = "en") -> nbformat.NotebookNode:
    nb = lab_notebook(LAB, lang)
    for start, source in answers.items():
        nb.cells[_index(nb, start)].source = source
    return nb


def with_cell(nb: nbformat.NotebookNode, after: str, source: str) -> nbformat.NotebookNode:
    nb.cells.insert(_index(nb, after) + 1, nbformat.v4.new_code_cell(source))
    return nb


def fake_checks() -> nbformat.NotebookNode:
    nb = lab_notebook(LAB)
    for n, key in enumerate(["move-batch", "causal-mask", "predict-raises"], 1):
        nb.cells[_index(nb, f'"{key}"')].source = FAKE_CHECK.format(n=n)
    return nb


def deleted_checks() -> nbformat.NotebookNode:
    nb = with_answers(MINE)
    nb.cells = [c for c in nb.cells if not (c.cell_type == "code" and c.source.startswith("check("))]
    return nb


CLASS = {
    "alice-mine.ipynb": lambda: with_answers(MINE),
    "carol-twin.ipynb": lambda: with_answers(MINE),  # byte-identical to alice's
    "dan-renamed.ipynb": lambda: with_answers(RENAMED),
    "erin-copied-solution.ipynb": lambda: solved_lab(LAB),  # the solution without its markers
    "frank-reads-solutions.ipynb": lambda: with_cell(lab_notebook(LAB), "my_predictions)", READS_SOLUTIONS),
    "grace-forges-results.ipynb": lambda: with_cell(lab_notebook(LAB), "my_predictions)", FORGE_RESULTS),
    "heidi-imports-internals.ipynb": lambda: with_cell(
        lab_notebook(LAB), "my_predictions)", IMPORTS_INTERNALS
    ),
    "ivan-fake-checks.ipynb": fake_checks,
    "judy-deleted-checks.ipynb": deleted_checks,
    "nina-wrong-predictions.ipynb": lambda: with_answers({**MINE, "def my_predictions(": WRONG}),
}
