"""devicekit speaks the learner's language: every text it raises, warns or prints exists in en and zh.

Two halves:

* a static scan (AST) of ``src/devicekit``: a ``raise``, ``warn``, ``print`` or ``add_note`` whose text is
  a string literal not going through the message layer (`devicekit.messages.Message`) fails, as does a
  raise of an exception class that cannot carry ``.en``/``.zh``, and a ``Message`` whose Chinese side is
  not Chinese or breaks the course's typography;
* runtime checks of the texts learners read (issue 23): check_devices, locate_mismatch, strict_devices,
  UnknownDeviceError / DeviceManager("gpu"), to_device's argument errors, distributed.spawn's errors.
"""

from __future__ import annotations

import ast
import importlib
import pickle
import re
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import devicekit
from devicekit import DeviceManager, DeviceMismatchError, UnknownDeviceError, check_devices, to_device
from devicekit.lang import using_language
from devicekit.messages import LocalisedError, Message, Text, localised

SRC = Path(devicekit.__file__).resolve().parent
# Moving out of devicekit (to devicekit_labs, by the lead) and not devicekit's runtime: the lab checks
# already give both languages through their own Fail(en, zh).
NOT_SCANNED = {"exercises", "dist_workers.py"}
# (file, function): sites owned by another change, to be converted there. Keep this short.
ALLOWED: set[tuple[str, str]] = set()
LAYER_CALLS = {"Message", "Text", "localised", "warn", "_describe", "_form_error", "_unknown_language"}
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
WORD = re.compile(r"[A-Za-z]{2,}")


def _sources() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if not (set(p.relative_to(SRC).parts) & NOT_SCANNED)]


