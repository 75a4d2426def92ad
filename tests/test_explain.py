"""Tests for devicekit.explain and the error catalog it reads (src/devicekit/catalog.json).

The catalog is data shared with the atlas pages and the browser widget, so besides
the behaviour of ``explain()`` these tests check that the catalog stays complete,
traceable (every example names a torch version and a source) and portable (every
regex means the same in Python ``re`` and JavaScript ``RegExp``).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course_tools.paths import ROOT
from devicekit.catalog import is_device_error
from devicekit.explain import FAMILIES, Explanation, explain, load_catalog

CATALOG = load_catalog()
FAMILY_BY_ID = {fam["id"]: fam for fam in CATALOG["families"]}
# The lesson and lab pages that exist: a family's "lab" and "lesson" must name one of them.
LABS = {path.stem for path in (ROOT / "docs" / "lessons").glob("[0-9]*.md") if ".zh" not in path.name} & {
    path.stem for path in (ROOT / "labs").glob("[0-9]*.ipynb") if ".zh" not in path.name
}
BACKENDS = {"cpu", "cuda", "mps", "meta", "xpu", "hip"}


def _example_text(example: dict) -> str:
    """The text a learner would paste: traceback context (if recorded) plus the message."""
    context = example.get("context")
    return f"{context}\n{example['message']}" if context else example["message"]


def _all_regex_specs() -> list[tuple[str, dict]]:
    """Every regex in the catalog, with a label saying where it lives."""
    specs: list[tuple[str, dict]] = []
    for fam in CATALOG["families"]:
        for i, pat in enumerate(fam["patterns"]):
            specs.append((f"{fam['id']}.patterns[{i}]", pat))
            if "ignore" in pat:
                specs.append((f"{fam['id']}.patterns[{i}].ignore", {"regex": pat["ignore"]}))
        for i, pat in enumerate(fam.get("context", {}).get("patterns", [])):
            specs.append((f"{fam['id']}.context[{i}]", pat))
        for i, det in enumerate(fam.get("details", [])):
            specs.append((f"{fam['id']}.details[{i}]", det))
    for i, rule in enumerate(CATALOG["device_rules"]):
        specs.append((f"device_rules[{i}]", rule))
    for i, hint in enumerate(CATALOG["not_device"]["hints"]):
        specs.append((f"not_device.hints[{i}]", hint))
    return specs


EXAMPLES = [
    pytest.param(fam["id"], ex, id=f"{fam['id']}-{i}")
    for fam in CATALOG["families"]
    for i, ex in enumerate(fam["examples"])
]


# --- the catalog ---------------------------------------------------------------------------------


def test_every_family_present_exactly_once_in_match_order():
    ids = [fam["id"] for fam in CATALOG["families"]]
    assert ids == list(FAMILIES)
    assert len(set(ids)) == len(ids) >= 26


@pytest.mark.parametrize("family_id", FAMILIES)
def test_family_texts_complete(family_id):
    fam = FAMILY_BY_ID[family_id]
    for lang in ("en", "zh"):
        assert fam["title"][lang].strip()
        assert fam["cause"][lang].strip()
        assert fam["fix"][lang].strip()
    assert fam["fix"]["code"].strip()
    assert fam["lab"] in LABS
    assert fam["lesson"] in LABS
    assert fam["patterns"], "a family needs at least one pattern"
    assert fam["examples"], "a family needs at least one traceable example"
    for text in (fam["title"]["zh"], fam["cause"]["zh"], fam["fix"]["zh"]):
        assert re.search(r"[\u4e00-\u9fff]", text), "zh text must be Chinese"


@pytest.mark.parametrize("label,spec", _all_regex_specs(), ids=lambda v: v if isinstance(v, str) else "")
def test_regex_is_portable(label, spec):
    """Valid in Python, and free of syntax JavaScript lacks or reads differently."""
    regex = spec["regex"]
    assert spec.get("flags") in (None, "i"), label
    re.compile(regex)
    forbidden = {
        "(?P": "named group",
        "(?<=": "lookbehind",
        "(?<!": "lookbehind",
        "(?#": "comment group",
        "(?>": "atomic group",
        "(?(": "conditional group",
        "\\A": "\\A anchor",
        "\\Z": "\\Z anchor",
        "\\z": "\\z anchor",
    }
    for token, what in forbidden.items():
        assert token not in regex, f"{label}: {what} is Python-only"
    assert not re.search(r"\(\?[aiLmsux-]+[:)]", regex), f"{label}: inline flags; use 'flags': 'i'"
    assert not re.search(r"(?<!\\)[*+?}]\+", regex), f"{label}: possessive quantifier"


def _mutations(text: str) -> list[str]:
    """A text as a paste may garble it: other cases, look-alike letters that JavaScript's "iu" flags fold
    (long s, the Kelvin sign, dotted I), U+FEFF and other spaces Python's ASCII \\s does not match, and line
    separators that JavaScript's "." does not cross."""
    return [
        text.upper(),
        text.lower(),
        text.replace("s", "\u017f"),
        text.replace("k", "\u212a").replace("K", "\u212a"),
        text.replace("i", "\u0130"),
        text.replace(" ", "\ufeff", 3),
        "\ufeff" + text,
        text.replace(" ", "\u00a0"),
        text.replace(" ", "\u3000", 2),
        text.replace(" ", "\r", 1),
        text.replace(" ", "\u2028", 1),
        text.replace(" ", "\u2029 ", 1),
    ]


