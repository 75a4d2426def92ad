"""devicekit.catalog: the one classifier of device errors (explain, locate, atlas and widget build on it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from devicekit import explain
from devicekit.catalog import compiled, extract_devices, fill, is_device_error, load_catalog, match

HARNESS = Path(__file__).with_name("explainer_harness.mjs")
SAME_DEVICE = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SAME_DEVICE, True),
        ("Tensor on device meta is not on the expected device cpu!", True),
        ("Input and parameter tensors are not at the same device, found input tensor at cpu", True),
        ("'device'", False),  # str(KeyError("device"))
        ("unknown device profile 'fast'", False),
        ("Torch not compiled with CUDA enabled", False),  # about the machine, not a mix
        ("expected scalar type Float but found Half", False),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", False),
        ("", False),
    ],
)
def test_is_device_error_follows_the_families(text, expected):
    assert is_device_error(text) is expected


def test_families_and_explain_agree():
    for family in compiled().families:
        for example in family.data["examples"]:
            hit = match([example["message"]])
            assert hit is not None, example["message"]


def test_fill_and_load_catalog_are_public_and_copies():
    words = load_catalog()["placeholders"]["en"]
    assert fill("[[on {first}]] ok", (), words) == " ok"
    assert fill("on {first} and {second}", ("cuda:0", "cpu"), words) == "on cuda:0 and cpu"
    copy = load_catalog()
    copy["families"].clear()
    assert load_catalog()["families"]


@pytest.mark.parametrize(
    ("text", "devices"),
    [
        ("张量在cuda:0上，另一个在cpu上", ("cuda:0", "cpu")),
        ("设备：meta。", ("meta",)),
        ("模型在 mps:0 上", ("mps:0",)),
        ("cuda:0和cpu", ("cuda:0", "cpu")),
        ("torch.cuda.FloatTensor张量", ("cuda",)),
    ],
)
def test_devices_in_chinese_text(text, devices):
    assert extract_devices(text) == devices


def test_python_and_javascript_agree_on_chinese_text_around_devices():
    from course_tools.generate import atlas

    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node is not installed")
    texts = [
        "RuntimeError: 张量在cuda:0上，另一个在cpu上",
        "报错：" + SAME_DEVICE.replace("cuda:0 and cpu", "cuda:0和cpu"),
        "训练中\nRuntimeError: Expected all tensors to be on the same device, but got mat2 is on cpu，"
        "different from other tensors on cuda:0（在mps上）",
        "设备meta不对；torch.cuda.HalfTensor与CPUFloatType",
        "\U0001f600cuda:1\U0001f600 and é cpu ß meta",
    ]
    payload = json.dumps({"catalog": json.loads(atlas.widget_json()), "texts": texts})
    done = subprocess.run([node, str(HARNESS)], input=payload, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for text, js in zip(texts, json.loads(done.stdout), strict=True):
        py = explain(text)
        assert (js["family"], tuple(js["devices"])) == (py.family, py.devices), text
    assert explain(texts[0]).devices == ("cuda:0", "cpu")


def test_a_paste_of_forty_thousand_mentions_names_each_device_once():
    # how long it takes is benchmarks/bench_explain.py's business (it was quadratic: 269 s for the first)
    assert explain("cuda:" * 40_000).devices == ("cuda",)
    assert extract_devices("cuda:0 " * 40_000) == ("cuda:0",)


def test_warning_message_without_category():
    message = warnings.WarningMessage(
        "User provided device_type of 'cuda', but CUDA is not available", None, "f", 1
    )
    assert explain(message).family == "amp"


@seed(14)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(max_size=30),
            st.sampled_from(
                ["cuda:0", "cpu", "meta", "\n", SAME_DEVICE, "RuntimeError: ", "设备", "torch.cuda."]
            ),
        ),
        max_size=12,
    ).map("".join)
)
def test_fuzz_explain_never_raises_and_names_only_found_devices(text):
    result = explain(text)
    assert result.family is None or result.en and result.zh
    assert set(result.devices) <= set(extract_devices(text[-200_000:])) | {
        d.split(":")[0] for d in result.devices
    }
