import json

import pytest
import torch.nn as nn

from nasx.space import (
    Categorical,
    InputChoice,
    InvalidArchError,
    LayerChoice,
    ModelSpace,
    MutableConv2d,
    MutableLinear,
    Repeat,
    choice,
    current_arch,
    ensure_frozen,
    model_context,
    search_space,
)


class Space(ModelSpace):
    def __init__(self, n_classes: int = 10):
        super().__init__()
        width = choice("width", [4, 8])
        self.conv = MutableConv2d(
            3, Categorical([4, 8], label="width"), Categorical([3, 5], label="k")
        )
        self.act = LayerChoice({"relu": nn.ReLU(), "tanh": nn.Tanh()}, label="act")
        self.skip = InputChoice(2, label="skip")
        self.body = Repeat(lambda i: nn.Conv2d(width, width, 1), (1, 2), label="depth")
        self.fc = nn.Linear(width, n_classes)


def test_search_space_lists_every_decision_once():
    space = search_space(Space())
    assert set(space) == {"width", "k", "act", "skip", "depth"}
    assert space.size == 2 * 2 * 2 * 2 * 2
    assert len(list(space.grid())) == space.size
    assert space.default() == {"width": 4, "k": 3, "act": "relu", "skip": [0], "depth": 1}


def test_validate_errors_name_label_value_and_allowed():
    space = search_space(Space())
    arch = space.default()
    with pytest.raises(InvalidArchError, match=r"unknown label\(s\) \['colour'\]"):
        space.validate({**arch, "colour": "red"})
    missing = dict(arch)
    del missing["act"]
    with pytest.raises(
        InvalidArchError, match=r"missing label\(s\): 'act' \(allowed: \['relu', 'tanh'\]\)"
    ):
        space.validate(missing)
    with pytest.raises(InvalidArchError, match="invalid value 'gelu' for label 'act'"):
        space.validate({**arch, "act": "gelu"})
    with pytest.raises(InvalidArchError, match="expected 1 chosen"):
        space.validate({**arch, "skip": [0, 1]})
    assert space.validate({**arch, "skip": 1})["skip"] == [1]


def test_arch_json_round_trip_rebuilds_same_model():
    space = Space()
    ss = search_space(space)
    for seed in range(5):
        arch = ss.sample(seed=seed)
        assert json.loads(json.dumps(arch)) == arch
        a = space.freeze(arch)
        b = space.freeze(json.loads(json.dumps(arch)))
        assert str(a) == str(b)
        assert a.conv.out_channels == arch["width"] and a.conv.kernel_size == (arch["k"],) * 2


def test_fixed_model_has_plain_layers_and_no_choices():
    with model_context({"width": 8, "k": 5, "act": "tanh", "skip": [1], "depth": 2}):
        model = Space(n_classes=3)
    assert type(model.conv) is nn.Conv2d and type(model.act) is nn.Tanh
    assert type(model.body) is nn.Sequential and len(model.body) == 2
    assert model.fc.in_features == 8 and model.fc.out_features == 3
    assert search_space(model) == {}


def test_freeze_keeps_constructor_arguments_and_validates():
    space = Space(n_classes=3)
    model = space.freeze({"width": 8, "k": 5, "act": "tanh", "skip": [1], "depth": 2})
    assert model.fc.out_features == 3
    with pytest.raises(InvalidArchError, match="missing"):
        space.freeze({"width": 8})


def test_model_context_nesting_and_bad_input():
    assert current_arch() is None
    with model_context({"a": 1}):
        with model_context({"b": 2}):
            assert current_arch() == {"a": 1, "b": 2}
        assert current_arch() == {"a": 1}
    assert current_arch() is None
    with pytest.raises(TypeError, match="dict mapping labels"):
        with model_context([("a", 1)]):
            pass


def test_ensure_frozen_and_mutable_layer_search_form():
    lin = MutableLinear(4, Categorical([8, 16], label="h"))
    assert isinstance(lin, nn.Linear) and lin.out_features == 8
    assert list(search_space(lin)) == ["h"]
    assert ensure_frozen((Categorical([1, 2], label="a"), 3), strict=False) == (1, 3)
    with pytest.raises(RuntimeError, match="no arch to take the value from"):
        ensure_frozen((Categorical([1, 2], label="a"), 3))  # NNI's default: strict


def test_search_space_rejects_non_modules():
    with pytest.raises(TypeError, match="expects an nn.Module"):
        search_space({"a": 1})


class _Deep(ModelSpace):
    def __init__(self):
        super().__init__()
        self.blocks = Repeat(
            lambda i: (
                nn.Linear(2, 2) if i == 0 else LayerChoice([nn.ReLU(), nn.Tanh()], label=f"a{i}")
            ),
            (1, 3),
            label="depth",
        )


def test_model_context_refuses_labels_the_space_does_not_have():
    with pytest.raises(
        InvalidArchError, match=r"unknown label\(s\) \['dpeth'\].*labels \['depth', 'a1', 'a2'\]"
    ):
        with model_context({"depth": 1, "a1": 0, "a2": 0, "dpeth": 2}):
            _Deep()
    # A smaller depth skips blocks: their labels are the space's, so the full arch is accepted.
    with model_context({"depth": 1, "a1": 0, "a2": 1}):
        assert len(_Deep().blocks) == 1
    # The explicit opt-out, for building one part of a space under the arch of the whole.
    with model_context({"depth": 2, "a1": 1, "a2": 0, "other_part": 3}, strict=False):
        assert isinstance(_Deep().blocks[1], nn.Tanh)
    with model_context({"other_part": 3}, strict=False), model_context({"depth": 1}):
        assert len(_Deep().blocks) == 1  # an outer non-strict context stays non-strict
