"""Tests for DeviceLoader, the AMP helpers and prepare (CPU; ``meta`` plays the other device)."""

from __future__ import annotations

import contextlib
import warnings

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from devicekit import DeviceManager
from devicekit import amp as amp_mod
from devicekit.amp import autocast, autocast_dtype, grad_scaler
from devicekit.loader import DeviceLoader
from devicekit.prepare import prepare

META = torch.device("meta")
CPU = torch.device("cpu")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _loader(n=10, bs=4, **kw):
    ds = TensorDataset(torch.randn(n, 3), torch.arange(n))
    return DataLoader(ds, batch_size=bs, **kw)


# --------------------------------------------------------------------------------------------
# DeviceLoader
# --------------------------------------------------------------------------------------------


def test_loader_len_and_batches_on_device():
    dl = _loader()
    loader = DeviceLoader(dl, "meta")
    assert len(loader) == len(dl) == 3
    batches = list(loader)
    assert len(batches) == 3
    for x, y in batches:
        assert x.device == META and y.device == META
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]


def test_loader_is_reiterable_and_delegates_attributes():
    dl = _loader()
    loader = DeviceLoader(dl, torch.device("meta"))
    assert len(list(loader)) == len(list(loader)) == 3
    assert loader.batch_size == 4 and loader.dataset is dl.dataset
    assert "meta" in repr(loader)


def test_loader_skip_keys_keep_lengths_on_cpu():
    """``pack_padded_sequence`` needs its lengths on the CPU: the loader leaves skipped keys alone."""
    batches = [{"x": torch.ones(2, 3), "lengths": torch.tensor([3, 2])}]
    for loader in (
        DeviceLoader(batches, "meta", skip_keys="lengths"),
        DeviceManager("meta").loader(batches, skip_keys=["lengths"]),
    ):
        (batch,) = list(loader)
        assert batch["x"].device.type == "meta"
        assert batch["lengths"].device.type == "cpu"
        assert batch["lengths"] is batches[0]["lengths"]


def test_loader_rejects_bad_skip_keys_at_once():
    with pytest.raises(TypeError, match="skip_keys"):
        DeviceLoader([], "meta", skip_keys=[["not", "hashable"]])


def test_loader_cpu_is_plain_and_keeps_tensors():
    batches = [{"x": torch.ones(2), "id": "a"}, {"x": torch.zeros(2), "id": "b"}]
    out = list(DeviceLoader(batches, "cpu"))
    assert out[0]["x"] is batches[0]["x"] and out[1]["id"] is batches[1]["id"]
    with pytest.raises(TypeError):
        len(DeviceLoader(iter(batches), "cpu"))


def test_loader_bad_device():
    with pytest.raises(ValueError, match="not a device name PyTorch knows"):
        DeviceLoader([], "gpu")


def test_loader_pickles():
    import pickle

    loader = pickle.loads(pickle.dumps(DeviceLoader([torch.ones(1)], "meta")))
    assert [t.device for t in loader] == [META]


def test_cuda_prefetcher_stream_protocol_with_fakes(monkeypatch):
    """The CUDA path's order of operations, checked on CPU with fake streams (meta as target)."""
    from devicekit import loader as loader_mod

    log = []

    class FakeStream:
        def __init__(self, name="side", device=None):
            self.name = name

        def wait_stream(self, other):
            log.append(f"{self.name}.wait_stream({other.name})")

    current = FakeStream("current")

    @contextlib.contextmanager
    def fake_stream_ctx(stream):
        log.append(f"enter {stream.name}")
        yield
        log.append(f"exit {stream.name}")

    class FakeTensor:
        is_cuda = True

        def record_stream(self, stream):
            log.append(f"record_stream({stream.name})")

    def batches():
        for i in range(2):
            log.append(f"produce {i}")
            yield torch.full((2,), float(i))

    monkeypatch.setattr(torch.cuda, "Stream", FakeStream)
    monkeypatch.setattr(torch.cuda, "stream", fake_stream_ctx)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: current)
    monkeypatch.setattr(loader_mod, "iter_tensors", lambda batch: [("batch", FakeTensor())])
    it = loader_mod._CudaPrefetcher(batches(), torch.device("meta", 0), None, pin=False)
    assert log == ["produce 0", "enter side", "exit side"]  # first batch is issued at iter()
    log.clear()
    first = next(it)
    assert first.device == META
    assert log == [
        "current.wait_stream(side)",  # consumer waits for the copy on the GPU, not on the host
        "record_stream(current)",  # allocator: the consumer stream uses this memory too
        "produce 1",  # the next batch is issued before the consumer gets this one
        "enter side",
        "exit side",
    ]
    log.clear()
    assert next(it).device == META
    assert log == ["current.wait_stream(side)", "record_stream(current)"]
    with pytest.raises(StopIteration):
        next(it)


