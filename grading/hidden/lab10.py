"""Hidden judges of lab 10 (grading only, never shipped to students).

None: both exercises are judged by stated rules on what the probe observed (the compiled and the eager call
on the CPU and on the stand-in device, the state dict's keys and devices). No reference answer ships in
`devicekit_labs.lab10`, so there is nothing to hide. The module exists so that every lab has one place for
its hidden judges (`course_tools.course.lab_map`).
"""

from __future__ import annotations

from collections.abc import Callable

HIDDEN: dict[str, Callable[[dict], None]] = {}