REGEX_TEXTS = [ex["message"] for fam in CATALOG["families"] for ex in fam["examples"]]
MUTATED_TEXTS = [m for text in REGEX_TEXTS for m in _mutations(text)] + [
    "TEN\u017fORS MU\u017fT BE ON THE SAME DEVICE",
    "\u212aernel image: no \u212aernel image is available for execution on the device",
    "Expected all tensors to be on the same device,\ufeffbut found at least two devices, cuda:0 and cpu!",
    "Expected all tensors to be on the same device.\r_fused_adam",
    "Expected all tensors to be on the same device.\u2028 optimizer",
]


def test_regexes_compile_and_agree_in_javascript():
    """Every catalog regex, as the widget compiles it (explainer.js compileRegex), finds the same texts as
    devicekit.catalog's re.compile(..., re.ASCII [| re.IGNORECASE]) in every example and every mutation of
    one (look-alike letters, U+FEFF, other spaces, line separators)."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node is not installed")
    specs = [spec for _, spec in _all_regex_specs()]
    texts = REGEX_TEXTS + MUTATED_TEXTS
    script = (
        "const w = require(process.argv[1]); const d = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const out = d.specs.map(s => { const r = w.compileRegex(s.regex, s.flags === 'i');"
        " return d.texts.map(t => r.test(t)); });"
        "process.stdout.write(JSON.stringify(out));"
    )
    payload = json.dumps({"specs": specs, "texts": texts})
    widget = str(ROOT / "docs" / "assets" / "explainer.js")
    done = subprocess.run(
        [node, "-e", script, widget], input=payload, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    js = json.loads(done.stdout)
    differences = []
    for spec, js_row in zip(specs, js, strict=True):
        rx = re.compile(spec["regex"], re.ASCII | (re.IGNORECASE if spec.get("flags") == "i" else 0))
        differences += [
            (spec["regex"][:60], text[:80])
            for text, found in zip(texts, js_row, strict=True)
            if bool(rx.search(text)) != found
        ]
    assert not differences, differences[:10]


def test_the_widgets_own_flags_would_disagree_on_the_mutations():
    """The check above can fail: compiled with JavaScript's plain "iu" flags (what the widget did before
    issue 25), the regexes disagree with Python on some mutated texts."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node is not installed")
    specs = [spec for _, spec in _all_regex_specs() if spec.get("flags") == "i" or "\\s" in spec["regex"]]
    script = (
        "const d = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const out = d.specs.map(s => { const r = new RegExp(s.regex, 'u' + (s.flags || ''));"
        " return d.texts.map(t => r.test(t)); });"
        "process.stdout.write(JSON.stringify(out));"
    )
    payload = json.dumps({"specs": specs, "texts": MUTATED_TEXTS})
    done = subprocess.run([node, "-e", script], input=payload, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    disagree = 0
    for spec, js_row in zip(specs, json.loads(done.stdout), strict=True):
        rx = re.compile(spec["regex"], re.ASCII | (re.IGNORECASE if spec.get("flags") == "i" else 0))
        disagree += sum(bool(rx.search(t)) != found for t, found in zip(MUTATED_TEXTS, js_row, strict=True))
    assert disagree > 0


def test_no_caseless_pattern_uses_a_backreference():
    """The widget turns "i" into [aA] classes; a backreference would then compare case-sensitively."""
    for label, spec in _all_regex_specs():
        if spec.get("flags") == "i":
            assert not re.search(r"\\[1-9]", spec["regex"]), label


@pytest.mark.parametrize("family_id,example", EXAMPLES)
def test_example_is_traceable(family_id, example):
    assert example["message"].strip()
    assert example["torch"].strip(), "every example records the torch version(s) it comes from"
    assert example["backend"] in BACKENDS
    source = example["source"]
    assert (
        source.startswith("https://github.com/")
        or "torch 2.13.0" in source
        or "pytorch/pytorch" in source
        or _captured_on_cuda(example["message"], source)
    )


def _captured_on_cuda(message: str, source: str) -> bool:
    """A message captured on a GPU machine: results/cuda-messages.json holds it verbatim under that case.

    A case run in a child process (``child_cases``: a device-side assert, a fork) keeps the tail of its
    stderr; the message must be one of those lines.
    """
    found = re.search(r"results/cuda-messages\.json \(scripts/cuda_messages\.py\), case ([\w-]+)", source)
    if not found:
        return False
    captured = json.loads((ROOT / "results" / "cuda-messages.json").read_text(encoding="utf-8"))
    child = captured.get("child_cases", {}).get(found.group(1))
    if child is not None:
        return message in (line.strip() for line in child["stderr_tail"])
    case = captured["cases"][found.group(1)]
    # "RuntimeError: ..." for builtins, "torch.OutOfMemoryError: ..." as the traceback prints it
    return message.split(": ", 1)[-1] == case["message"] and message.startswith(
        (case["type"].rsplit(".", 1)[-1], case["type"].removeprefix("builtins."))
    )


def test_zh_uses_the_course_terms():
    """The glossary terms appear, and Taiwanese/odd variants do not."""
    zh = json.dumps(
        [[f["title"]["zh"], f["cause"]["zh"], f["fix"]["zh"]] for f in CATALOG["families"]],
        ensure_ascii=False,
    )
    zh += json.dumps(CATALOG["not_device"], ensure_ascii=False)
    for term in (
        "设备",
        "加速器",
        "张量",
        "显存",
        "主机内存",
        "缓冲区（buffer）",
        "设备不匹配",
        "混合精度（AMP）",
        "梯度缩放",
        "分布式数据并行（DDP）",
        "进程组",
        "检查点",
        "回溯信息（traceback）",
    ):
        assert term in zh, term
    for wrong in ("装置", "張量", "檢查點", "显卡内存"):
        assert wrong not in zh, wrong


def test_load_catalog_returns_a_copy():
    first = load_catalog()
    first["families"].clear()
    assert load_catalog()["families"]


# --- classification -----------------------------------------------------------------------------


@pytest.mark.parametrize("family_id,example", EXAMPLES)
def test_every_example_classifies_to_its_family(family_id, example):
    result = explain(_example_text(example))
    assert result.family == family_id
    assert result.lab == FAMILY_BY_ID[family_id]["lab"]
    for text in (result.en, result.zh):
        assert "[[" not in text and "{devices}" not in text and "{first}" not in text


@pytest.mark.parametrize(
    "message,devices",
    [
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cuda:0 and cpu!",
            ("cuda:0", "cpu"),
        ),
        (
            "Expected all tensors to be on the same device, but got mat1 is on cpu, different from other "
            "tensors "
            "on cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
            ("cpu", "cuda:0"),
        ),
        (
            "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and "
            "cuda:1! "
            "(when checking argument for argument index in method wrapper_CUDA_scatter__value)",
            ("cuda:0", "cuda:1"),
        ),
        ("RuntimeError: Tensor on device meta is not on the expected device cpu!", ("meta", "cpu")),
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "mps:0 and cpu!",
            ("mps:0", "cpu"),
        ),
        (
            "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same",
            ("cpu", "cuda"),
        ),
        (
            "Input type (CPUFloatType) and weight type (CUDAFloatType) should be the same or input should be "
            "a MKLDNN tensor and weight is a dense tensor",
            ("cpu", "cuda"),
        ),
        (
            "Input type (torch.mps.FloatTensor) and weight type (torch.FloatTensor) should be the same",
            ("mps", "cpu"),
        ),
        (
            "Input and hidden tensors are not at the same device, found input tensor at cuda:0 and hidden "
            "tensor at cpu",
            ("cuda:0", "cpu"),
        ),
        (
            "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor "
            "to host memory first.",
            ("cuda:0",),
        ),
        (
            "RuntimeError: Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() "
            "is 1. "
            "Please use torch.load with map_location to map your storages to an existing device.",
            ("cuda:1",),
        ),
        (
            "module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of "
            "them "
            "on device: cpu",
            ("cuda:0", "cpu"),
        ),
        ("Expected a 'cuda' device type for generator but found 'cpu'", ("cuda", "cpu")),
        (
            "but got device_ids [1], output_device 1, and module parameters {device(type='cuda', index=0), "
            "device(type='cuda', index=1)}. DistributedDataParallel device_ids and output_device arguments "
            "only "
            "work with single-device/multiple-device GPU modules or CPU modules",
            ("cuda:0", "cuda:1"),
        ),
        (
            "Expected tensor for argument #1 'input' to have the same device as tensor for argument #2 "
            "'weight'; "
            "but device 0 does not equal 1 (while checking arguments for cudnn_convolution)",
            ("cuda:0", "cuda:1"),
        ),
        ("indices should be either on cpu or on the same device as the indexed tensor (xpu:1)", ("xpu:1",)),
    ],
)
def test_devices_extracted_in_order(message, devices):
    assert explain(message).devices == devices


