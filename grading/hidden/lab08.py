"""Hidden judges of lab 08 (grading only, never shipped to students).

None: every property this lab's exercises state is judged by the public judge in `devicekit_labs.lab08`,
from values the probe plants and simple rules, with no reference answer to hide.
"""

from __future__ import annotations

from collections.abc import Callable

HIDDEN: dict[str, Callable[[dict], None]] = {}
