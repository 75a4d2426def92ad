"""Hidden judges of lab 11 (grading only, never shipped to students).

None: exercise 1 is judged against the same model built on the target device (two seeds tell the values every
initialisation gives from those it draws), exercise 2 by stated rules (the checkpoint's values in the sharded
model; every torch.load onto the CPU; no rank's GPU ever holding the whole checkpoint) and the file's digest,
exercise 3 against the digests and the learning rate the saving ranks reported. No reference answer ships in
`devicekit_labs.lab11`, so there is nothing to hide.
"""

from __future__ import annotations

from collections.abc import Callable

HIDDEN: dict[str, Callable[[dict], None]] = {}
