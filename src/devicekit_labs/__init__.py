"""Self-checks for the lab exercises: the learner's ✓ / ✗ with a hint, and what the grader scores.

Each lab registers its checks in a module of this package (``lab01.py`` for ``01-devices``). A check is
a *probe* that runs the learner's objects for real and returns plain data, and a *judge* that reads that
data and raises `Fail` with a hint in both languages when something is wrong (`judged`). It never shows
the solution. `check` turns that into one printed line in the lab's language (see `devicekit.lang`) and
records the outcome; the grader runs the probe in the submission's kernel and the judge elsewhere.
"""

from __future__ import annotations

import importlib
import json
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from devicekit.frames import is_own_file, last_own_frame, not_learner_code
from devicekit.lang import Lang, current_language, pick
from devicekit_labs.machine import use_gpus, with_probe_gpus

__all__ = [
    "CheckResult",
    "Exercise",
    "Fail",
    "check",
    "exercises_for",
    "known_labs",
    "manifest",
    "registered",
    "describe_tensor",
    "failed_call",
    "judged",
    "learner_line",
    "observe",
    "observe_error",
    "results",
    "run",
    "use_gpus",
]

_PACKAGE_DIR = Path(__file__).resolve().parent
not_learner_code(_PACKAGE_DIR)  # a check's own frames are never "your line"
_LAB_ID = re.compile(r"^(\d\d)-[a-z0-9-]+$")


def _module_of(lab: str) -> str | None:
    """The module that registers the checks of ``lab`` (``NN-slug`` -> ``devicekit_labs.labNN``)."""
    match = _LAB_ID.match(lab)
    if match is None or not (_PACKAGE_DIR / f"lab{match.group(1)}.py").is_file():
        return None
    return f"devicekit_labs.lab{match.group(1)}"


def manifest() -> dict:
    """The course manifest (``manifest.json`` beside this file): every lab, its titles and exercises.

    Generated from the solution notebooks by ``python -m course_tools.course --write``; the registry, the
    grader and the course's tests read it, so the list of labs exists once.
    """
    global _MANIFEST_CACHE
    if _MANIFEST_CACHE is None:
        _MANIFEST_CACHE = json.loads((_PACKAGE_DIR / "manifest.json").read_text(encoding="utf-8"))
    return _MANIFEST_CACHE


_MANIFEST_CACHE: dict | None = None


def _lab_ids() -> list[str]:
    """Every lab id with self-checks, in course order (from the manifest)."""
    return [lab["id"] for lab in manifest()["labs"] if lab["exercises"]]


class Fail(Exception):
    """Raised by a check: the learner's answer is wrong. Carries the hint in both languages."""

    def __init__(self, en: str, zh: str) -> None:
        super().__init__(en)
        self.en = en
        self.zh = zh


# --- The check API: probe (learner's side) and judge (the score's side) --------------------------------
#
# A check is two functions. The *probe* runs where the learner's code runs (the notebook's kernel): it
# calls the learner's object on inputs it plants, under every configuration that tells right from wrong,
# and returns *observations*: plain data only (str, int, float, bool, None, lists, dicts with str keys,
# and tensors), so they cross a process boundary as bytes and load with ``torch.load(weights_only=True)``.
# The *judge* never runs learner code: it reads the observations and raises `Fail` with a bilingual hint.
# The self-check in a notebook runs both in one process; the grader runs the probe in the sandboxed
# kernel and the judge (public, plus its hidden extra judges) in a process that holds no submission code.


#: How a stub's hint begins in a Chinese lab ("练习 1：..."): the check's feedback names the exercise already.
STUB_EXERCISE_PREFIX = re.compile(r"^练习 \d+：\s*")
#: Where meta cannot run what the learner wrote: not the learner's mistake. Only lab 10 meets it, where a
#: compiled function runs on meta (Dynamo cannot trace the simulated GPU: `devicekit_labs.outside`).
STANDIN_LIMIT = (
    "cannot be called on meta tensors",
    "Cannot copy out of meta tensor",
    "with arguments from the 'Meta' backend",
    "meta tensors do not have data",
)


def learner_line(exc: BaseException) -> int | None:
    """The line of the learner's own code (a notebook cell) where ``exc`` went through last, if any.

    Frames of PyTorch, devicekit, the standard library and generated code (a dataclass's ``__init__``)
    are skipped (`devicekit.frames`): the learner can't edit those lines.
    """
    frame = last_own_frame(exc)
    return frame.lineno if frame else None