@needs_cuda
def test_loader_cuda_prefetch_values_and_streams():
    dl = _loader(n=33, bs=8)
    expected = [(x.clone(), y.clone()) for x, y in dl]
    got = []
    for x, y in DeviceLoader(dl, "cuda"):
        assert x.is_cuda and y.is_cuda
        got.append((x.cpu(), y.cpu()))
    assert len(got) == len(expected)
    for (gx, gy), (ex, ey) in zip(got, expected, strict=True):
        assert torch.equal(gx, ex) and torch.equal(gy, ey)


@needs_cuda
def test_loader_cuda_with_pinned_dataloader_and_compute_overlap():
    dl = _loader(n=64, bs=16, pin_memory=True)
    total = torch.zeros((), device="cuda")
    for x, y in DeviceLoader(dl, torch.device("cuda", 0)):
        total += (x @ x.T).sum() * 0 + y.sum()
    assert int(total.item()) == sum(range(64))


@pytest.mark.skipif(torch.cuda.is_available(), reason="devicekit.simulate refuses to start beside a real GPU")
def test_loader_cuda_prefetch_on_a_simulated_gpu():
    """On a simulated GPU the CUDA path runs too (lesson 4 and lab 4 use it there): the batches are the
    loader's, on cuda:0, and the simulated stream is not handed to record_stream (it is no torch.Stream)."""
    from devicekit.simulate import simulate

    dl = _loader(n=10, bs=4)
    expected = [(x.clone(), y.clone()) for x, y in dl]
    with simulate():
        got = [(x.device, y.device, x.cpu(), y.cpu()) for x, y in DeviceLoader(dl, "cuda")]
    assert [(str(xd), str(yd)) for xd, yd, _, _ in got] == [("cuda:0", "cuda:0")] * 3
    for (_, _, gx, gy), (ex, ey) in zip(got, expected, strict=True):
        assert torch.equal(gx, ex) and torch.equal(gy, ey)


# --------------------------------------------------------------------------------------------
# AMP
# --------------------------------------------------------------------------------------------


def test_autocast_cpu_defaults_to_bf16_and_changes_dtype_not_device():
    ctx = autocast("cpu")
    assert isinstance(ctx, torch.autocast) and ctx.device == "cpu" and ctx.fast_dtype == torch.bfloat16
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    with autocast(torch.device("cpu")):
        out = a @ b
    assert out.dtype == torch.bfloat16 and out.device == CPU


def test_autocast_explicit_dtype_and_disabled():
    assert autocast("cpu", dtype=torch.float16).fast_dtype == torch.float16
    with autocast("cpu", enabled=False):
        assert (torch.randn(2, 2) @ torch.randn(2, 2)).dtype == torch.float32


def test_autocast_device_type_from_index():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns (and disables) when CUDA is missing
        ctx = autocast("cuda:1")
    assert ctx.device == "cuda"


def test_autocast_meta():
    with pytest.raises(ValueError, match="not available for device type 'meta'"):
        autocast("meta")
    assert isinstance(autocast("meta", enabled=False), contextlib.nullcontext)


def test_autocast_dtype_choices(monkeypatch):
    assert autocast_dtype("cpu") == torch.bfloat16
    assert autocast_dtype("mps") == torch.float16
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    major = {"value": 8}
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda d: type("P", (), {"major": major["value"]})
    )
    assert autocast_dtype("cuda") == torch.bfloat16
    major["value"] = 7
    assert autocast_dtype("cuda:0") == torch.float16


