"""DeviceManager: the automatic choice, the environment override, and clear errors for bad devices."""

from __future__ import annotations

import pytest
import torch

import devicekit
from devicekit import DeviceManager, UnknownDeviceError, available_devices, best_device, mismatch_device

HAS_CUDA = torch.cuda.is_available()


@pytest.fixture(autouse=True)
def _no_override(monkeypatch):
    monkeypatch.delenv(devicekit.ENV_VAR, raising=False)


def test_automatic_choice_is_the_best_device():
    dm = DeviceManager()
    assert dm.device == best_device()
    assert dm.source == "automatic choice"
    if not HAS_CUDA and dm.device.type == "cpu":
        assert not dm.is_accelerator


def test_cuda_is_chosen_with_its_index_when_present():
    if not HAS_CUDA:
        assert best_device().type in ("cpu", "mps", "xpu")
        return
    assert DeviceManager().device == torch.device("cuda", torch.cuda.current_device())


@pytest.mark.parametrize("spec", ["cpu", torch.device("cpu"), " cpu ", "meta"])
def test_explicit_devices(spec):
    dm = DeviceManager(spec)
    assert dm.device == torch.device(str(spec).strip())
    assert dm.source == "explicit argument"
    assert dm.type == dm.device.type


def test_environment_variable_overrides(monkeypatch):
    monkeypatch.setenv(devicekit.ENV_VAR, "meta")
    dm = DeviceManager()
    assert dm.device == torch.device("meta")
    assert devicekit.ENV_VAR in dm.source
    assert DeviceManager("cpu").device.type == "cpu", "an explicit argument beats the environment"


def test_bad_environment_variable_says_where_it_came_from(monkeypatch):
    monkeypatch.setenv(devicekit.ENV_VAR, "tpu")
    with pytest.raises(UnknownDeviceError, match=r"DEVICEKIT_DEVICE='tpu'.*Available here: .*cpu"):
        DeviceManager()


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("tpu", "not a device name PyTorch knows"),
        ("", "is empty"),
        ("cuda:x", "not a device name PyTorch knows"),
        (f"cuda:{torch.cuda.device_count() + 6}", "not available on this machine"),
        (3.5, "of type float is not a device"),
        (True, "True is not a device"),
        ([], "of type list is not a device"),
        (-1, "is not an accelerator index (0 to 127)"),
        (2**63, "is not an accelerator index (0 to 127)"),
        ("gpu", "not a device name PyTorch knows"),
    ],
)
def test_unknown_or_unavailable_devices_name_what_is_available(spec, reason):
    with pytest.raises(UnknownDeviceError) as info:
        DeviceManager(spec)
    message = str(info.value)
    assert reason in message
    assert "Available here: " in message
    for device in available_devices():
        assert device in message


@pytest.mark.skipif(HAS_CUDA, reason="checks the message on a machine without CUDA")
def test_cuda_without_cuda_is_refused_clearly():
    with pytest.raises(UnknownDeviceError, match=r"'cuda:0' is not available on this machine"):
        DeviceManager("cuda:0")
    with pytest.raises(UnknownDeviceError, match="not available"):
        DeviceManager(0)


def test_unknown_device_error_is_a_value_error():
    assert issubclass(UnknownDeviceError, ValueError)


def test_available_devices_always_lists_cpu_and_meta_last():
    devices = available_devices()
    assert devices[-2:] == ["cpu", "meta"]
    assert len(devices) == len(set(devices))


def test_mismatch_device_is_the_accelerator_or_meta():
    device = mismatch_device()
    if best_device().type == "cpu":
        assert device == torch.device("meta")
    else:
        assert device == best_device()
    # It must really provoke PyTorch's own device check against a CPU tensor.
    with pytest.raises(RuntimeError):
        torch.ones(3, device=device) + torch.ones(3)


def test_describe_is_one_readable_line():
    text = DeviceManager().describe()
    assert str(DeviceManager().device) in text
    assert torch.__version__ in text
    assert "\n" not in text
    assert "no data" in DeviceManager("meta").describe()
    assert repr(DeviceManager("cpu")) == "DeviceManager(device='cpu')"


