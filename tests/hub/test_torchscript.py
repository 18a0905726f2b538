"""TorchScript: every rebuilt hub model and every pre-searched arch scripts, and the scripted
module computes what the eager one does (the README's promise that rebuilt models script)."""

from __future__ import annotations

import random

import pytest
import torch

from nasx.hub.pretrained import _entry, available_models
from nasx.hub.registry import list_spaces, space_entry
from nasx.space import model_context, search_space

# Models that take more than a few seconds to build and script on 2 CPU cores (the published-size
# cell networks take about 20 s each): the small rebuilt spaces cover the same code by default.
_SLOW = {"amoebanet", *(n for n in available_models() if n not in ("mnasnet-a1", "mobilenetv2"))}


def _assert_scripts_and_matches(model: torch.nn.Module, x: torch.Tensor) -> None:
    model.eval()
    scripted = torch.jit.script(model)
    with torch.no_grad():
        expected, got = model(x), scripted(x)
    if isinstance(expected, dict):
        assert list(got) == list(expected)
        for key in expected:
            torch.testing.assert_close(got[key], expected[key])
    else:
        torch.testing.assert_close(got, expected)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW else n for n in list_spaces()]
)
def test_every_rebuilt_hub_space_scripts(name):
    entry = space_entry(name)
    arch = search_space(entry.cls(**entry.small)).sample(random.Random(0))
    with model_context(arch):
        model = entry.cls(**entry.small)
    _assert_scripts_and_matches(model, entry.example_input(2))


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW else n for n in available_models()],
)
def test_every_pre_searched_model_scripts(name):
    model = _entry(name).build()
    size = 64 if name.startswith("spinenet") else 32
    _assert_scripts_and_matches(model, torch.randn(1, 3, size, size))