@pytest.mark.parametrize(
    "message,family",
    [
        # differ in device (and maybe dtype): conv-input-weight
        (
            "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be "
            "the same",
            "conv-input-weight",
        ),
        (
            "Input type (torch.cuda.HalfTensor) and weight type (torch.FloatTensor) should be the same",
            "conv-input-weight",
        ),
        (
            "Input type (CPUFloatType) and weight type (CUDAFloatType) should be the same or input should "
            "be a "
            "MKLDNN tensor and weight is a dense tensor",
            "conv-input-weight",
        ),
        # same device, different dtype: dtype-mismatch
        (
            "RuntimeError: Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) "
            "should be "
            "the same",
            "dtype-mismatch",
        ),
        (
            "RuntimeError: Input type (torch.FloatTensor) and weight type (torch.HalfTensor) should be the "
            "same "
            "or input should be a MKLDNN tensor and weight is a dense tensor",
            "dtype-mismatch",
        ),
        ("RuntimeError: Input type (float) and bias type (c10::Half) should be the same", "dtype-mismatch"),
        ("Input type (float) and bias type (struct c10::Half) should be the same", "dtype-mismatch"),
    ],
)
def test_conv_message_split_by_device(message, family):
    assert explain(message).family == family


def test_live_meta_vs_cpu_error_is_same_device():
    with pytest.raises(RuntimeError) as info:
        torch.nn.Linear(3, 4, device="meta")(torch.ones(2, 3))
    result = explain(info.value)
    assert result.family == "same-device"
    assert result.devices == ("meta", "cpu")
    # the meta device note is about meta itself (issue 39): no data, and where a model on meta goes next
    assert "no data" in result.en and "meta-no-data" in result.en and "stands in" not in result.en
    assert "没有数据" in result.zh and "meta-no-data" in result.zh and "充当" not in result.zh
    assert result.message.startswith("RuntimeError: ")