def test_manager_methods_use_its_device():
    import warnings

    dm = DeviceManager("meta")
    batch = {"x": torch.ones(2, 3), "ids": [torch.arange(3)], "name": "a"}
    moved = dm.to(batch)
    assert moved["x"].device.type == "meta" and moved["ids"][0].device.type == "meta"
    assert moved["name"] is batch["name"] and batch["x"].device.type == "cpu"
    assert [b.device.type for b in dm.loader([torch.ones(1), torch.ones(1)])] == ["meta", "meta"]

    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    same_model, same_opt = dm.prepare(model, optimizer)
    assert same_model is model and same_opt is optimizer and model.weight.device.type == "meta"
    assert dm.check(model, moved["x"]) is not None
    with pytest.raises(devicekit.DeviceMismatchError, match="expected"):
        dm.check(model, batch["x"])

    cpu = DeviceManager("cpu")
    with cpu.autocast():
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch.amp, never the deprecated torch.cuda.amp
        assert not cpu.grad_scaler().is_enabled()  # bf16 needs no loss scaling


# --- one reading of a device for every entry point (issue 9, items 6 and 7) -----------------------------


def test_resolve_device_returns_what_tensors_report(monkeypatch):
    from devicekit import device as device_mod

    for spec in ("cpu", "meta"):
        dev = devicekit.resolve_device(spec)
        assert torch.ones(1, device=dev).device == dev
    # An Apple GPU: tensors report mps:0, and torch.device("mps") != torch.device("mps:0").
    assert torch.device("mps") != torch.device("mps", 0)
    monkeypatch.setattr(device_mod, "_mps_available", lambda: True)
    assert devicekit.resolve_device("mps") == torch.device("mps", 0)
    assert devicekit.resolve_device(torch.device("mps")) == torch.device("mps", 0)
    with pytest.raises(UnknownDeviceError, match="not available"):
        devicekit.resolve_device("mps:1")


def test_every_entry_point_reads_devices_the_same_way():
    from devicekit import DeviceLoader, as_device, check_devices, prepare, to_device

    model = torch.nn.Linear(2, 2)
    calls = {
        "as_device": lambda d: as_device(d),
        "resolve_device": lambda d: devicekit.resolve_device(d),
        "DeviceManager": lambda d: DeviceManager(d),
        "to_device": lambda d: to_device(torch.ones(1), d),
        "DeviceLoader": lambda d: DeviceLoader([], d),
        "prepare": lambda d: prepare(model, d),
        "check_devices": lambda d: check_devices(model, device=d),
        "autocast": lambda d: devicekit.autocast(d),
    }
    for name, call in calls.items():
        for bad in ("gpu", 2**63, -1, 1.5, True, "cuda:999"):
            with pytest.raises(UnknownDeviceError, match="A device is") as info:
                call(bad)
            assert isinstance(info.value, ValueError), name
    if not torch.accelerator.is_available():
        for call in calls.values():
            with pytest.raises(UnknownDeviceError, match="accelerator index 0, which is not available"):
                call(0)


def test_none_is_refused_where_a_device_is_required():
    with pytest.raises(UnknownDeviceError, match="of type NoneType is not a device") as info:
        devicekit.resolve_device(None)
    assert isinstance(info.value, TypeError)
    with pytest.raises(UnknownDeviceError, match="NoneType"):
        devicekit.to_device(torch.ones(1), None)
    assert DeviceManager(None).source == "automatic choice"  # for the manager None means "choose"


def test_manager_device_equals_what_its_tensors_report():
    """Issue 9, item 6: on every backend (cuda:0, mps:0, xpu:0, cpu) dm.device == tensor.device."""
    for dm in (DeviceManager(), DeviceManager(devicekit.best_device().type), DeviceManager("cpu")):
        assert torch.ones(1, device=dm.device).device == dm.device
        assert dm.to(torch.ones(1)).device == dm.device


# ---- issue 20 (5): DEVICEKIT_DEVICE=0 means accelerator index 0, as the messages offer ("an int N")


def _one_gpu(monkeypatch):
    """Pretend this machine has one CUDA GPU (the hardware questions devicekit.device asks)."""
    from devicekit import device as device_module

    monkeypatch.setattr(device_module, "_accelerator_type", lambda: "cuda")
    monkeypatch.setattr(device_module, "_cuda_count", lambda: 1)


@pytest.mark.parametrize("value", ["0", " 0 ", "+0"])
def test_environment_variable_accepts_an_accelerator_index(monkeypatch, value):
    _one_gpu(monkeypatch)
    monkeypatch.setenv(devicekit.ENV_VAR, value)
    dm = DeviceManager()
    assert dm.device == torch.device("cuda", 0) and devicekit.ENV_VAR in dm.source


