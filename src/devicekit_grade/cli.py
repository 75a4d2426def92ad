"""The ``devicekit-grade`` command line (also ``python -m devicekit_grade``).

``devicekit-grade --out DIR [--roster CSV] [options] NOTEBOOK_OR_FOLDER...``

Exit status (`EXIT_STATUS`, also in ``--help``): 0 when every file got a row (whatever its status or score),
2 when the grader could not run as asked (no submissions, a missing input, ``--out`` not writable or holding
something it cannot merge into, a bad roster), 3 when the grading environment was modified during the run
(the rows after that are not graded), 4 when the grader itself failed (`devicekit_grade.failures`: it
could not run notebooks at all and graded nothing, or some rows say ``grader-error``), 130 when interrupted
(the rows finished so far are written).

A notebook never sees the grader's command line, working directory or environment: its sandbox has a PID
namespace and a ``/proc`` of its own (`devicekit_grade.sandbox`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import textwrap
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from devicekit.messages import Message
from devicekit_grade import failures, integrity, lms, sandbox
from devicekit_grade.context import Context, Options, default_hidden
from devicekit_grade.discover import UsageError, find
from devicekit_grade.failures import GraderFailure, Told
from devicekit_grade.records import STATUS_ZH, Grade
from devicekit_grade.released import Released, default_folders
from devicekit_grade.report import lab_titles, load, write_all
from devicekit_grade.run import grade_submission

USAGE_ERROR, TAMPERED, GRADER_ERROR = 2, 3, failures.GRADER_ERROR
#: The exit statuses, for ``--help``.
EXIT_STATUS = Message(
    "exit status: 0 every file got a row, whatever its status or score; 2 the grader could not run as "
    "asked (no submissions, a missing input, --out not writable, a bad roster); 3 the grading environment "
    "was modified during the run; 4 the grader itself failed: it could not run notebooks here and graded "
    "nothing (the message says why), or rows say grader-error (their reason says why, in both languages; "
    "they are graded again on the next run into the same --out); 130 interrupted.",
    "退出状态：0 每个文件都有一行结果（无论状态和得分如何）；2 评分器无法按要求运行（没有提交、输入不存在、"
    "--out 不可写、名单有误）；3 运行期间评分环境被改动；4 评分器自身出错：无法在这里运行 notebook，"
    "没有评分任何作业（提示信息会说明原因），或者有的行状态为 grader-error（原因以中英文写在该行；"
    "下次用同一个 --out 运行时会重新评分）；130 被中断。",
)


def say(message: Message, prefix: str = "devicekit-grade: ") -> None:
    """Print ``message`` on stderr in both languages: the English, then the Chinese."""
    print(f"{prefix}{message.en}\n{prefix.rstrip(': ')}：{message.zh}", file=sys.stderr, flush=True)


def _prepare_out(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise UsageError(
            Message(f"--out {out}: cannot write there ({why})", f"--out {out}：无法写入（{why}）")
        ) from None


def _parser() -> argparse.ArgumentParser:
    limits = sandbox.Limits()
    parser = argparse.ArgumentParser(
        prog="devicekit-grade",
        description=textwrap.fill(
            "Grade devicekit lab notebooks: each runs sealed off to compute its answers, and the grader's "
            "own copy of the released checks scores them. Writes DIR/grades.csv, grades.json, report.html, "
            "canvas.csv, moodle.csv and feedback/.",
            100,
        ),
        # English, then Chinese (wrapped at its few spaces only: a CJK character is two columns wide)
        epilog="\n".join(
            [textwrap.fill(EXIT_STATUS.en, 100), textwrap.fill(EXIT_STATUS.zh, 50, break_long_words=False)]
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("inputs", nargs="+", metavar="NOTEBOOK_OR_FOLDER", help="submissions, or folders of them")
    add(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="folder for the grades (merged into if it has some)",
    )
    add("--replace", action="store_true", help="start --out afresh instead of merging into its grades")
    # what is computed over the whole class: students, points, the LMS files, lateness
    add(
        "--roster",
        type=Path,
        metavar="CSV",
        help="students: id, name, email, lang, canvas_id, moodle_id, aliases",
    )
    add(
        "--points",
        type=float,
        metavar="N",
        help="scale each lab to N points (default: the sum of the weights)",
    )
    add(
        "--weights",
        metavar="W",
        help="exercise weights: 1,1,2 or 01-devices=1,1,2;04-data=1,2 (default 1 each)",
    )
    add("--assignment", default="Lab", help="the assignment's column name in canvas.csv (default: Lab)")
    add(
        "--lab",
        metavar="LAB",
        help="the lab of canvas.csv and moodle.csv, e.g. 01-devices (default: the lab most notebooks are of)",
    )
    add("--due", metavar="WHEN", help="due time, e.g. 2026-03-01T23:59+08:00: later files are flagged late")
    add(
        "--timeout",
        type=int,
        default=120,
        metavar="S",
        help="per-cell limit, interrupted after (default 120)",
    )
    add(
        "--notebook-timeout",
        type=int,
        metavar="S",
        help="limit for a whole notebook (default 10 x --timeout)",
    )
    jobs = min(4, max(1, (os.cpu_count() or 2) // 2))
    add("--jobs", "-j", type=int, default=jobs, help=f"notebooks run at once (default {jobs})")
    add("--kernel", default="python3", help="Jupyter kernel (default python3)")
    add(
        "--memory-mb",
        type=int,
        default=limits.memory_mb,
        help=f"address space per process, 0 = none (default {limits.memory_mb}; use 0 on a GPU)",
    )
    add(
        "--box-memory-mb",
        type=int,
        default=limits.box_memory_mb,
        help=f"memory of a notebook's processes together, 0 = none (default {limits.box_memory_mb}; "
        "where the grader can make a cgroup per notebook: the preflight line says)",
    )
    add(
        "--box-disk-mb",
        type=int,
        default=limits.box_disk_mb,
        help=f"what a notebook's folder may hold on disk, 0 = no limit (default {limits.box_disk_mb})",
    )
    add(
        "--cpu-seconds", type=int, default=limits.cpu_s, help=f"CPU time per process (default {limits.cpu_s})"
    )
    add(
        "--max-processes",
        type=int,
        default=limits.processes,
        help=f"processes and threads of a notebook (default {limits.processes})",
    )
    add(
        "--max-file-mb",
        type=int,
        default=limits.file_mb,
        help=f"largest file a notebook may write (default {limits.file_mb})",
    )
    add(
        "--isolation",
        choices=["auto", "bwrap", "none"],
        default="auto",
        help="auto: bubblewrap (0.5 or later) where it starts, else refuse; bwrap: bubblewrap or refuse; "
        "none: no sandbox, only with --trust-submissions",
    )
    add("--sandbox", action="store_true", help="the same as --isolation bwrap")
    add(
        "--labs",
        type=Path,
        help="the released labs, to compare check cells (default: ./labs)",
    )
    add("--solutions", type=Path, help="the published solutions, to recognise them (default: ./solutions)")
    add(
        "--hidden",
        type=Path,
        metavar="DIR",
        help="the hidden judges: labNN.py files with HIDDEN = {key: judge} (default: ./grading/hidden)",
    )
    add("--checks", type=Path, metavar="DIR", help="labNN.py check modules to use instead of the installed")
    add(
        "--trust-submissions",
        action="store_true",
        help="run notebooks without a sandbox where bubblewrap cannot start",
    )
    add("--no-cache", action="store_true", help="grade again files whose grade --out already holds")
    add("--quiet", "-q", action="store_true", help="no progress output")
    return parser


def entry() -> int:
    """The console script: adopt what a notebook detaches (`sandbox.become_subreaper`, for runs without a
    sandbox), end on SIGTERM as on Ctrl-C, then `main`."""
    sandbox.become_subreaper()
    signal.signal(signal.SIGTERM, _interrupt)  # a polite kill ends like Ctrl-C
    return main(sys.argv[1:])


def _cannot_write(out: Path, exc: OSError) -> Message:
    return Message(f"cannot write the grades to {out}: {exc}", f"无法把成绩写入 {out}：{exc}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


#: Flags computed over the whole class, recomputed on every write (never carried by a cached row).
CLASS_FLAGS = ("identical-file", "identical-code", "near-identical-code", "late", "not-in-roster")


#: Rows graded again even when the same bytes were graded by the same grader (what went wrong may be fixed).
NOT_CACHED = ("error", "superseded", failures.STATUS)


def _from_cache(sub, earlier: list[Grade], digest: str) -> Grade | None:
    """An earlier row of the same bytes graded by the same grader, checks and limits, for ``sub``."""
    import hashlib

    if sub.data is None or sub.status != "pending":
        return None
    sha = hashlib.sha256(sub.data).hexdigest()
    for old in earlier:
        if old.sha256 == sha and old.graded_with == digest and old.status not in NOT_CACHED:
            again = Grade.from_dict(old.to_dict())
            again.file, again.submitted = sub.shown, sub.mtime
            again.folder = sub.folder.name if sub.folder else ""
            again.flags = [f for f in again.flags if f not in CLASS_FLAGS]
            computed = ("identical ", "near identical", "submitted late", "marked LATE")
            again.reasons = [m for m in again.reasons if not m.en.startswith(computed)]
            again.duration_s = 0.0
            return again
    return None


def _superseded(submissions: list, roster: list | None, labs: list[str]) -> dict[int, Grade]:
    """Rows for the files that a newer file of the same student and lab replaces, found before anything
    runs (lab from the notebook, student from the name and roster, newest as `lms.keep_latest` says):
    {index: row}."""
    from devicekit_grade.identify import BadSubmission, identify, loads

    rows: dict[int, Grade] = {}
    for i, sub in enumerate(submissions):
        if sub.status != "pending" or sub.data is None:
            continue
        try:
            lab = identify(loads(sub.data), sub.path, labs).lab
        except (BadSubmission, RecursionError, ValueError):
            continue
        if lab is not None:
            folder = sub.folder.name if sub.folder else ""
            rows[i] = Grade(file=sub.shown, lab=lab, submitted=sub.mtime, folder=folder, status=sub.status)
    lms.attribute(list(rows.values()), roster, labs)
    lms.keep_latest(list(rows.values()))
    return {i: row for i, row in rows.items() if row.status == "superseded"}


def finish(
    merged: list[Grade],
    roster: list | None,
    labs: list[str],
    weights: dict,
    points: float | None,
    due: float | None,
    lab: str | None = None,
) -> None:
    """Everything computed over the whole class, in place: students, latest files, copies, lateness,
    missing roster students (of the LMS files' lab, `report.main_lab`), points."""
    from devicekit_grade.report import main_lab

    merged[:] = [g for g in merged if g.status != "missing"]
    lms.attribute(merged, roster, labs)
    lms.keep_latest(merged)
    integrity.class_flags(merged)
    lms.mark_late(merged, due)
    target = main_lab(merged, lab) or (labs[0] if len(labs) == 1 else None)
    merged += lms.missing_rows(merged, roster, [target] if target else [])
    lms.assign_points(merged, weights, points)


def _lab(text: str | None) -> str | None:
    """``--lab``: a lab with checks in this devicekit, or `lms.OptionError`."""
    from devicekit_grade.identify import known_labs

    if text is None or text in known_labs():
        return text
    known = known_labs()
    raise lms.OptionError(
        Message(
            f"--lab {text!r}: no such lab with checks (labs: {', '.join(known)})",
            f"--lab {text!r}：没有这个带检查的实验（实验有：{'、'.join(known)}）",
        )
    )


def _lms_notes(grades: list[Grade], lab: str | None = None) -> list[Message]:
    """What the LMS files leave out, and why: notebooks of another lab than theirs, or all of them when
    two labs have as many notebooks and ``--lab`` does not say which one the column is for."""
    from devicekit_grade.report import COUNTED, left_out, main_lab

    others = left_out(grades, lab)
    if not others:
        return []
    files = sorted({g.file for g in others})[:5]
    lab = main_lab(grades, lab)
    if lab is None:
        labs = sorted({g.lab for g in grades if g.status in COUNTED and g.lab})
        return [
            Message(
                f"canvas.csv and moodle.csv are empty: the notebooks are of {', '.join(labs)}, as many of "
                "each; name the lab of the assignment with --lab.",
                f"canvas.csv 和 moodle.csv 是空的：这些 notebook 分属 {'、'.join(labs)}，各占一样多；"
                "请用 --lab 指明这次作业是哪个实验。",
            )
        ]
    return [
        Message(
            f"canvas.csv and moodle.csv hold lab {lab} only: {len(others)} row(s) of another lab left out "
            f"({', '.join(files)}).",
            f"canvas.csv 和 moodle.csv 只包含实验 {lab}：另有 {len(others)} 行属于其他实验，未导出"
            f"（{'、'.join(files)}）。",
        )
    ]


def _options(args: argparse.Namespace) -> Options:
    """How this run grades, from the command line."""
    default_labs, default_solutions = default_folders()
    return Options(
        cell_timeout=args.timeout,
        notebook_timeout=args.notebook_timeout or 10 * args.timeout,
        kernel=args.kernel,
        limits=sandbox.Limits(
            args.memory_mb,
            args.cpu_seconds,
            args.max_processes,
            args.max_file_mb,
            args.box_memory_mb,
            args.box_disk_mb,
        ),
        isolation="bwrap" if args.sandbox else args.isolation,
        released=Released(args.labs or default_labs, args.solutions or default_solutions),
        hidden=args.hidden or default_hidden(),
        checks=args.checks,
        trust=args.trust_submissions,
        # the roster (names, e-mails) and unreleased checks too: a notebook must not read them
        hide=[
            args.out,
            *(Path(p) if Path(p).is_dir() else Path(p).parent for p in args.inputs),
            *([args.roster.parent] if args.roster is not None else []),
            *([args.checks] if args.checks is not None else []),
        ],
    )


def _start(options: Options) -> Context | int:
    """The run's `Context`, or the exit status when the grader cannot run here (said in both languages)."""
    try:
        return Context(options)
    except sandbox.Refused as refused:
        print(f"{refused.message.en}\n\n{refused.message.zh}", file=sys.stderr)
        return USAGE_ERROR
    except Told as told:  # a setting of this machine the instructor can change (a too long TMPDIR)
        say(told.message)
        return USAGE_ERROR
    except GraderFailure as failed:  # the grader cannot run notebooks here: nothing is graded
        print(
            f"devicekit-grade: {failed.message.en}\n\ndevicekit-grade：{failed.message.zh}", file=sys.stderr
        )
        return GRADER_ERROR
    except Exception as exc:
        what = f"{type(exc).__name__}: {exc}"
        say(Message(f"cannot start: {what}", f"无法启动：{what}"))
        return USAGE_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grader; returns the exit status (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.timeout < 1 or (args.notebook_timeout is not None and args.notebook_timeout < 1) or args.jobs < 1:
        say(
            Message(
                "--timeout, --notebook-timeout and --jobs must be at least 1",
                "--timeout、--notebook-timeout 和 --jobs 至少为 1",
            )
        )
        return USAGE_ERROR
    out: Path = args.out
    try:
        submissions = find(args.inputs, exclude=[out])
        _prepare_out(out)
        earlier = [] if args.replace else load(out)
        roster = lms.read_roster(args.roster) if args.roster else None
        weights, due, lab = lms.parse_weights(args.weights), lms.parse_due(args.due), _lab(args.lab)
    except Told as exc:  # a usage error, a bad roster or option, grades that cannot be merged
        say(exc.message)
        return USAGE_ERROR
    options = _options(args)
    ctx = _start(options)
    if isinstance(ctx, int):
        return ctx
    warnings = list(ctx.isolation.warnings)
    for warning in warnings:
        if not args.quiet:
            say(Message(f"warning: {warning.en}", f"警告：{warning.zh}"))
    holds = sandbox.holds(ctx.isolation, options.limits)  # which limits hold per box here, which per process
    if not args.quiet:
        say(holds)
    notes = [sandbox.MODES[ctx.isolation.mode], *warnings, holds]  # what the isolation gave, for the report
    if not options.released.available:
        notes.append(
            Message(
                "No released labs found (--labs): edited check cells and copied solutions are not flagged.",
                "没有找到发布的实验（--labs）：不会标记被改动的检查单元格和抄袭的参考答案。",
            )
        )
    fresh: list[Grade | None] = [None] * len(submissions)
    labs = list(ctx.labs)

    def rows() -> list[Grade]:
        done = [g for g in fresh if g is not None]
        names = {g.file for g in done}
        merged = [g for g in earlier if g.file not in names] + done
        finish(merged, roster, labs, weights, args.points, due, lab)
        return merged

    titles = lab_titles(options.released.labs, labs)

    def save() -> None:
        final = rows()
        notes_now = notes + _lms_notes(final, lab)
        write_all(out, final, assignment=args.assignment, notes=notes_now, titles=titles, lab=lab)

    pending = []
    older = _superseded(submissions, roster, labs)
    for i, sub in enumerate(submissions):
        if i in older:  # a newer file of the same student and lab counts: not run at all
            fresh[i] = older[i]
            continue
        cached = None if args.no_cache else _from_cache(sub, earlier, ctx.digest)
        if cached is not None:
            fresh[i] = cached
        else:
            pending.append((i, sub))
    cached_count = len(submissions) - len(pending) - len(older)
    if cached_count and not args.quiet:
        say(
            Message(
                f"{cached_count} file(s) already graded in {out} (same bytes, same checks): not run again "
                "(--no-cache to run them)",
                f"{out} 中已有 {cached_count} 个文件的成绩（文件相同、检查相同）：不再运行"
                "（加 --no-cache 可重新运行）",
            )
        )
    pool = ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = {pool.submit(grade_submission, s, ctx): i for i, s in pending}
        for done, future in enumerate(as_completed(futures), start=1):
            grade = fresh[futures[future]] = future.result()
            save()
            if not args.quiet:  # one line per submission
                score = "" if grade.score is None else f" {grade.score}/{grade.max}"
                line = (
                    f"[{done}/{len(pending)}] {grade.file}: {grade.status}{score} ({grade.duration_s:.1f} s)"
                )
                print(line, file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        sandbox.kill_all()
        save()
        ctx.close()
        say(
            Message(
                f"interrupted; the grades finished so far are in {out}", f"已中断；已完成的成绩在 {out} 中"
            )
        )
        return 130
    except OSError as exc:
        pool.shutdown(wait=False, cancel_futures=True)
        sandbox.kill_all()
        ctx.close()
        say(_cannot_write(out, exc))
        return USAGE_ERROR
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    ctx.close()
    try:
        save()
    except OSError as exc:
        say(_cannot_write(out, exc))
        return USAGE_ERROR
    final = rows()
    for note in _lms_notes(final, lab):
        say(Message(f"warning: {note.en}", f"警告：{note.zh}"))
    if not args.quiet:
        counts = ", ".join(f"{s} {n}" for s, n in Counter(g.status for g in final).most_common())
        merged = f" (merged with {len(earlier)} earlier row(s))" if earlier else ""
        counts_zh = "，".join(
            f"{STATUS_ZH.get(s, s)} {n} 个" for s, n in Counter(g.status for g in final).most_common()
        )
        merged_zh = f"（含之前的 {len(earlier)} 行）" if earlier else ""
        files = "grades.csv, grades.json, report.html, canvas.csv, moodle.csv, feedback/"
        print(f"{len(final)} row(s){merged}: {counts}.")
        print(f"共 {len(final)} 行{merged_zh}：{counts_zh}。")
        print(f"Grades in {out}: {files}")
        print(f"成绩在 {out} 中：{files}")
    if ctx.tampered:
        say(
            Message(
                f"the grading environment was modified during the run ({ctx.tampered}); reinstall it and "
                "grade the rows marked 'error' again",
                f"运行期间评分环境被改动了（{ctx.tampered}）；请重新安装，再对标为 error 的行重新评分",
            )
        )
        return TAMPERED
    failed = [g for g in fresh if g is not None and g.status == failures.STATUS]
    if failed:
        shown = ", ".join(g.file for g in failed[:5]) + (", …" if len(failed) > 5 else "")
        say(
            Message(
                f"the grader itself failed on {len(failed)} file(s) ({shown}): their rows say "
                f"{failures.STATUS} and why; fix the cause and run again with the same --out (only those are "
                "graded again)",
                f"评分器自身在 {len(failed)} 个文件上出错（{shown}）：这些行的状态是 {failures.STATUS}，"
                "并写明了原因；排除原因后用同一个 --out 再运行一次（只会重新评分这些文件）",
            )
        )
        return GRADER_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(entry())