def test_live_dtensor_and_fsdp2_messages_of_lab_11_are_explained():
    """The three messages lessons and lab 11 raise, re-created live in a one-process gloo group (the catalog's
    examples of them were recorded the same way, see catalog_sources.md): DTensor's refusal of a plain tensor
    (its own family, taught by lesson 11), FSDP2's parameters left on meta (meta-no-data) and two shards whose
    local pieces are on meta and on the CPU (same-device)."""
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("this PyTorch build has no torch.distributed")
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import Shard, distribute_tensor

    from devicekit.distributed import setup, teardown

    assert not dist.is_initialized()
    setup("gloo")
    caught = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mesh = init_device_mesh("cpu", (1,))
            sharded = distribute_tensor(torch.ones(8, 2), mesh, [Shard(0)])
            on_meta = distribute_tensor(torch.ones(8, 2, device="meta"), mesh, [Shard(0)])
            with torch.device("meta"):
                model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
            fully_shard(model, mesh=mesh)
            for key, run in [
                ("dtensor-mix", lambda: sharded + torch.ones(8, 2)),
                ("same-device", lambda: on_meta + sharded),
                ("meta-no-data", lambda: model(torch.ones(2, 4))),
            ]:
                with pytest.raises(RuntimeError) as info:
                    run()
                caught[key] = info.value
    finally:
        teardown()
    assert "got mixed torch.Tensor and DTensor" in str(caught["dtensor-mix"])
    assert "should be materialized from meta device" in str(caught["meta-no-data"])
    assert str(caught["same-device"]) == "Tensor on device cpu is not on the expected device meta!"
    for family, error in caught.items():
        assert explain(error).family == family
    mix = explain(caught["dtensor-mix"])
    assert mix.lab == "11-sharded" and "DTensor.from_local" in mix.en and "DTensor.from_local" in mix.zh
    assert not is_device_error(str(caught["dtensor-mix"]))  # not a placement error: locate_mismatch stays out


