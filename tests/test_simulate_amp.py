"""torch.autocast("cuda") and torch.amp.GradScaler("cuda") on simulated GPUs: CUDA's cast policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from devicekit.simulate import simulate

RECORD = json.loads((Path(__file__).resolve().parent.parent / "results" / "cuda-messages.json").read_text())


def test_the_lists_decide_each_ops_dtype():
    with simulate(profile="A100"):
        a, b = torch.randn(4, 4, device="cuda"), torch.randn(4, 4, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            assert (a @ b).dtype == torch.float16  # lower_precision_fp: matmul
            assert torch.mm(a, b).dtype == torch.float16 and F.linear(a, b).dtype == torch.float16
            half = a @ b
            assert torch.exp(half).dtype == torch.float32  # fp32
            assert F.mse_loss(half, b).dtype == torch.float32
            assert F.softmax(half, dim=1).dtype == torch.float32  # fp32_set_opt_dtype
            assert half.sum().dtype == torch.float32
            assert torch.relu(half).dtype == torch.float16  # in no list: runs in its input's dtype
            assert torch.addcmul(a, half, half).dtype == torch.float32  # promote: the widest
            assert torch.cat([half, half]).dtype == torch.float16
            assert F.cross_entropy(half, torch.tensor([0, 1, 2, 3], device="cuda")).dtype == torch.float32
            assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32  # CPU tensors untouched
        assert (a @ b).dtype == torch.float32  # outside the region


def test_the_recorded_autocast_cases():
    with simulate():
        with torch.autocast("cuda", dtype=torch.float16):
            assert str((torch.ones(2, 2) @ torch.ones(2, 2)).dtype) == eval(
                RECORD["cases"]["autocast-cuda-on-cpu-math"]["value"]
            )  # noqa: E501, S307
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = torch.ones(2, 3, device="cuda") @ torch.ones(3, 3, device="cuda")
        with pytest.raises(RuntimeError) as info:
            torch.mm(h, torch.ones(3, 2, device="cuda"))
    assert str(info.value) == RECORD["cases"]["autocast-output-meets-fp32"]["message"]


def test_binary_cross_entropy_is_banned_as_on_cuda():
    with simulate(), torch.autocast("cuda"):
        p = torch.sigmoid(torch.randn(3, device="cuda"))
        with pytest.raises(RuntimeError, match="are unsafe to autocast"):
            F.binary_cross_entropy(p, torch.ones(3, device="cuda"))
        assert F.binary_cross_entropy_with_logits(p, torch.ones(3, device="cuda")).dtype == torch.float32


def test_bf16_follows_the_profile():
    with simulate(profile="V100"):
        assert not torch.cuda.is_bf16_supported(including_emulation=False)
        with torch.autocast("cuda", dtype=torch.bfloat16):  # allowed: emulation counts, as on a V100
            assert (torch.ones(2, 2, device="cuda") @ torch.ones(2, 2, device="cuda")).dtype == torch.bfloat16
    with simulate(profile="H100"):
        assert torch.cuda.is_bf16_supported(including_emulation=False)


def test_a_mixed_precision_training_step_with_grad_scaler():
    torch.manual_seed(0)
    with simulate(profile="A100"):
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        scaler = torch.amp.GradScaler("cuda", init_scale=1024.0)
        x, y = torch.randn(32, 8, device="cuda"), torch.randint(0, 4, (32,), device="cuda")
        losses = []
        for _ in range(15):
            opt.zero_grad()
            with torch.autocast("cuda", dtype=torch.float16):
                out = model(x)
                loss = F.cross_entropy(out, y)
            assert out.dtype == torch.float16 and loss.dtype == torch.float32
            scaler.scale(loss).backward()
            assert model[0].weight.grad.dtype == torch.float32  # gradients in the parameters' dtype
            assert model[0].weight.grad.abs().max().item() > 1.0  # still scaled
            scaler.unscale_(opt)
            scaler.step(opt)
            scaler.update()
            losses.append(loss.item())
        assert scaler.get_scale() == 1024.0 and scaler.is_enabled()
        assert losses[-1] < losses[0]


def test_grad_scaler_skips_a_step_with_an_inf_and_backs_off():
    with simulate():
        w = nn.Parameter(torch.ones(2, device="cuda"))
        opt = torch.optim.SGD([w], lr=1.0)
        scaler = torch.amp.GradScaler("cuda", init_scale=8.0)
        scaler.scale((w * float("inf")).sum()).backward()
        scaler.step(opt)
        scaler.update()
        assert w.tolist() == [1.0, 1.0] and scaler.get_scale() == 4.0