def test_grad_scaler_enabled_only_for_fp16(monkeypatch):
    s = grad_scaler("cpu")
    assert isinstance(s, torch.amp.GradScaler) and not s.is_enabled()  # bf16: no scaling
    assert grad_scaler("cpu", dtype=torch.float16).is_enabled()
    assert not grad_scaler("cpu", dtype=torch.float16, enabled=False).is_enabled()
    assert not grad_scaler("meta").is_enabled()
    seen = {}

    class FakeScaler:
        def __init__(self, device, enabled=True):
            seen.update(device=device, enabled=enabled)

    monkeypatch.setattr(torch.amp, "GradScaler", FakeScaler)
    monkeypatch.setattr(amp_mod, "autocast_dtype", lambda d: torch.float16)
    grad_scaler("cuda:0")
    assert seen == {"device": "cuda", "enabled": True}


def test_no_deprecated_cuda_amp_in_source():
    import inspect

    assert "torch.cuda.amp" not in inspect.getsource(amp_mod).replace("``torch.cuda.amp.*``", "")


@needs_cuda
def test_autocast_cuda_matmul_dtype():
    with autocast("cuda"):
        out = torch.randn(8, 8, device="cuda") @ torch.randn(8, 8, device="cuda")
    assert out.dtype == autocast_dtype("cuda") and out.is_cuda


# --------------------------------------------------------------------------------------------
# prepare
# --------------------------------------------------------------------------------------------


def _trained(opt_cls=torch.optim.Adam, **kw):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = opt_cls(model.parameters(), **kw)
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    return model, opt


def test_prepare_model_only_returns_model():
    model = nn.Linear(2, 2)
    assert prepare(model, "meta") is model and model.weight.device == META


def test_prepare_moves_adam_state_keeps_step_on_cpu():
    model, opt = _trained()
    m2, o2 = prepare(model, "meta", opt)
    assert m2 is model and o2 is opt
    for p in model.parameters():
        assert p.device == META
        st = opt.state[p]
        assert st["exp_avg"].device == META and st["exp_avg_sq"].device == META
        assert st["step"].device == CPU and st["step"].dtype == torch.float32  # as PyTorch keeps it
    assert all(p in opt.state for p in model.parameters())


def test_prepare_capturable_moves_step_too():
    model, opt = _trained(capturable=False)
    opt.param_groups[0]["capturable"] = True  # (capturable=True cannot step on CPU; set it after)
    prepare(model, "meta", opt)
    assert all(opt.state[p]["step"].device == META for p in model.parameters())


def test_prepare_sgd_momentum_and_fresh_optimizer():
    model, opt = _trained(torch.optim.SGD, lr=0.1, momentum=0.9)
    prepare(model, "meta", opt)
    assert all(opt.state[p]["momentum_buffer"].device == META for p in model.parameters())
    fresh = nn.Linear(2, 2)
    fopt = torch.optim.AdamW(fresh.parameters())
    prepare(fresh, "meta", fopt)
    assert len(fopt.state) == 0 and fresh.weight.device == META


def test_prepare_warns_on_foreign_parameters():
    model = nn.Linear(2, 2)
    other = nn.Linear(3, 3)
    opt = torch.optim.SGD(list(model.parameters()) + list(other.parameters()), lr=0.1)
    with pytest.warns(UserWarning, match=r"2 parameter\(s\) that are not parameters of this Linear"):
        prepare(model, "meta", opt)
    assert model.weight.device == META and other.weight.device == CPU


def test_prepare_frozen_params_do_not_warn():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    opt = torch.optim.SGD(model[1].parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prepare(model, "meta", opt)


def test_prepare_repoints_optimizer_when_to_replaces_params():
    model, opt = _trained()
    old = list(model.parameters())
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        prepare(model, "meta", opt)
    finally:
        torch.__future__.set_overwrite_module_params_on_conversion(False)
    new = list(model.parameters())
    assert all(a is not b for a, b in zip(old, new, strict=True))
    assert [id(p) for p in opt.param_groups[0]["params"]] == [id(p) for p in new]
    assert all(opt.state[p]["exp_avg"].device == META for p in new)
    assert not any(p in opt.state for p in old)


@needs_cuda
def test_prepare_cuda_round_trip_and_step():
    model, opt = _trained()
    prepare(model, "cuda", opt)
    model(torch.randn(5, 3, device="cuda")).sum().backward()
    opt.step()  # would raise on a device mismatch
    prepare(model, "cpu", opt)
    assert all(opt.state[p]["exp_avg"].device == CPU for p in model.parameters())
