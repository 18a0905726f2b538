"""nasx's side of NNI's space API: edge cases and errors of what tests/nni_compat ports."""

import json

import pytest
import torch.nn as nn

import nasx
from nasx.space import (
    Categorical,
    InvalidArchError,
    LayerChoice,
    ModelSpace,
    MutableExpression,
    Numerical,
    ParametrizedModule,
    Repeat,
    SearchSpace,
    frozen_context,
    search_space,
    search_space_from_nni,
)


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")
        self.fc = nn.Linear(2, nasx.choice("width", [4, 8]))
        self.add_mutable(Numerical(1e-4, 1e-1, log_distributed=True, label="lr"))


def test_search_space_to_json_round_trips():
    space = search_space(Net())
    with pytest.raises(TypeError):  # choice objects have no JSON form: hence to_json()
        json.dumps(space)
    text = space.to_json(sort_keys=True)
    assert json.loads(text)["width"] == {"_type": "choice", "_value": [4, 8]}
    back = search_space_from_nni(json.loads(text))
    assert set(back) == set(space) and back["lr"].equals(space["lr"])


def test_inside_a_space_the_shortcuts_still_give_values():
    space = Net()
    assert space.fc.out_features == 4
    assert isinstance(search_space(space)["width"], Categorical)


@pytest.mark.parametrize(
    "depth, match",
    [
        (Categorical([1, 2], label="d") / 2, "not ints"),
        (Categorical([1, 2], label="d") - 3, "not ints"),
        (MutableExpression.to_int(Numerical(1, 3, label="d")), "finitely many"),
    ],
    ids=["float", "negative", "continuous"],
)
def test_repeat_refuses_expressions_that_are_not_depths(depth, match):
    with pytest.raises(ValueError, match=match):
        Repeat(nn.Identity(), depth)


def test_repeat_expression_depth_is_an_arch_of_its_choices():
    blocks = Repeat(nn.Linear(2, 2), Categorical([0, 1], label="a") + 1)
    assert blocks.default_depth == 1 and blocks.label is None
    assert [c.label for c in blocks.choices()] == ["a"]


def test_parametrized_module_wraps_only_modules():
    with pytest.raises(TypeError, match="wraps="):

        class Bad(ParametrizedModule, wraps=int):  # type: ignore[arg-type]
            pass


def test_model_space_args_a_space_sets_itself_wins():
    class WithArgs(ModelSpace):
        def __init__(self, width=3):
            super().__init__()
            self.args = {"mine": True}

    assert WithArgs().args == {"mine": True}


def test_model_space_args_with_star_args_says_what_to_read():
    class Star(ModelSpace):
        def __init__(self, *widths):
            super().__init__()

    space = Star(1, 2)
    assert space.trace_args == (1, 2)
    with pytest.raises(RuntimeError, match="trace_args"):
        space.args  # noqa: B018


def test_simplify_is_leaf_needs_labels_and_choices():
    space = Net()
    with pytest.raises(ValueError, match="can't be expanded"):
        space.simplify(is_leaf=lambda m: False)
    expr = Categorical([1, 2], label="a") * 2
    with pytest.raises(ValueError, match="no label"):
        expr.simplify(is_leaf=lambda m: True)


def test_frozen_context_update_refuses_non_string_labels():
    with frozen_context({"a": 1}), pytest.raises(InvalidArchError, match="strings"):
        frozen_context.update({1: 2})


def test_random_with_a_memo_value_not_allowed_names_it():
    with pytest.raises(InvalidArchError, match="'act'"):
        Net().random({"act": 5})


def test_empty_search_space_json():
    assert SearchSpace().to_json() == "{}"
