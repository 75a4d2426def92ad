"""Rules that one call shows on its own: DK008 (`torch.load` without `map_location`), DK012 (a global
default device with a shuffling DataLoader), DK214 (`mp.spawn` of a notebook function) and the opt-in
style rules DK901 (a hard-coded `"cuda"`) and DK902 (`.cuda()`)."""

from __future__ import annotations

import ast
import re

from devicekit.lint.core import Context
from devicekit.lint.index import walk
from devicekit.lint.names import has_star_kwargs, keyword
from devicekit.lint.saves import (
    SavedHere,
    file_names,
    is_test_file,
    loads_a_schedule,
    loads_data,
    mentions_accelerator,
    saved_on_cpu,
    scope_of,
    test_function,
)
from devicekit.messages import Message

_CUDA_STRING = re.compile(r"^cuda(:\d+)?$")
_SPAWNERS = {
    "torch.multiprocessing.spawn",
    "torch.multiprocessing.start_processes",
    "torch.multiprocessing.Process",
    "multiprocessing.Process",
    "torch.distributed.elastic.multiprocessing.start_processes",
}


def check_calls(ctx: Context) -> None:
    """Run DK008, DK012, DK214, DK901 and DK902 over every call of the file."""
    names = ctx.names
    default_device_calls: list[tuple[ast.Call, bool]] = []  # (call, sets an accelerator as the default)
    shuffling_loaders: list[ast.Call] = []
    loads: list[ast.Call] = []  # torch.load without map_location
    if ctx.wants("DK901"):
        for node in ctx.constants:
            if isinstance(node.value, str) and _CUDA_STRING.match(node.value):
                if not isinstance(ctx.parents.get(node), ast.Compare):  # `device.type == "cuda"` is a test
                    ctx.report(node, "DK901")
    for node in ctx.calls:
        full = names.resolve(node.func) or ""
        if isinstance(node.func, ast.Attribute) and node.func.attr == "cuda":
            ctx.report(node.func, "DK902")
        if full == "torch.load":
            if len(node.args) < 2 and keyword(node, "map_location") is None and not has_star_kwargs(node):
                loads.append(node)
        elif full == "torch.set_default_device" and node.args:
            arg = node.args[0]
            reset = isinstance(arg, ast.Constant) and (arg.value is None or str(arg.value).startswith("cpu"))
            default_device_calls.append((node, not reset))
        elif full == "torch.set_default_tensor_type" and node.args:
            arg = node.args[0]
            text = arg.value if isinstance(arg, ast.Constant) else names.resolve(arg)
            if isinstance(text, str):
                default_device_calls.append((node, "cuda" in text))
        elif full.endswith("DataLoader") and full.startswith("torch.") or full == "DataLoader":
            shuffle = keyword(node, "shuffle")
            if (
                isinstance(shuffle, ast.Constant)
                and shuffle.value is True
                and keyword(node, "generator") is None
                and not has_star_kwargs(node)
            ):
                shuffling_loaders.append(node)
        elif ctx.notebook and full in _SPAWNERS:
            target = node.args[0] if node.args and not full.endswith("Process") else keyword(node, "target")
            if isinstance(target, ast.Name) and target.id in names.functions:
                ctx.report(node, "DK214")
    if loads and ctx.wants("DK008"):
        _loads_without_map_location(ctx, loads)
    # In source order: a loader made while an accelerator is the default (set, and not reset since).
    if any(on for _, on in default_device_calls):
        events = sorted(
            [(_position(call), on) for call, on in default_device_calls]
            + [(_position(loader), loader) for loader in shuffling_loaders],
            key=lambda event: event[0],
        )
        active = False
        for _, what in events:
            if isinstance(what, bool):
                active = what
            elif active:
                ctx.report(what, "DK012")
    if ctx.project is not None and ctx.source is not None:
        _default_reaches_a_loader(ctx, default_device_calls, shuffling_loaders)
    if shuffling_loaders and not default_device_calls and ctx.project is not None:
        elsewhere = imported_default_device(ctx.project, ctx.source)
        if elsewhere is not None:
            path, line = elsewhere
            detail = Message(
                f"`{path}`, which this file imports, makes an accelerator the default device at line {line}",
                f"本文件导入的 `{path}` 在第 {line} 行把加速器设成了默认设备",
            )
            for loader in shuffling_loaders:
                ctx.report(loader, "DK012", detail)


def _default_reaches_a_loader(
    ctx: Context, setters: list[tuple[ast.Call, bool]], loaders_here: list[ast.Call]
) -> None:
    """DK012 across files (round 5): a function sets an accelerator as the default and then calls a
    function of the project that builds a shuffling `DataLoader` (itself, or through the functions it
    calls), as pyro's SS-VAE example does with `setup_data_loaders` in another module. Reported at the
    setter, which is what to change; a loader of this file is reported where it is made, as before."""
    if not ctx.wants("DK012"):
        return
    for setter, on in setters:
        if not on:
            continue
        scope = scope_of(setter, ctx.parents)
        body_calls = [
            c
            for c in ctx.calls
            if scope_of(c, ctx.parents) is scope and _position(c) > _position(setter) and c is not setter
        ]
        if any(_position(loader) > _position(setter) for loader in loaders_here):
            continue  # reported at the loader itself
        for call in sorted(body_calls, key=_position):
            if any(reset is call for reset, is_on in setters if not is_on):
                break  # the default is reset before anything else runs
            found = ctx.project.lookup(ctx.names.resolve(call.func) or "", ctx.source)
            if found is None or found[0] is ctx.source:
                continue
            loader = _shuffling_loader_in(ctx.project, found[0], found[1], set(), 3)
            if loader is not None:
                path, line = loader
                callee = ast.unparse(call.func)
                detail = Message(
                    f"`{callee}` (called at line {call.lineno}) makes a shuffling `DataLoader` at line "
                    f"{line} of `{path}`, under this default",
                    f"第 {call.lineno} 行调用的 `{callee}` 在 `{path}` 第 {line} 行创建了打乱顺序的 "
                    f"`DataLoader`，创建时这个默认设备仍然生效",
                )
                ctx.report(setter, "DK012", detail)
                break


