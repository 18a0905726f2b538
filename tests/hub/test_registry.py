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
        out = model.eval()(entry.example_input(2))
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


def test_the_language_model_row_takes_token_ids():
    entry = space_entry("gpt")
    x = entry.example_input(3, seed=1)
    assert entry.input_kind == "tokens" and x.dtype == torch.long and x.shape == (3, 16)
    assert 0 <= int(x.min()) and int(x.max()) < entry.small["vocab_size"]
    model = entry.cls(**entry.small).freeze(search_space(entry.cls(**entry.small)).default())
    assert model(x).shape == (3, 16, entry.small["vocab_size"])  # [B, T, vocab] logits
    image = space_entry("darts").example_input(2)
    assert image.dtype == torch.float32 and image.shape == (2, 3, 16, 16)


def test_spaces_are_listed_by_input_kind():
    assert list_spaces("tokens") == ["gpt"]
    assert set(list_spaces("image")) == set(list_spaces()) - {"gpt"}
    with pytest.raises(
        ValueError, match="input_kind must be None, 'image' or 'tokens', got 'text'"
    ):
        list_spaces("text")


def test_nasx_run_classifies_images_so_it_lists_image_spaces_only():
    from nasx.pipeline import PipelineError, validate

    search = {"workdir": "w", "space": {"name": "gpt"}, "data": {"name": "random"}}
    with pytest.raises(PipelineError, match="'gpt' is not allowed; allowed: amoebanet, autoformer"):
        validate({"pipeline": ["search"], "search": search})
    search["space"]["name"] = "mnasnet"
    assert (
        validate({"pipeline": ["search"], "search": search})["search"]["space"]["name"] == "mnasnet"
    )