def observe_error(exc: BaseException) -> dict:
    """An exception the learner's code raised, as plain data for the judge.

    ``kind`` is ``stub`` (the lab's ``raise NotImplementedError`` is still there), ``standin`` (the meta
    stand-in cannot run this idiom: right code on a GPU can still end here) or ``error``.
    """
    message = str(exc)
    if isinstance(exc, NotImplementedError) and not any(s in message for s in STANDIN_LIMIT):
        frames = traceback.extract_tb(exc.__traceback__)
        raised_by_learner = bool(frames) and is_own_file(frames[-1].filename)
        kind = "stub" if raised_by_learner else "error"
    elif any(s in message for s in STANDIN_LIMIT):
        kind = "standin"
    else:
        kind = "error"
    # devicekit's own errors carry both languages: keep each, so the feedback reads in one
    en, zh = getattr(exc, "en", None), getattr(exc, "zh", None)
    return {
        "kind": kind,
        "type": type(exc).__name__,
        "message": (en if isinstance(en, str) else message)[:2000],
        "message_zh": (zh if isinstance(zh, str) else message)[:2000],
        "line": learner_line(exc),
    }


def observe(fn: Callable[..., object], *args, **kwargs) -> dict:
    """Call the learner's ``fn`` and record what happened: ``{"value": …}`` or ``{"error": …}``.

    The value is returned as is; the probe turns it into plain data (`describe_tensor` for tensors).
    """
    try:
        return {"value": fn(*args, **kwargs)}
    except Exception as exc:  # the learner's code: any exception is an observation, never a crash
        return {"error": observe_error(exc)}


def describe_tensor(t: object, values: bool = True) -> dict | None:
    """Plain data about a tensor (device, dtype, shape, and its values on the CPU when it has any)."""
    import torch

    if not isinstance(t, torch.Tensor):
        return None
    dtype = str(t.dtype).removeprefix("torch.")
    out: dict = {"device": str(t.device), "dtype": dtype, "shape": list(t.shape)}
    if values and t.device.type != "meta":
        out["values"] = t.detach().to("cpu", copy=True)
    return out


def failed_call(observation: dict, what_en: str, what_zh: str) -> None:
    """In a judge: raise the right `Fail` when an observed call raised instead of returning.

    A stub says "not done yet"; a stand-in limit says honestly that meta could not run it (and does not
    count it against the learner when ``what_*`` can be judged otherwise, see the lab's judge); any other
    error names its type, message and the learner's own line.
    """
    error = observation.get("error")
    if error is None:
        return
    where_en = f" (line {error['line']} of your cell)" if error.get("line") else ""
    where_zh = f"（你的单元格第 {error['line']} 行）" if error.get("line") else ""
    what = f"{error['type']}: {error['message']}"
    what_zh_text = f"{error['type']}: {error.get('message_zh', error['message'])}"
    if error["kind"] == "stub":
        hint = f" ({error['message']})" if error["message"] else ""  # the stub's hint, in the lab's language
        # the feedback already names the exercise: the Chinese hint drops its leading "练习 N："
        hint_zh = STUB_EXERCISE_PREFIX.sub("", error["message"])
        raise Fail(
            "not done yet: replace the `raise NotImplementedError` with your code, then run this cell "
            f"again.{hint}",
            "还没有完成：把 `raise NotImplementedError` 换成你的代码，然后重新运行这个单元格。"
            + (f"提示：{hint_zh}" if hint_zh else ""),
        )
    if error["kind"] == "standin":
        raise Fail(
            f"{what_en}: the `meta` device cannot run this ({what}): meta tensors hold no data. It is not "
            "necessarily wrong: on a real GPU it may pass. Run the lab on a GPU runtime to check it fully.",
            f"{what_zh}：`meta` 设备运行不了这段代码（{what_zh_text}）：meta 张量没有数据。这不一定是错的，"
            "在真实 GPU 上可能就能通过。请在 GPU 运行环境里再检查一遍。",
        )
    raise Fail(
        f"{what_en}: your code raised {what}{where_en}. Read the message, fix the code, run again.",
        f"{what_zh}：你的代码抛出了 {what_zh_text}{where_zh}。读一读报错信息，改好后再运行。",
    )