def test_environment_index_without_an_accelerator_says_so_not_that_the_form_is_wrong(monkeypatch):
    from devicekit import device as device_module

    monkeypatch.setattr(device_module, "_accelerator_type", lambda: None)
    monkeypatch.setenv(devicekit.ENV_VAR, "0")
    with pytest.raises(UnknownDeviceError) as info:
        DeviceManager()
    err = info.value
    assert err.en.startswith("DEVICEKIT_DEVICE=0 means accelerator index 0, which is not available")
    assert "not a device name" not in err.en
    assert err.zh.startswith("DEVICEKIT_DEVICE=0 指第 0 号加速器，但本机没有加速器。本机可用的设备：")


@pytest.mark.parametrize(
    ("value", "en", "zh"),
    [
        (
            "-1",
            "DEVICEKIT_DEVICE=-1 is not an accelerator index (0 to 127)",
            "DEVICEKIT_DEVICE=-1 不是加速器编号",
        ),
        (
            "999",
            "DEVICEKIT_DEVICE=999 is not an accelerator index (0 to 127)",
            "DEVICEKIT_DEVICE=999 不是加速器编号",
        ),
        (
            "0x1",
            "DEVICEKIT_DEVICE='0x1' is not a device name PyTorch knows",
            "DEVICEKIT_DEVICE='0x1' 不是 PyTorch",
        ),
        (
            "gpu0",
            "DEVICEKIT_DEVICE='gpu0' is not a device name PyTorch knows",
            "DEVICEKIT_DEVICE='gpu0' 不是",
        ),
    ],
)
def test_bad_environment_indices_get_a_clear_error_in_both_languages(monkeypatch, value, en, zh):
    _one_gpu(monkeypatch)
    monkeypatch.setenv(devicekit.ENV_VAR, value)
    with pytest.raises(UnknownDeviceError) as info:
        DeviceManager()
    assert info.value.en.startswith(en) and info.value.zh.startswith(zh)
    assert "A device is " in info.value.en and "设备可以是：" in info.value.zh


# ---- issue 20 (3): mismatch_device's docstring says what meta checks and what it does not


def _raises(fn) -> bool:
    try:
        fn()
    except RuntimeError:
        return True
    return False


def test_mismatch_device_docstring_matches_what_meta_checks():
    doc = " ".join(mismatch_device.__doc__.split())
    assert "PyTorch runs the same kind of device check for meta and CPU" not in doc  # the stale claim
    m, c = torch.ones(2, 2, device="meta"), torch.ones(2, 2)
    gen = torch.Generator()
    raises = {
        "element-wise ops (``meta + cpu``)": lambda: m + c,
        "`torch.cat`": lambda: torch.cat([m, c]),
        "`nn.Linear` with a bias": lambda: torch.nn.functional.linear(c, m, torch.ones(2, device="meta")),
    }
    silent = {
        "`torch.mm`": lambda: torch.mm(m, c),
        "`F.linear` without bias": lambda: torch.nn.functional.linear(c, m),
        "``meta_t.add_(cpu_t)``": lambda: m.clone().add_(c),
        "``mul_``": lambda: m.clone().mul_(c),
        "``torch.clamp(meta_t, min=torch.tensor(0.5))``": lambda: torch.clamp(m, min=torch.tensor(0.5)),
        "``torch.index_select(meta_t, 0, torch.tensor(1))``": lambda: torch.index_select(
            m, 0, torch.tensor(1)
        ),
        'a CPU ``generator=`` with ``device="meta"``': lambda: torch.randint(
            0, 5, (3,), generator=gen, device="meta"
        ),
    }
    for phrase, fn in raises.items():
        assert phrase in doc and _raises(fn), phrase
    for phrase, fn in silent.items():
        assert phrase in doc and not _raises(fn), phrase
    assert "Tensor on device cpu is not on the expected device meta!" in doc
    with pytest.raises(RuntimeError, match="Tensor on device cpu is not on the expected device meta!"):
        m + c


def test_an_int_without_an_accelerator_says_so_in_natural_chinese(monkeypatch):
    """The zh reviewer, item 14: "整数 3 指第 3 号加速器", not "3 表示加速器第 3 号"."""
    from devicekit import device as device_module

    monkeypatch.setattr(device_module, "_accelerator_type", lambda: None)
    with pytest.raises(UnknownDeviceError) as info:
        device_module.as_device(3)
    assert info.value.zh.startswith("整数 3 指第 3 号加速器，但本机没有加速器。")
    assert "本机第 N 号加速器" in device_module.VALID_FORMS.zh
