"""``devicekit-dryrun script.py [args...]``: run an unchanged training script on simulated GPUs.

Why: a device bug (one tensor left on the CPU, a checkpoint saved on GPU 1, a CUDA generator missing)
shows only on a machine with GPUs, often hours into a booked run. The dry run executes the script on this
CPU machine inside `devicekit.simulate` — every value computed for real, every device rule and message
CUDA's — so the first device error appears in seconds, with:

* PyTorch's own traceback and message, exactly as a GPU machine prints them (the note that the run was
  simulated is beside it, never in it);
* the line of the user's own code it went through last (`devicekit.frames`);
* the module whose ``forward`` was running, by its qualified name in the model, with where that module's
  own parameters and buffers are;
* the explanation from the error catalog (`devicekit.explain`): cause, fix and the lesson that teaches it.

The script runs as ``python script.py args...`` would run it: as ``__main__``, with ``sys.argv`` set to
the script and its arguments and the script's folder first on ``sys.path``. Exit status: 1 on a device
error, otherwise the script's own (0, its ``sys.exit`` code, or 1 for an uncaught exception, as Python
gives). Usage errors (a script that does not exist or does not parse, a bad ``--gpus``) exit 2.

What it cannot do: a child process the script starts (``subprocess``, ``multiprocessing`` with ``spawn``,
``torchrun``) runs without the simulation, on this machine's CPU-only torch, and the dry run does not
warn when the script starts one. ``os._exit``
ends the process at once, with the script's status and no report. Everything `devicekit.simulate` cannot
simulate (timing, memory limits, kernel numerics) it cannot show either.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from devicekit.lang import Lang, current_language, using_language
from devicekit.messages import Message

__all__ = ["DeviceErrorReport", "console", "main", "report_device_error", "run_script"]

PROG = "devicekit-dryrun"

#: Exit status when the script hit a device error; usage errors (bad arguments, no such script) exit 2.
DEVICE_ERROR_STATUS = 1
USAGE_STATUS = 2


@dataclass(frozen=True)
class DeviceErrorReport:
    """What the dry run says about one device error, in both languages (`message`).

    Attributes:
        error: the exception the script raised.
        where: the user's own line it went through last (file, line, code), or None.
        module: the qualified name and class of the module whose forward was running, or None.
        explanation: the catalog's explanation (`devicekit.explain`), both languages.
    """

    error: BaseException
    where: Message | None
    module: Message | None
    explanation: Message

    @property
    def message(self) -> Message:
        parts = [
            Message(
                "devicekit-dryrun: the script hit a device error on the simulated GPUs.",
                "devicekit-dryrun：脚本在模拟 GPU 上遇到了设备错误。",
            )
        ]
        parts += [p for p in (self.where, self.module) if p is not None]
        parts.append(self.explanation)
        return Message("\n".join(p.en for p in parts), "\n".join(p.zh for p in parts))


def _module_frames(tb: TracebackType | None) -> list[Any]:
    """The ``nn.Module`` objects whose methods are on the traceback, outermost first."""
    from torch import nn

    found: list[Any] = []
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, nn.Module) and tb.tb_frame.f_code.co_name not in (
            "_call_impl",
            "_wrapped_call_impl",
        ):
            found.append(owner)
        tb = tb.tb_next
    return found


def _devices_of(module: Any) -> str:
    own = [*module._parameters.values(), *module._buffers.values()]
    devices = sorted({str(t.device) for t in own if t is not None})
    return ", ".join(devices)


def module_text(error: BaseException) -> Message | None:
    """The module whose code raised: its qualified name in the outermost module on the traceback, its
    class, and where its own parameters and buffers are. None when no module's code is on the traceback."""
    modules = _module_frames(error.__traceback__)
    if not modules:
        return None
    root, inner = modules[0], modules[-1]
    name = next((n for n, m in root.named_modules() if m is inner), None)
    kind = type(inner).__name__
    if name:
        label = Message(
            f"module {name!r} ({kind}) of {type(root).__name__}",
            f"{type(root).__name__} 的模块 {name!r}（{kind}）",
        )
    else:
        label = Message(f"the model itself ({kind})", f"模型本身（{kind}）")
    devices = _devices_of(inner)
    if devices:
        return Message(
            f"In {label.en}; its own parameters and buffers are on {devices}.",
            f"出错位置：{label.zh}；它自己的参数和缓冲区在 {devices.replace(', ', '、')} 上。",
        )
    return Message(f"In {label.en}.", f"出错位置：{label.zh}。")


