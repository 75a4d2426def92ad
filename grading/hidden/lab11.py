"""Hidden judges of lab 11 (grading only, never shipped to students).

None: exercise 1 is judged against the same model built on the target device from the same seed, exercise 2
by a stated rule (each rank's own device), exercise 3 against the digests the saving ranks reported. No
reference answer ships in `devicekit_labs.lab11`, so there is nothing to hide.
"""

from __future__ import annotations

from collections.abc import Callable

HIDDEN: dict[str, Callable[[dict], None]] = {}
