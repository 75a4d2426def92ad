"""False positives found on the code bases of issue 43's third round (yolor `3ca250a`), each with a twin
that is still reported."""

from __future__ import annotations

import textwrap

from devicekit.lint import DEFAULT_CODES, lint_source

DEFORM = """
    import torch
    from torch import nn

    class DeformConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.stride = 1
            self.conv = nn.Conv2d(3, 18, 3)

        def forward(self, x):
            offset = self.conv(x)
            dtype = offset.data.type()
            return offset + self._get_p_0(4, 4, 9, dtype)

        def _get_p_0(self, h, w, n, dtype):
            p_0_x, p_0_y = torch.meshgrid(torch.arange(1, h + 1), torch.arange(1, w + 1))
            p_0 = torch.cat([p_0_x, p_0_y], 1).type(dtype)
            return p_0
    """


def findings(source: str, extra: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    codes = DEFAULT_CODES | extra
    return [(f.line, f.code) for f in lint_source(textwrap.dedent(source), "m.py", codes)]


WITH_DK903 = frozenset({"DK903"})  # the opt-in shape-read DK003 (where these were found)


def test_a_tensor_cast_to_a_type_read_at_run_time_is_placed():
    """`.type(offset.data.type())` is "torch.cuda.FloatTensor" on the GPU: the tensor moves there."""
    assert findings(DEFORM, WITH_DK903) == []


def test_a_cast_to_a_torch_dtype_moves_nothing():
    found = findings(DEFORM.replace(".type(dtype)", ".type(torch.float32)"), WITH_DK903)
    assert (17, "DK903") in found and {code for _, code in found} <= {"DK003", "DK903"}


def test_the_runtime_type_string_moves_a_cpu_tensor_to_cuda_meta():
    """What the exemption rests on: `.type()` with a CUDA tensor type string puts the tensor on CUDA (shown
    without a GPU by the type string alone: the CPU build refuses it as a CUDA type)."""
    import pytest
    import torch

    with pytest.raises((RuntimeError, TypeError), match="(?i)cuda"):
        torch.arange(3).type("torch.cuda.FloatTensor")


def test_the_modules_taken_for_stateless_have_no_parameters_or_buffers():
    import inspect

    import torch

    from devicekit.lint.names import STATELESS_NN

    args = {"Threshold": (0.1, 0.0), "Unflatten": (1, (2, 2)), "Upsample": (None, 2), "PixelShuffle": (2,)}
    args |= {"PixelUnshuffle": (2,), "ZeroPad2d": (1,), "ConstantPad1d": (1, 0.0), "ConstantPad2d": (1, 0.0)}
    args |= {"ReflectionPad2d": (1,), "ReplicationPad2d": (1,)}
    for name in sorted(STATELESS_NN):
        cls = getattr(torch.nn, name)
        assert inspect.isclass(cls) and issubclass(cls, torch.nn.Module), name
        if name in args:
            module = cls(*args[name])
        elif "Pool" in name:
            module = cls(2)
        else:
            module = cls()
        assert list(module.parameters()) == [] and list(module.buffers()) == [], name


def test_a_stateless_module_built_on_the_spot_is_no_model_never_moved():
    """deep_sort_pytorch's `torch.nn.Softmax(dim=1)(output[5:...])` on the GPU output (found on issue 43's
    third-round code bases)."""
    source = """
        import torch

        def post(x, device):
            x = x.to(device)
            return torch.nn.Softmax(dim=1)(x)
        """
    assert findings(source) == []
    assert findings(source.replace("torch.nn.Softmax(dim=1)", "torch.nn.Linear(3, 3)")) == [(6, "DK201")]


def test_the_shape_read_dk003_is_opt_in_and_the_traced_one_is_not():
    """Issue 43, round 3: DK003 read from a method's shape alone was right 0 of 3 times on real code, so it
    is DK903, opt-in; where the analysis follows the CPU tensor to a meet, DK003 stays on by default."""
    from devicekit.lint.rules import RULES

    assert not RULES["DK903"].default and RULES["DK003"].default
    traced = """
        import torch
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                noise = torch.randn(x.shape)
                return x + noise
        """
    assert findings(traced) == [(7, "DK003")]