def _shuffling_loader_in(project, source, function, seen: set[int], depth: int) -> tuple[str, int] | None:
    """The path and line of a `DataLoader(..., shuffle=True)` without a generator in a project function,
    or in the project functions it calls (up to `depth` calls deep)."""
    if id(function) in seen or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    seen.add(id(function))
    names = source.names
    calls = [n for n in walk(function) if isinstance(n, ast.Call)]
    for call in calls:
        full = names.resolve(call.func) or ""
        if (full.endswith("DataLoader") and full.startswith("torch.")) or full == "DataLoader":
            shuffle = keyword(call, "shuffle")
            if (
                isinstance(shuffle, ast.Constant)
                and shuffle.value is True
                and keyword(call, "generator") is None
                and keyword(call, "sampler") is None
            ):
                return source.path, call.lineno
    if depth <= 1:
        return None
    for call in calls:
        found = project.lookup(names.resolve(call.func) or "", source)
        if found is not None:
            inner = _shuffling_loader_in(project, found[0], found[1], seen, depth - 1)
            if inner is not None:
                return inner
    return None


def _sets_accelerator_default(names, call: ast.Call) -> bool:
    """`torch.set_default_device("cuda")`, `torch.set_default_tensor_type("torch.cuda.FloatTensor")`."""
    full = names.resolve(call.func) or ""
    if not call.args or full not in ("torch.set_default_device", "torch.set_default_tensor_type"):
        return False
    arg = call.args[0]
    text = arg.value if isinstance(arg, ast.Constant) else names.resolve(arg)
    if full == "torch.set_default_device":
        return not (isinstance(arg, ast.Constant) and (arg.value is None or str(arg.value).startswith("cpu")))
    return isinstance(text, str) and "cuda" in text


def imported_default_device(project, source, depth: int = 3) -> tuple[str, int] | None:
    """A file of the project that this one imports (directly or through up to `depth` imports) and that
    makes an accelerator the default device at its top level, when the module is imported: its path and
    the line. The default is global, so a shuffling DataLoader here runs under it (DK012)."""
    if source is None:
        return None
    setters = project.cache.setdefault("default-device", {})
    seen = {source.path}
    frontier = [source]
    for _ in range(depth):
        following = []
        for current in frontier:
            for full in sorted(set(current.names.aliases.values())):  # sorted: the same file every run
                parts = full.split(".")
                for cut in (len(parts), len(parts) - 1):
                    target = project.module(".".join(parts[:cut]), current) if cut > 0 else None
                    if target is not None and target.path not in seen:
                        seen.add(target.path)
                        following.append(target)
                        if target.path not in setters:
                            setters[target.path] = next(
                                (
                                    node.value.lineno
                                    for node in target.tree.body
                                    if isinstance(node, ast.Expr)
                                    and isinstance(node.value, ast.Call)
                                    and _sets_accelerator_default(target.names, node.value)
                                ),
                                None,
                            )
                        if setters[target.path] is not None:
                            return target.path, setters[target.path]
                        break
        frontier = following
    return None


def _position(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


#: Why DK008 asks although it cannot tell a GPU checkpoint from a CPU one: the save is not in view.
_UNSEEN_SAVE = Message(
    "nothing in this code shows where the file was saved, so it may be a GPU checkpoint: `torch.load` "
    "puts every tensor back on the device it was saved from",
    "从这段代码看不出文件是在哪里保存的，它可能是在 GPU 上保存的检查点，"
    "而 `torch.load` 会把每个张量放回保存时所在的设备",
)


def _loads_without_map_location(ctx: Context, loads: list[ast.Call]) -> None:
    """DK008, except for a file the same function saved above the load, in test functions, and anywhere
    in a test file that never names an accelerator (see `devicekit.lint.saves`)."""
    text = "\n".join(ctx.lines)
    if is_test_file(ctx.path) and not mentions_accelerator(text):
        return
    scans: dict[int, SavedHere] = {}
    from_cpu = saved_on_cpu(ctx.names, ctx.calls)
    for load in loads:
        if from_cpu and load.args and file_names(load.args[0]) & from_cpu:
            continue
        if load.args and (loads_data(load.args[0]) or loads_a_schedule(load, ctx.parents)):
            continue  # data a preparation script saved (on the CPU), a scheduler's numbers
        scope = scope_of(load, ctx.parents)
        if test_function(scope):  # a test loads what it or its fixtures saved, on the machine it runs on
            continue
        key = id(scope)
        if key not in scans:
            calls = ctx.function_calls.get(scope if scope is not None else ctx.tree, [])
            scans[key] = SavedHere(ctx.names, scope if scope is not None else ctx.tree, calls)
        if not scans[key].covers(load):
            ctx.report(load, "DK008", _UNSEEN_SAVE)