def own_lines_text(error: BaseException) -> Message | None:
    """The lines of the user's own code the error went through (`devicekit.frames`), outermost first, the
    last one marked: the call that started it and the line that raised. None when there is none."""
    from devicekit.frames import own_frames
    from devicekit.ipython import frame_text

    frames = own_frames(error)
    if not frames:
        return None
    en, zh = ["In your code:"], ["你的代码："]
    for number, frame in enumerate(frames, 1):
        where = frame_text(frame)
        last = number == len(frames) and number > 1
        en.append(f"  {where.en}" + ("  <- raised here" if last else ""))
        zh.append(f"  {where.zh}" + ("  <- 在这里出错" if last else ""))
    return Message("\n".join(en), "\n".join(zh))


def report_device_error(error: BaseException) -> DeviceErrorReport | None:
    """The dry run's report on ``error``, or None when it is not a device error (`devicekit.explain`
    finds no family for it)."""
    from devicekit.explain import explain

    explanation = explain(error)
    if explanation.family is None:
        return None
    where = own_lines_text(error)
    return DeviceErrorReport(
        error=error,
        where=where,
        module=module_text(error),
        explanation=Message(explanation.en, explanation.zh),
    )


@contextmanager
def _as_main(script: str, args: Sequence[str]) -> Iterator[None]:
    """``sys.argv`` and ``sys.path[0]`` as ``python script.py args...`` sets them; restored after."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        yield
    finally:
        sys.argv[:] = saved_argv
        sys.path[:] = saved_path


def _exit_code(exit_: SystemExit) -> int:
    """The status Python gives for ``SystemExit(code)``: None is 0, an int itself, anything else 1 (and
    printed to stderr, as the interpreter does)."""
    code = exit_.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _usage_error(text: Message, lang: Lang | None) -> int:
    print(f"{PROG}: {text.text(lang)}", file=sys.stderr)
    return USAGE_STATUS


def _locale_language() -> Lang | None:
    """``zh`` or ``en`` from the locale a terminal user set (``LC_ALL``, ``LC_MESSAGES``, ``LANG``)."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            return (
                "zh" if value.lower().startswith("zh") else "en" if value.lower().startswith("en") else None
            )
    return None


def _check_script(script: str) -> Message | None:
    """Why ``script`` cannot be run (missing, a folder, unreadable, does not parse), or None."""
    if not os.path.exists(script):
        return Message(f"error: no such script: {script}", f"错误：找不到脚本：{script}")
    if not os.path.isfile(script):
        return Message(f"error: not a file: {script}", f"错误：这不是一个文件：{script}")
    try:
        with open(script, "rb") as handle:
            source = handle.read()
    except OSError as exc:
        return Message(f"error: cannot read {script}: {exc}", f"错误：无法读取 {script}：{exc}")
    try:
        compile(source, script, "exec")
    except (SyntaxError, ValueError) as exc:
        where = f"{script}, line {getattr(exc, 'lineno', '?')}"
        where_zh = f"{script} 第 {getattr(exc, 'lineno', '?')} 行"
        return Message(
            f"error: the script does not parse ({where}): {exc}; nothing was run",
            f"错误：脚本有语法错误（{where_zh}）：{exc}；什么都没有运行",
        )
    return None


def run_script(
    script: str, args: Sequence[str] = (), *, gpus: int = 1, profile: str = "H200", lang: Lang | None = None
) -> int:
    """Run ``script`` with ``args`` under ``simulate(gpus, profile)``; print what `main` prints; return the
    exit status (see the module docstring)."""
    from devicekit.simulate import simulate

    lang = lang or current_language()
    with contextlib.ExitStack() as stack:
        try:  # bad arguments, or real GPUs here: refused before the script runs
            stack.enter_context(simulate(gpus=gpus, profile=profile))
        except (TypeError, ValueError, RuntimeError) as exc:
            return _usage_error(
                Message(f"error: {getattr(exc, 'en', exc)}", f"错误：{getattr(exc, 'zh', exc)}"), lang
            )
        return _run_simulated(script, args, gpus, profile, lang)


def _run_simulated(script: str, args: Sequence[str], gpus: int, profile: str, lang: Lang | None) -> int:
    """`run_script` once the simulation is on."""
    try:
        with _as_main(script, args):
            runpy.run_path(script, run_name="__main__")
        status = 0
    except SystemExit as exit_:
        status = _exit_code(exit_)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the script's own exception: printed as Python prints it, then judged
        error.__traceback__ = _without_machinery(error.__traceback__)
        traceback.print_exception(type(error), error, error.__traceback__)
        report = report_device_error(error)
        if report is not None:
            print("\n" + report.message.text(lang), file=sys.stderr)
            return DEVICE_ERROR_STATUS
        status = 1
    print(_clean_summary(gpus, profile, status).text(lang), file=sys.stderr)
    return status