@dataclass(frozen=True)
class Exercise:
    lab: str
    key: str
    number: int
    title_en: str
    title_zh: str
    run: Callable[..., None] = field(repr=False)
    #: Name of the notebook variable the check receives; the grader re-runs checks the learner skipped.
    target: str | None = None
    #: The learner's side: learner objects -> observations (plain data); set by `judged`.
    probe: Callable[..., dict] | None = field(default=None, repr=False)
    #: The score's side: observations -> None, or `Fail`. Never runs learner code.
    judge: Callable[[dict], None] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one self-check. Truthy when it passed."""

    lab: str
    key: str
    number: int
    passed: bool
    en: str
    zh: str

    def __bool__(self) -> bool:
        return self.passed

    def text(self, lang: Lang | None = None) -> str:
        return pick(self.en, self.zh, lang)


_REGISTRY: dict[tuple[str, str], Exercise] = {}
#: Every check run in this process, in order. The grader reads it after executing a submission.
results: list[CheckResult] = []


def judged(
    lab: str,
    key: str,
    number: int,
    title_en: str,
    title_zh: str,
    target: str | None = None,
    gpus: int = 2,
):
    """Register a two-part check: decorate the *probe*; the judge is attached with ``.judge``.

    The probe runs on ``gpus`` GPUs, simulated where the machine has none (`machine.probe_gpus`), in the
    notebook and in the grader alike; ``gpus=0`` runs it as it is (a probe that starts processes of its
    own, which a simulation cannot follow).

    ```python
    @judged(LAB, "move-batch", 1, "return the moved tensor", "返回移动后的张量", target="move_batch")
    def probe_move_batch(move_batch) -> dict: ...   # runs the learner's code, returns plain data

    @probe_move_batch.judge
    def judge_move_batch(seen: dict) -> None: ...   # reads the data, raises Fail
    ```
    """

    def register(probe: Callable[..., dict]) -> Callable[..., dict]:
        if gpus:
            probe = with_probe_gpus(probe, gpus)

        def attach(judge: Callable[[dict], None]) -> Callable[[dict], None]:
            def run_both(*args, **kwargs) -> None:
                judge(probe(*args, **kwargs))

            _REGISTRY[(lab, key)] = Exercise(
                lab, key, number, title_en, title_zh, run_both, target, probe=probe, judge=judge
            )
            return judge

        probe.judge = attach  # type: ignore[attr-defined]
        return probe

    return register


def _load(lab: str) -> None:
    module = _module_of(lab) if lab in _lab_ids() else None
    if module is None:
        known = ", ".join(_lab_ids())
        raise KeyError(f"no self-checks for lab {lab!r}; labs with checks: {known}")
    importlib.import_module(module)


def known_labs() -> list[str]:
    """The ids of the labs that have self-checks."""
    return _lab_ids()


def registered(lab: str) -> list[Exercise]:
    """The exercises registered so far for ``lab``, in notebook order (imports nothing)."""
    return sorted((e for e in _REGISTRY.values() if e.lab == lab), key=lambda e: e.number)


def exercises_for(lab: str) -> list[Exercise]:
    """The exercises of ``lab`` in their order in the notebook."""
    _load(lab)
    return registered(lab)


def _outcome(ex: Exercise, args: tuple, kwargs: dict) -> tuple[bool, str, str]:
    try:
        ex.run(*args, **kwargs)
    except Fail as fail:
        return False, fail.en, fail.zh
    except Exception as exc:  # the learner's code crashed: report it, never crash the check cell
        try:
            failed_call({"error": observe_error(exc)}, "this check", "这项检查")
        except Fail as fail:
            return False, fail.en, fail.zh
    return True, "passed.", "通过。"


def run(lab: str, key: str, *args, **kwargs) -> CheckResult:
    """Run the self-check for exercise ``key`` of ``lab`` and return the result (prints nothing)."""
    _load(lab)
    ex = _REGISTRY.get((lab, key))
    if ex is None:
        keys = ", ".join(e.key for e in exercises_for(lab))
        raise KeyError(f"lab {lab!r} has no exercise {key!r}; its exercises: {keys}")
    passed, en, zh = _outcome(ex, args, kwargs)
    mark = "✓" if passed else "✗"
    result = CheckResult(
        lab=lab,
        key=key,
        number=ex.number,
        passed=passed,
        en=f"{mark} Exercise {ex.number} ({ex.title_en}): {en}",
        zh=f"{mark} 练习 {ex.number}（{ex.title_zh}）：{zh}",
    )
    results.append(result)
    return result


def check(lab: str, key: str, *args, lang: Lang | None = None, **kwargs) -> None:
    """The learner's self-check: run exercise ``key`` of ``lab`` on their objects and print ✓ or ✗.

    Prints one line in the lab's language (both languages when it is unknown) and returns nothing, so a
    notebook shows the line and no object repr. The outcome is recorded in `results` for the grader.
    """
    print(run(lab, key, *args, **kwargs).text(lang or current_language()))