def test_live_error_inside_optimizer_step_is_optimizer_state():
    param = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam([param], foreach=False)
    param.grad = torch.ones(3)
    opt.step()
    for key in ("exp_avg", "exp_avg_sq"):
        opt.state[param][key] = opt.state[param][key].to("meta")
    with pytest.raises(RuntimeError) as info:
        opt.step()
    assert explain(info.value).family == "optimizer-state"
    # the bare message, without the traceback, is only a same-device error
    assert explain(str(info.value)).family == "same-device"


def test_live_warning_message_is_accepted():
    if torch.cuda.is_available():
        pytest.skip("GradScaler('cuda') only warns when CUDA is missing")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.amp.GradScaler("cuda")
    amp = [w for w in caught if "GradScaler is enabled" in str(w.message)]
    assert amp
    assert explain(amp[0]).family == "amp"
    assert explain(amp[0].message).family == "amp"


@pytest.mark.parametrize(
    "message",
    [
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 8000000000 bytes.",
        "NotImplementedError: Could not run 'aten::add.out' with arguments from the 'QuantizedCPU' backend.",
        "ValueError: too many values to unpack (expected 2)",
        "ModuleNotFoundError: No module named 'torchvision'",
        "",
    ],
)
def test_non_device_errors_give_none(message):
    result = explain(message)
    assert result.family is None
    assert result.lab is None
    assert "not look like a device error" in result.en
    assert "不是设备" in result.zh


def test_out_of_memory_is_its_own_family_not_a_mismatch():
    result = explain("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB")
    assert result.family == "out-of-memory"
    assert "expandable_segments" in result.en and "expandable_segments" in result.zh


