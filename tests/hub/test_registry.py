"""One test over every hub entry (each space in list_spaces(), each model in available_models()):
build, count parameters, run a forward pass; the search form and the frozen default arch agree."""

import pytest
import torch

from nasx.hub import available_models, list_spaces, load_searched_model, space_entry
from nasx.hub.pretrained import SEARCHED_MODELS
from nasx.space import search_space


def _count(model):
    return sum(p.numel() for p in model.parameters())


def _shapes(out):
    if isinstance(out, dict):  # SpineNet: multi-level features
        return [tuple(t.shape) for t in out.values()]
    return [tuple(t.shape) for t in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("name", list_spaces())
def test_every_hub_space_builds_counts_and_runs(name):
    entry = space_entry(name)
    space = entry.cls(**entry.small)
    ss = search_space(space)
    assert len(ss) > 0
    model = space.freeze(ss.default())
    assert search_space(model) == {} and 0 < _count(model) <= _count(space)
    with torch.no_grad():
        out = model.eval()(torch.randn(2, *entry.input_size))
    assert all(s[0] == 2 for s in _shapes(out))


@pytest.mark.parametrize("name", available_models())
def test_every_searched_model_builds_counts_and_runs(name):
    model = load_searched_model(name)
    assert search_space(model) == {} and _count(model) > 1e6  # published sizes: millions
    size = 32 if SEARCHED_MODELS[name].kwargs.get("dataset", "cifar") == "cifar" else 64
    with torch.no_grad():
        out = model.eval()(torch.randn(1, 3, size, size))
    assert _shapes(out)[0][0] == 1


def test_unknown_space_lists_the_known_ones():
    with pytest.raises(ValueError, match="available: amoebanet, autoformer, darts"):
        space_entry("dart")
