"""devicelint: find device bugs in PyTorch code before it runs.

A static linter on the standard library's `ast`: it never imports torch, so it is fast and runs wherever
Python runs (a CPU laptop, CI, the browser). Each rule (`DKnnn`, see `RULES`) finds one of the device bugs
of the course's scenario list, and stays silent when the code does not show enough to be sure.

    from devicekit.lint import lint_source
    for finding in lint_source("x.to(device)\\n", path="<cell>"):
        print(finding.code, finding.message())

Command line: `devicekit-lint PATH...` or `python -m devicekit.lint PATH...`.
"""

from devicekit.lint.core import Finding
from devicekit.lint.engine import LintError, lint_file, lint_notebook, lint_paths, lint_source
from devicekit.lint.rules import DEFAULT_CODES, RULES, Rule, get_rule, select_codes

__all__ = [
    "DEFAULT_CODES",
    "Finding",
    "LintError",
    "RULES",
    "Rule",
    "get_rule",
    "lint_file",
    "lint_notebook",
    "lint_paths",
    "lint_source",
    "select_codes",
]
