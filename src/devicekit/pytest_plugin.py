"""The pytest plugin of devicekit: a library's GPU code paths run in CPU-only CI, on simulated GPUs.

* ``pytest --simulate-gpus=2 [--simulate-profile=A100]`` runs the whole session inside
  ``devicekit.simulate(gpus=2, profile="A100")``: ``torch.cuda.is_available()`` is true, tests written for a
  GPU (``@pytest.mark.skipif(not torch.cuda.is_available(), ...)``) run, every value is computed for real
  and every device error is the one CUDA raises.
* the ``simulated_gpus`` fixture runs one test inside a simulation of its own, without the option:
  ``@pytest.mark.simulate_gpus(2, profile="A100")`` says how many GPUs and which model (default: the
  option's, else one H200). The fixture's value is what ``simulate()`` gives on entry.

The plugin is registered through the ``pytest11`` entry point, so it is there wherever devicekit is
installed; without the option or the fixture it does nothing and imports nothing (not even torch).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

_SESSION = "_devicekit_simulation"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("devicekit", "devicekit: simulated GPUs")
    group.addoption(
        "--simulate-gpus",
        type=int,
        default=None,
        metavar="N",
        help="run the session on N simulated CUDA GPUs (devicekit.simulate) · 在 N 块模拟的 CUDA GPU 上运行",
    )
    group.addoption(
        "--simulate-profile",
        default=None,
        metavar="NAME",
        help="the GPU model to simulate (default H200) · 模拟哪种 GPU（默认 H200）",
    )


def _profile(config: pytest.Config) -> str:
    return config.getoption("--simulate-profile") or "H200"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "simulate_gpus(n, profile='H200'): the GPUs (how many, which model) the simulated_gpus fixture gives",
    )
    gpus = config.getoption("--simulate-gpus")
    if gpus is None:
        return
    if gpus < 1:
        raise pytest.UsageError(
            f"--simulate-gpus must be a positive number, got {gpus} · --simulate-gpus 必须是正整数"
        )
    from devicekit.simulate import simulate

    simulation = simulate(gpus=gpus, profile=_profile(config))
    simulation.__enter__()
    setattr(config, _SESSION, simulation)


def pytest_unconfigure(config: pytest.Config) -> None:
    simulation = getattr(config, _SESSION, None)
    if simulation is not None:
        delattr(config, _SESSION)
        simulation.__exit__(None, None, None)


def pytest_report_header(config: pytest.Config) -> str | None:
    gpus = config.getoption("--simulate-gpus")
    if gpus is None:
        return None
    return f"devicekit: {gpus} simulated GPU(s), {_profile(config)} (devicekit.simulate)"


@pytest.fixture
def simulated_gpus(request: pytest.FixtureRequest) -> Iterator[Any]:
    """This test runs inside ``devicekit.simulate()``: ``@pytest.mark.simulate_gpus(n, profile=...)`` picks
    the number of GPUs and the model (default: ``--simulate-gpus``/``--simulate-profile``, else one H200)."""
    from devicekit.simulate import simulate

    marker = request.node.get_closest_marker("simulate_gpus")
    gpus = request.config.getoption("--simulate-gpus") or 1
    profile = _profile(request.config)
    if marker is not None:
        gpus = marker.args[0] if marker.args else marker.kwargs.get("n", gpus)
        profile = marker.kwargs.get("profile", profile)
    with simulate(gpus=gpus, profile=profile) as simulation:
        yield simulation