def _literal_text(node: ast.AST) -> str:
    """The constant text of a str literal or an f-string (its placeholders left out)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_literal_text(v) for v in node.values)
    if isinstance(node, ast.BinOp):  # "a" + "b"
        return _literal_text(node.left) + _literal_text(node.right)
    return ""


def _bare_literals(node: ast.AST) -> list[str]:
    """English-looking string literals in ``node`` that do not sit inside a message-layer call."""
    found: list[str] = []

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Call) and _call_name(n) in LAYER_CALLS:
            return
        if isinstance(n, (ast.Constant, ast.JoinedStr)):
            text = _literal_text(n)
            if WORD.search(text):
                found.append(text)
            return
        for child in ast.iter_child_nodes(n):
            visit(child)

    for arg in [*getattr(node, "args", []), *(k.value for k in getattr(node, "keywords", []))]:
        visit(arg)
    return found


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _localised_names(module: object) -> set[str]:
    """Names in ``module`` that make exceptions with .en/.zh: LocalisedError classes and helpers
    annotated to return one."""
    names = set()
    for name, value in vars(module).items():
        if isinstance(value, type) and issubclass(value, LocalisedError):
            names.add(name)
        elif callable(value) and not isinstance(value, type):
            ret = getattr(value, "__annotations__", {}).get("return")
            if isinstance(ret, str) and ret.split(".")[-1] in {"UnknownDeviceError", "DeviceMismatchError"}:
                names.add(name)
    return names


def _module_of(path: Path) -> object:
    parts = ("devicekit", *path.relative_to(SRC).with_suffix("").parts)
    return importlib.import_module(".".join(p for p in parts if p != "__init__"))


def _functions(tree: ast.AST):
    """(enclosing function name, node) for every node."""
    stack: list[tuple[str, ast.AST]] = [("<module>", tree)]
    while stack:
        owner, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else owner
            yield name, child
            stack.append((name, child))


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _module_of(path)
    localised_here = _localised_names(module) | LAYER_CALLS
    rel = path.relative_to(SRC).as_posix()
    out = []
    for owner, node in _functions(tree):
        if (rel, owner) in ALLOWED:
            continue
        where = f"{rel}:{getattr(node, 'lineno', '?')} ({owner})"
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            call, name = node.exc, _call_name(node.exc)
            bare = _bare_literals(call)
            if bare:
                out.append(f"{where}: raise {name}(...) with English-only text {bare[0]!r}")
            elif name.startswith("_Stop"):
                continue  # locate's private stop signal: caught by devicekit itself, never shown
            elif name not in localised_here and (call.args or call.keywords):
                if not all(isinstance(a, ast.Name) for a in call.args) or name != "AttributeError":
                    out.append(f"{where}: raise {name}(...) outside the message layer (no .en/.zh)")
        elif isinstance(node, ast.Call) and _call_name(node) in {"print", "warn", "add_note"}:
            if _call_name(node) == "warn" and isinstance(node.func, ast.Name):
                continue  # devicekit.messages.warn: checked as a Message call below
            bare = _bare_literals(node)
            if bare:
                out.append(f"{where}: {_call_name(node)}() with English-only text {bare[0]!r}")
        if isinstance(node, ast.Call) and _call_name(node) == "Message" and len(node.args) == 2:
            en, zh = (_literal_text(a) for a in node.args)
            # an empty Chinese side is a deliberate omission of one word (the origin "device " reads
            # better without it in Chinese); anything longer needs Chinese
            omitted = zh == "" and len(WORD.findall(en)) <= 1
            if WORD.search(en) and not CJK.search(zh) and en != zh and not omitted:
                out.append(f"{where}: Message whose Chinese text has no Chinese: {zh!r}")
            for bad, why in (
                ("。 (", "'。 (' mixes"),
                ("））", "doubled brackets"),
                ("（（", "doubled brackets"),
            ):
                if bad in zh:
                    out.append(f"{where}: Message zh text has {why}: {zh!r}")
            if re.search(r"[\u4e00-\u9fff][:,;] |[:,;] [\u4e00-\u9fff]", zh):
                out.append(f"{where}: Message zh text uses a half-width : , ; next to Chinese: {zh!r}")
    return out


def test_every_raise_warn_and_print_in_devicekit_goes_through_the_message_layer():
    problems = [p for path in _sources() for p in _problems(path)]
    assert not problems, "texts without Chinese (use devicekit.messages):\n" + "\n".join(problems)


def test_the_scan_catches_an_english_only_raise(tmp_path):
    """The scan itself can fail: a raise with a bare English literal is reported."""
    tree = ast.parse('def f(x):\n    raise TypeError(f"bad value {x}")\n')
    raise_node = next(n for n in ast.walk(tree) if isinstance(n, ast.Raise))
    assert _bare_literals(raise_node.exc) == ["bad value "]
    ok = ast.parse('raise localised(TypeError, Message("bad", "不对"))\n')
    assert _bare_literals(next(n for n in ast.walk(ok) if isinstance(n, ast.Raise)).exc) == []


# ---- the layer itself ------------------------------------------------------------------------------


@pytest.fixture
def lang(monkeypatch):
    def set_to(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv("DEVICEKIT_LANG", raising=False)
        else:
            monkeypatch.setenv("DEVICEKIT_LANG", value)

    set_to(None)
    devicekit.lang.set_language(None)
    return set_to


def test_a_message_follows_the_language_each_time_it_is_shown(lang):
    msg = Message("hello", "你好")
    exc = localised(TypeError, msg)
    assert type(exc) is TypeError and (exc.en, exc.zh) == ("hello", "你好")
    assert str(exc) == "hello\n你好"  # unknown: both, English first
    lang("zh")
    assert str(exc) == "你好"
    lang("en")
    assert str(exc) == "hello"
    with using_language("zh"):
        assert str(exc) == "你好"
    again = pickle.loads(pickle.dumps(exc))
    assert (again.en, again.zh) == ("hello", "你好")


def test_text_is_a_str_that_keeps_both_languages(lang):
    lang("zh")
    text = Text(Message("fix it", "修好它"))
    assert text == "修好它" and "修好" in text and (text.en, text.zh) == ("fix it", "修好它")
    assert pickle.loads(pickle.dumps(text)).en == "fix it"


def test_a_warning_carries_both_languages(lang):
    lang("zh")
    with pytest.warns(UserWarning, match="批次里出现模型") as record:
        to_device({"m": nn.Linear(1, 1)}, "meta")
    assert "did NOT move" in record[0].message.en and "没有移动" in record[0].message.zh


# ---- the texts learners read ------------------------------------------------------------------------


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.mask = torch.ones(3)

    def forward(self, x):
        return self.fc(x) * self.mask


def _assert_zh_typography(text: str, none_ok: bool = False) -> None:
    assert CJK.search(text), text
    assert "。 (" not in text and "））" not in text and "（（" not in text, text
    assert none_ok or "None" not in text, text  # a missing value is named, never printed as None
    assert not re.search(r"[\u4e00-\u9fff][:,] |[：，、] ", text), text
    assert not re.search(r"\b(?:cpu|meta|cuda(?::\d+)?|mps), (?:cpu|meta|cuda|mps)", text), (
        text
    )  # 、 in lists


def _raised(fn) -> BaseException:
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def _all_languages(exc: BaseException, lang) -> dict[str, str]:
    assert isinstance(exc.en, str) and isinstance(exc.zh, str) and exc.en != exc.zh
    out = {}
    for value in ("en", "zh", None):
        lang(value)
        out[str(value)] = str(exc)
    assert out["en"] == exc.en and out["zh"] == exc.zh and out["None"] == f"{exc.en}\n{exc.zh}"
    return out


def test_check_devices_report_and_error_in_both_languages(lang):
    model = _Net()
    lang("zh")
    report = str(check_devices(model, torch.ones(2, 3)))
    assert report.startswith("check_devices：正常。参数 2 个、缓冲区 0 个、输入张量 1 个，全部在 cpu 上。")
    assert "警告（现在没问题，下一次 model.to() 之后就会出错）：" in report
    _assert_zh_typography(report)
    model.fc.to("meta")
    err = _raised(lambda: check_devices(model, torch.ones(2, 3)))
    assert isinstance(err, DeviceMismatchError)
    texts = _all_languages(err, lang)
    assert texts["en"].startswith("check_devices: 2 tensors not on the expected device meta")
    assert texts["zh"].startswith(
        "check_devices：有 2 个张量不在预期的设备 meta 上（预期设备：模型大部分参数所在的设备）："
    )
    assert "  - 属性 mask：在 cpu 上，应在 meta 上" in texts["zh"]
    _assert_zh_typography(texts["zh"])
    again = pickle.loads(pickle.dumps(err))  # DataLoader workers pickle errors
    assert again.zh == err.zh and again.findings == err.findings
    lang("zh")
    assert str(err.findings[0]) == "属性 'mask' 在 cpu 上，应在 meta 上"


def test_locate_mismatch_report_in_both_languages(lang):
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3))
    model[2].to("meta")
    lang("zh")
    report = devicekit.locate_mismatch(model, torch.ones(2, 3))
    text = str(report)
    assert text.startswith("设备不匹配，位置：模块 '2'（Linear）；涉及的设备：cpu、meta")
    assert "它多半是在 model.to(...) 之后才创建或替换的" in text
    _assert_zh_typography(text)
    lang("en")
    assert str(report).startswith("Device mismatch in module '2' (Linear); devices involved: cpu, meta")
    assert report.detail.en.splitlines()[0] in str(report) and report.detail.zh.splitlines()[0] in text
    en, zh = report.detail.en, report.detail.zh
    assert en.startswith("Inputs of this module: args[0] on cpu; its own tensors (weight, bias)")
    assert zh.startswith("这个模块的输入：args[0] 在 cpu 上；它自己的张量（weight、bias）在 meta 上。")


def test_locate_mismatch_names_the_model_without_doubled_brackets(lang):
    model = nn.Sequential(nn.Linear(3, 3)).to("meta")
    lang("zh")
    text = str(devicekit.locate_mismatch(model, torch.ones(2, 3)))
    assert "最先用到它的是 '0'（Linear）。" in text
    _assert_zh_typography(text)


def test_strict_devices_error_in_both_languages(lang):
    def mixed():
        with devicekit.strict_devices():
            torch.ones(2, 2, device="meta") @ torch.ones(2, 2)

    texts = _all_languages(_raised(mixed), lang)
    assert texts["zh"].startswith(
        "strict_devices：aten.mm.default 收到了不同设备上的张量："
        "meta（第 0 个参数 'self'）、cpu（第 1 个参数 'mat2'）。"
    )
    _assert_zh_typography(texts["zh"])
    assert texts["en"].startswith("strict_devices: aten.mm.default got tensors on different devices: meta")


@pytest.mark.parametrize(
    "make, en_start, zh_start",
    [
        (
            lambda: DeviceManager("gpu"),
            "device 'gpu' is not a device name PyTorch knows.",
            "'gpu' 不是 PyTorch 认识的设备名。",
        ),
        (
            lambda: to_device(torch.ones(1), 1.5),
            "device of type float is not a device.",
            "float 类型的值不是设备。",
        ),
        (
            lambda: to_device(torch.ones(1), -1),
            "device -1 is not an accelerator index",
            "-1 不是加速器编号（应为 0 到 127）",
        ),
        (
            lambda: to_device(torch.ones(1), "cpu", non_blocking=1),
            "non_blocking must be None",
            "non_blocking 必须是 None、True 或 False",
        ),
        (lambda: to_device({"a": 1}, "cpu", skip_keys=[[1]]), "skip_keys must be", "skip_keys 必须是"),
    ],
)
def test_device_and_to_device_errors_in_both_languages(lang, make, en_start, zh_start):
    err = _raised(make)
    texts = _all_languages(err, lang)
    assert texts["en"].startswith(en_start) and texts["zh"].startswith(zh_start)
    _assert_zh_typography(texts["zh"], none_ok="None" in zh_start)


def test_unknown_device_lists_what_this_machine_has_in_chinese(lang):
    err = _raised(lambda: DeviceManager("gpu"))
    assert isinstance(err, UnknownDeviceError)
    assert "本机可用的设备：" in err.zh and "cpu、meta" in err.zh
    assert "设备可以是：torch.device；" in err.zh


def test_a_reference_cycle_error_in_both_languages(lang):
    loop: list = [torch.ones(1)]
    loop.append(loop)
    texts = _all_languages(_raised(lambda: to_device(loop, "meta")), lang)
    assert "batch[1] is the same object as batch" in texts["en"]
    assert texts["zh"].startswith("to_device：批次里有引用环：batch[1] 和包含它的 batch 是同一个对象。")


def test_spawn_errors_in_both_languages(lang):
    from devicekit.distributed import spawn

    texts = _all_languages(_raised(lambda: spawn(lambda rank: None)), lang)
    assert "lambdas and functions defined inside" in texts["en"]
    assert re.match(r"spawn\(\) 无法把 '[\w.<>]*<lambda>' 发送给另一个进程：lambda 和", texts["zh"])
    texts = _all_languages(_raised(lambda: spawn(print, nprocs=0)), lang)
    assert texts["zh"] == "nprocs 至少要是 1，收到的是 0"


def test_distributed_setup_errors_in_both_languages(lang, monkeypatch):
    from devicekit import distributed

    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "2")
    err = _raised(distributed.setup)
    assert isinstance(err, distributed.DistributedSetupError)
    texts = _all_languages(err, lang)
    assert texts["zh"] == "RANK=3 和 WORLD_SIZE=2 对不上：需要 0 <= RANK < WORLD_SIZE"


def test_autocast_error_in_both_languages(lang):
    texts = _all_languages(_raised(lambda: devicekit.autocast("meta")), lang)
    assert texts["zh"].startswith("设备类型 'meta' 没有 autocast")


def test_prepare_warns_in_the_learners_language(lang):
    lang("zh")
    model, other = nn.Linear(2, 2), nn.Linear(2, 2)
    optimizer = torch.optim.SGD(other.parameters(), lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        devicekit.prepare(model, "cpu", optimizer)
    assert [str(w.message) for w in caught][0].startswith("prepare：优化器里有 2 个参数不属于这个 Linear")