def test_non_device_hints():
    with pytest.raises(RuntimeError) as info:
        torch.ones(2, 3) @ torch.ones(4, 5)
    result = explain(info.value)
    assert result.family is None
    assert "shape" in result.en and "形状" in result.zh


def test_pasted_traceback_uses_the_last_exception_and_its_continuation_lines():
    warning = (
        "/venv/lib/python3.10/site-packages/torch/amp/autocast_mode.py:266: UserWarning: "
        "User provided device_type of 'cuda', but CUDA is not available. Disabling"
    )
    pasted = (
        "Epoch 1: 100%|██████████| 10/10\n"
        + warning
        + """
Traceback (most recent call last):
  File "train.py", line 42, in <module>
    loss = model(x).sum()
  File "/venv/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 116, in forward
    return F.linear(input, self.weight, self.bias)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cpu
and cuda:0! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)
"""
    )
    result = explain(pasted)
    assert result.family == "same-device"
    assert result.devices == ("cpu", "cuda:0")
    assert result.message.endswith("wrapper_CUDA_addmm)")
    assert "'mat1'" in result.en and "'mat1'" in result.zh


def test_chained_exception_falls_back_to_the_device_error():
    try:
        try:
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two "
                "devices, cuda:0 and cpu!"
            )
        except RuntimeError as inner:
            raise ValueError("training step failed") from inner
    except ValueError as outer:
        result = explain(outer)
    assert result.family == "same-device"


def test_explanation_is_frozen_and_str_follows_the_language(monkeypatch):
    result = explain("Torch not compiled with CUDA enabled")
    assert isinstance(result, Explanation)
    assert result.family == "no-accelerator"
    monkeypatch.setenv("DEVICEKIT_LANG", "en")
    assert str(result) == result.en
    monkeypatch.setenv("DEVICEKIT_LANG", "zh")
    assert str(result) == result.zh
    monkeypatch.delenv("DEVICEKIT_LANG")
    monkeypatch.setattr("devicekit.lang.current_language", lambda: None)
    assert str(result) == f"{result.en}\n\n{result.zh}"  # unknown: both, English first
    assert result.title_en and result.title_zh and result.lesson == "01-devices"
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.family = "ddp"  # type: ignore[misc]


@pytest.mark.parametrize("bad", [None, 42, 3.5, b"CUDA error", ["a"], {"message": "x"}, RuntimeError])
def test_type_error_for_other_inputs(bad):
    with pytest.raises(TypeError, match=r"exception|str"):
        explain(bad)


_REAL_FRAGMENTS = [ex["message"] for fam in CATALOG["families"] for ex in fam["examples"]]


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_random_text_never_raises(text):
    result = explain(text)
    assert result.family is None or result.family in FAMILIES
    assert isinstance(result.devices, tuple)
    assert result.en and result.zh


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(st.one_of(st.text(max_size=60), st.sampled_from(_REAL_FRAGMENTS)), max_size=5))
def test_random_mixtures_of_real_messages_never_raise(parts):
    result = explain("\n".join(parts))
    assert result.family is None or result.family in FAMILIES


# --- issue 20/25/40: where each family is taught; meta ------------------------------------------------


