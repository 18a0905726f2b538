import pytest
import torch
import torch.nn as nn

from nasx.space import (
    Categorical,
    InvalidArchError,
    LayerChoice,
    Repeat,
    model_context,
    search_space,
)


def test_range_depth_search_form_holds_max_depth_and_runs_min():
    rep = Repeat(lambda i: nn.Linear(2, 2), (1, 3), label="depth")
    assert len(rep.blocks) == 3
    assert search_space(rep)["depth"].values == [1, 2, 3]
    x = torch.randn(4, 2)
    assert torch.allclose(rep(x), rep.blocks[0](x))


def test_fixed_form_is_sequential_with_matching_keys():
    rep = Repeat(lambda i: nn.Linear(2, 2), (1, 3), label="depth")
    with model_context({"depth": 2}):
        fixed = Repeat(lambda i: nn.Linear(2, 2), (1, 3), label="depth")
    assert type(fixed) is nn.Sequential and len(fixed) == 2
    assert set(fixed.state_dict()) <= set(rep.state_dict())  # '0.weight', '1.weight', ... in both


def test_module_block_is_deep_copied_per_position():
    block = nn.Linear(2, 2)
    rep = Repeat(block, 3)
    weights = [b.weight for b in rep.blocks]
    assert all(w is not block.weight for w in weights)
    assert len({id(w) for w in weights}) == 3
    assert search_space(rep) == {}


def test_factory_receives_index_and_list_of_blocks():
    rep = Repeat(lambda i: nn.Linear(2, i + 1), 3)
    assert [b.out_features for b in rep.blocks] == [1, 2, 3]
    with model_context({}):
        fixed = Repeat([nn.Linear(2, 3), nn.Linear(3, 4)], 2)
    assert fixed(torch.randn(1, 2)).shape == (1, 4)


def test_categorical_depth_and_zero_depth():
    depth = Categorical([0, 2], label="d")
    with model_context({"d": 0}):
        fixed = Repeat(nn.ReLU(), depth)
    x = torch.randn(3)
    assert torch.equal(fixed(x), x)


def test_choices_inside_blocks_get_their_own_labels():
    rep = Repeat(
        lambda i: LayerChoice([nn.ReLU(), nn.Tanh()], label=f"act{i}"), (1, 2), label="depth"
    )
    assert list(search_space(rep)) == ["depth", "act0", "act1"]
    # Depth 1 never builds block 1, so 'act1' may be left out of the arch.
    with model_context({"depth": 1, "act0": 1}):
        fixed = Repeat(
            lambda i: LayerChoice([nn.ReLU(), nn.Tanh()], label=f"act{i}"), (1, 2), label="depth"
        )
    assert isinstance(fixed[0], nn.Tanh)


def test_bad_depths():
    with pytest.raises(ValueError, match="0 <= min <= max"):
        Repeat(nn.ReLU(), (3, 1))
    with pytest.raises(TypeError, match="depth must be"):
        Repeat(nn.ReLU(), "3")
    with pytest.raises(ValueError, match=">= 0"):
        Repeat(nn.ReLU(), -1)
    with model_context({"depth": 7}):
        with pytest.raises(InvalidArchError, match="label 'depth'"):
            Repeat(nn.ReLU(), (1, 3), label="depth")
