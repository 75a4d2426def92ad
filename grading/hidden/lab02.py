"""Hidden judges for lab 02 (see ``grading/hidden/__init__.py``)."""

from __future__ import annotations

import torch

from devicekit_labs import Fail


def judge_noise_precision(seen: dict) -> None:
    """Exercise 3, grading only: noise for a float64 input is float64 noise, not float32 noise cast up.

    The public judge sees the output's dtype; a float32 noise cast to float64 afterwards has the right dtype
    but every value is one a float32 can hold, which genuine float64 noise almost never is.
    """
    for case in seen.get("runs", []):
        out = case.get("cpu", {}).get("output")
        if case.get("dtype") != "float64" or not out or "values" not in out:
            continue
        noise = out["values"].double() - 3.0
        if noise.numel() and bool(torch.equal(noise, noise.float().double())):
            raise Fail(
                "the noise for a float64 input was generated in float32 and converted afterwards: create it "
                "in the input's dtype.",
                "float64 输入的噪声是先按 float32 生成、再转换过来的：请直接按输入的 dtype 生成噪声。",
            )


HIDDEN = {"noise-forward": judge_noise_precision}