@pytest.mark.parametrize("family", CATALOG["families"], ids=lambda f: f["id"])
def test_every_explanation_names_the_lessons_and_labs_that_teach_its_family(family):
    lessons = family.get("lessons", [family["lesson"]])
    labs = family.get("labs", [family["lab"]])
    assert lessons[0] == family["lesson"] and set(lessons) <= LABS
    assert labs[0] == family["lab"] and set(labs) <= LABS and len(set(labs)) == len(labs)
    example = family["examples"][0]
    text = f"{example['context']}\n{example['message']}" if example.get("context") else example["message"]
    result = explain(text)
    assert result.lessons == tuple(lessons) and result.lab == family["lab"] and result.labs == tuple(labs)
    en_last = next(line for line in result.en.splitlines() if line.startswith("Taught in:"))
    zh_last = next(line for line in result.zh.splitlines() if line.startswith("对应课程与实验："))
    # by number, not slug (the zh reviewer, item 6): "lessons 2, 8; labs 2, 8" / "第 2、8 课；实验 2、8"
    numbers = [str(int(slug.split("-")[0])) for slug in lessons]
    lab_numbers = [str(int(slug.split("-")[0])) for slug in labs]
    one = "lesson" if len(lessons) == 1 else "lessons"
    lab_word = "lab" if len(labs) == 1 else "labs"
    assert en_last == f"Taught in: {one} {', '.join(numbers)}; {lab_word} {', '.join(lab_numbers)}"
    assert zh_last == f"对应课程与实验：第 {'、'.join(numbers)} 课；实验 {'、'.join(lab_numbers)}"
    assert not any(slug in en_last or slug in zh_last for slug in [*lessons, *labs])


def _explained_in_stored_outputs() -> dict[str, set[str]]:
    """Lab id -> the families whose explanation (``[devicekit] ... [family]``) its stored outputs show."""
    shown: dict[str, set[str]] = {}
    for path in sorted((ROOT / "labs").glob("[0-9]*.ipynb")):
        lab = path.name.split(".")[0]
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for output in cell.get("outputs", []):
                text = "".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
                for family in re.findall(r"\[devicekit\] [^\n]*\[([a-z0-9-]+)\]", text):
                    shown.setdefault(lab, set()).add(family)
    return shown


def test_an_explanation_shown_in_a_lab_names_that_lab():
    """Issue 40: the explanation under an error in lab 5 must not send the learner to lab 1 alone. Every
    family explained in a lab's stored outputs lists that lab (``labs`` in the catalog)."""
    shown = _explained_in_stored_outputs()
    assert sum(len(families) for families in shown.values()) >= 10, "the labs' outputs show explanations"
    missing = {
        (lab, family)
        for lab, families in shown.items()
        for family in families
        if family in FAMILY_BY_ID and lab not in explain_labs(FAMILY_BY_ID[family])
    }
    assert not missing, (
        f"add each lab to the family's 'labs' in src/devicekit/catalog.json: {sorted(missing)}"
    )
    # and the other way: a lab listed besides the family's own "lab" shows the family (no stale pointers)
    stale = {
        (lab, family["id"])
        for family in CATALOG["families"]
        for lab in family.get("labs", [])[1:]
        if family["id"] not in shown.get(lab, set())
    }
    assert not stale, f"these labs no longer show the family: drop them from its 'labs': {sorted(stale)}"


def explain_labs(family: dict) -> tuple[str, ...]:
    """The labs the explanation of ``family`` names, as `explain` lists them."""
    example = family["examples"][0]
    text = f"{example['context']}\n{example['message']}" if example.get("context") else example["message"]
    return explain(text).labs


def test_devices_line_lists_devices_with_the_chinese_enumeration_comma():
    result = explain(
        "Expected all tensors to be on the same device, but found at least two devices, meta and cpu!"
    )
    assert "报错中的设备：meta、cpu" in result.zh.splitlines()
    assert "Devices in the message: meta, cpu" in result.en.splitlines()


def test_chinese_fill_puts_spaces_around_device_names_but_not_around_the_fallback_words():
    from devicekit.catalog import fill

    words = CATALOG["placeholders"]["zh"]
    assert fill("这个张量在{first}上。", ("meta",), words) == "这个张量在 meta 上。"
    assert fill("需要{first}上的生成器", ("cuda:0",), words) == "需要 cuda:0 上的生成器"
    assert fill("需要{first}上的生成器", (), words) == "需要某个设备上的生成器"
    assert fill("（{devices}）", ("cpu", "meta"), words) == "（cpu 和 meta）"
    assert fill("在 {first} 上", ("cpu",), words) == "在 cpu 上"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(
    ("bad", "en_part", "zh_part"),
    [
        (42, "got int", "收到的是 int"),
        (b"x", "decode bytes first", "请先解码"),
        (RuntimeError, "not the class RuntimeError", "而不是异常类 RuntimeError"),
    ],
)
def test_explain_rejects_a_wrong_argument_in_both_languages(lang, bad, en_part, zh_part):
    from devicekit.lang import using_language

    with using_language(lang):
        with pytest.raises(TypeError) as info:
            explain(bad)
        shown = str(info.value)
    assert en_part in info.value.en and zh_part in info.value.zh
    assert shown == (info.value.en if lang == "en" else info.value.zh)


