"""DK004 in the shapes of issue 43's scenario 4 that the linter missed before its third round: a cache set
to None in `__init__` and filled in `forward`, a plain attribute set before `register_buffer` of the same
name, a tensor handed to `__init__` (annotated `Tensor`) kept as a plain attribute. Each has a silent twin."""

from __future__ import annotations

import textwrap

import torch

from devicekit.lint import DEFAULT_CODES, lint_source
from devicekit.lint.names import Names


def findings(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in lint_source(textwrap.dedent(source), "m.py", DEFAULT_CODES)]


CACHE = """
    import torch
    from torch import nn

    class PositionalEncoding(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.channels = channels
            self.cached = None

        def forward(self, x):
            if self.cached is not None and self.cached.shape == x.shape:
                return self.cached
            emb = torch.zeros(x.shape, device=x.device)
            self.cached = emb * 2
            return self.cached
    """


def test_a_cache_filled_in_forward_is_found_where_it_starts_as_none():
    assert findings(CACHE) == [(9, "DK004")]


def test_a_cache_registered_as_a_buffer_is_silent():
    fixed = CACHE.replace("self.cached = None", 'self.register_buffer("cached", None, persistent=False)')
    assert findings(fixed) == []


def test_a_cache_that_checks_its_device_is_silent():
    fixed = CACHE.replace("self.cached.shape == x.shape", "self.cached.device == x.device")
    assert findings(fixed) == []


def test_an_attribute_set_once_in_forward_without_reuse_is_no_cache():
    once = """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.last = None

            def forward(self, x):
                self.last = torch.zeros(3, device=x.device)
                return x
        """
    assert findings(once) == []


def test_a_cache_filled_under_an_if_in_a_module_of_another_package_is_found():
    tft = """
        import torch
        from torch import nn
        from darts.models.forecasting.pl_forecasting_module import PLForecastingModule

        class TFT(PLForecastingModule):
            def __init__(self, hidden):
                super().__init__()
                self.lstm = nn.LSTM(hidden, hidden)
                self.last = -1
                self.mask = None

            def forward(self, x):
                if x.shape[0] != self.last:
                    self.mask = torch.ones(x.shape[0], device=x.device)
                    self.last = x.shape[0]
                return self.lstm(x * self.mask)
        """
    assert findings(tft) == [(11, "DK004")]
    assert findings(tft.replace("self.mask = None", 'self.register_buffer("mask", None)')) == []
    assert findings(tft.replace("self.lstm = nn.LSTM(hidden, hidden)", "self.lstm = hidden")) == []


def test_a_base_named_module_without_nn_layers_is_no_module():
    import ast

    source = "from x import BaseModule\nclass A(BaseModule):\n    def __init__(self):\n        self.n = 3\n"
    assert Names(ast.parse(source)).module_classes == set()


REGISTER = """
    import torch
    from torch import nn

    class Decoder(nn.Module):
        def __init__(self, size):
            super().__init__()
            self.mask = torch.triu(torch.ones(size, size), diagonal=1)
            self.register_buffer("mask", self.mask)
    """


def test_register_buffer_after_a_plain_attribute_of_the_same_name_raises_keyerror():
    namespace: dict = {}
    exec(textwrap.dedent(REGISTER), namespace)
    try:
        namespace["Decoder"](3)
    except KeyError as error:
        message = str(error)
    else:  # pragma: no cover - the claim would be wrong
        raise AssertionError("register_buffer accepted a name a plain attribute holds")
    assert message == "\"attribute 'mask' already exists\""
    assert torch.__version__.startswith("2.")


def test_a_plain_attribute_set_before_register_buffer_is_found_and_its_twin_silent():
    found = lint_source(textwrap.dedent(REGISTER), "m.py", DEFAULT_CODES)
    assert [(f.line, f.code) for f in found] == [(8, "DK004")]
    assert "already exists" in found[0].detail.en and "already exists" in found[0].detail.zh
    fixed = REGISTER.replace("self.mask = torch", "mask = torch").replace(
        'register_buffer("mask", self.mask)', 'register_buffer("mask", mask)'
    )
    assert findings(fixed) == []


GIVEN = """
    import torch
    from torch import Tensor, nn

    class AppendFeatures(nn.Module):
        def __init__(self, feature_set: Tensor):
            super().__init__()
            self.feature_set = feature_set

        def forward(self, x):
            return torch.cat([x, self.feature_set.expand(x.shape[0], -1)], dim=-1)
    """


def test_a_given_tensor_kept_as_a_plain_attribute_is_found():
    assert findings(GIVEN) == [(8, "DK004")]


def test_a_given_tensor_registered_or_moved_in_forward_is_silent():
    assert (
        findings(
            GIVEN.replace(
                "self.feature_set = feature_set", 'self.register_buffer("feature_set", feature_set)'
            )
        )
        == []
    )
    moved = GIVEN.replace("self.feature_set.expand", "self.feature_set.to(x.device).expand")
    assert findings(moved) == []
    assert findings(GIVEN.replace("feature_set: Tensor", "feature_set")) == []