def _clean_summary(gpus: int, profile: str, status: int) -> Message:
    """The last line of a run without a device error (the script's own status named when it is not 0)."""
    summary = Message(
        f"{PROG}: no device error on {gpus} simulated GPU(s) ({profile}).",
        f"{PROG}：在 {gpus} 块模拟 GPU（{profile}）上没有出现设备错误。",
    )
    if status:
        summary += Message(f" The script ended with status {status}.", f"脚本的退出状态是 {status}。")
    return summary


_SIMULATOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "simulate") + os.sep


def _is_machinery(filename: str) -> bool:
    """Frames a GPU run would not show: this module's, runpy's, the simulator's."""
    return filename in (__file__, runpy.__file__, "<frozen runpy>") or filename.startswith(_SIMULATOR)


def _without_machinery(tb: TracebackType | None) -> TracebackType | None:
    """The traceback without the dry run's and the simulator's own frames, so it reads as the script's
    traceback on a GPU machine does (``tb_next`` is writable since Python 3.7)."""
    kept: list[TracebackType] = []
    while tb is not None:
        if not _is_machinery(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    for current, following in zip(kept, [*kept[1:], None], strict=True):
        current.tb_next = following
    return kept[0] if kept else None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Run a script unchanged on simulated CUDA GPUs (devicekit.simulate) and report its first device "
            "error. · 在模拟的 CUDA GPU 上原样运行脚本（devicekit.simulate），报告它的第一个设备错误。"
        ),
        epilog=(
            "Exit status: 1 on a device error, 2 on a usage error, otherwise the script's own. "
            "退出状态：遇到设备错误为 1，用法错误为 2，其他情况与脚本自己的相同。"
        ),
    )
    p.add_argument("--gpus", type=int, default=1, help="how many GPUs to simulate (default 1) · 模拟几块 GPU")
    p.add_argument(
        "--profile", default="H200", help="the GPU model to simulate (default H200) · 模拟哪种 GPU"
    )
    p.add_argument("--lang", choices=("en", "zh"), help="language of the report · 报告的语言")
    p.add_argument("script", help="the Python script to run · 要运行的 Python 脚本")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments · 脚本自己的参数")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = parser().parse_args(argv)
    # --lang for this run only (the script's environment is left as it was)
    lang = args.lang or current_language() or _locale_language()
    if isinstance(args.gpus, bool) or args.gpus < 1:
        return _usage_error(
            Message(
                f"error: --gpus must be a positive number, got {args.gpus}",
                f"错误：--gpus 必须是正整数，收到的是 {args.gpus}",
            ),
            lang,
        )
    problem = _check_script(args.script)
    if problem is not None:
        return _usage_error(problem, lang)
    with using_language(lang) if lang else contextlib.nullcontext():
        return run_script(args.script, args.args, gpus=args.gpus, profile=args.profile, lang=lang)


def console() -> None:
    """Entry point of the `devicekit-dryrun` console script."""
    sys.exit(main())


if __name__ == "__main__":
    console()


def dryrun_magic(line: str, cell: str | None = None) -> int | None:
    """``%dryrun script.py [args...]`` / ``%%dryrun [--gpus N] [--profile NAME]`` (IPython, after
    ``%load_ext devicekit``).

    The line form runs a script as ``devicekit-dryrun`` does and returns its exit status. The cell form
    runs the cell's code on simulated GPUs; a device error shows as in any cell, with devicekit's
    explanation under it. Tensors the cell leaves in the notebook stay simulated ones: use them inside
    another ``%%dryrun`` cell, not in plain cells.
    """
    import shlex

    from IPython import get_ipython

    from devicekit.simulate import simulate

    if cell is None:
        return main(shlex.split(line))
    options = argparse.ArgumentParser(prog="%%dryrun", add_help=False)
    options.add_argument("--gpus", type=int, default=1)
    options.add_argument("--profile", default="H200")
    known, rest = options.parse_known_args(shlex.split(line))
    if rest or known.gpus < 1:
        print(
            Message(
                f"%%dryrun: usage: %%dryrun [--gpus N] [--profile NAME]; got {line!r}",
                f"%%dryrun：用法：%%dryrun [--gpus N] [--profile 型号]；收到的是 {line!r}",
            )
        )
        return None
    with simulate(gpus=known.gpus, profile=known.profile):
        get_ipython().run_cell(cell)
    return None