def test_not_every_placement_error_points_to_lab_01():
    """The complaint of issue 20: every same-device explanation ended 'Course lab: 01-devices'."""
    two_gpus = explain(
        "Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!"
    )
    assert two_gpus.family == "two-gpus" and two_gpus.lab == "08-multi-gpu"
    assert two_gpus.lessons == ("02-models", "08-multi-gpu")
    assert "labels.to(output.device)" in two_gpus.en and "labels.to(output.device)" in two_gpus.zh
    one_gpu = explain(
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    )
    assert one_gpu.family == "same-device" and "02-models" in one_gpu.lessons


META_PLACEMENT = [
    (fam["id"], ex["message"])
    for fam in CATALOG["families"]
    for ex in fam["examples"]
    if fam.get("mismatch", True) and "meta" in explain(ex["message"]).devices
]


@pytest.mark.parametrize("family_id,message", META_PLACEMENT)
def test_a_meta_placement_error_says_what_meta_is(family_id, message):
    """meta is not the course's GPU stand-in any more (issue 39): the note says a meta tensor has no data
    and points to meta-no-data, and no longer tells the learner to read meta as cuda:0."""
    result = explain(message)
    assert "no data" in result.en and "to_empty" in result.en and "meta-no-data" in result.en
    assert "没有数据" in result.zh and "to_empty" in result.zh and "meta-no-data" in result.zh
    assert not any(word in result.en for word in ("stands in", "mismatch_device", "cuda:0 —"))
    assert not any(word in result.zh for word in ("充当", "mismatch_device", "当作 cuda:0"))


def test_the_meta_placement_cases_exist():
    assert len(META_PLACEMENT) >= 5


def test_mps_placeholder_names_the_cpu_side():
    result = explain("RuntimeError: Placeholder storage has not been allocated on MPS device!")
    assert result.family == "mps-cpu-tensor"
    assert "different devices (mps)" not in result.en and "still on the CPU" in result.en


def test_devicekit_errors_are_explained_in_a_chinese_notebook_too():
    """strict_devices' error reads in Chinese there; explain still recognises it (it reads the English)."""
    import torch

    from devicekit import strict_devices
    from devicekit.lang import using_language

    with using_language("zh"):
        try:
            with strict_devices():
                torch.ones(2, device="meta") @ torch.ones(2)
        except Exception as exc:  # the test inspects whatever strict raised
            caught = exc
        assert "设备" in str(caught)
        assert explain(caught).family == "same-device"


def test_the_simulation_note_names_no_device():
    """A dtype error between two simulated GPU tensors carries devicekit.simulate's note ("its tensors live on
    the CPU"): the explanation names no device from it, and a device error keeps the message's own devices."""
    import torch

    import devicekit

    with devicekit.simulate(gpus=1):
        low, full = torch.ones(2, 2, device="cuda", dtype=torch.bfloat16), torch.ones(2, 2, device="cuda")
        with pytest.raises(RuntimeError) as dtype_error:
            low @ full
        with pytest.raises(RuntimeError) as device_error:
            torch.ones(2, device="cuda") + torch.ones(2)
    assert "devicekit.simulate" in "".join(dtype_error.value.__notes__)
    result = explain(dtype_error.value)
    assert result.family == "dtype-mismatch" and result.devices == ()
    assert explain(device_error.value).devices == ("cuda:0", "cpu")
