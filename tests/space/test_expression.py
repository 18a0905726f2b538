"""Value-choice expressions: values computed by hand, leaves listed, rebuilds under model_context."""

import operator
import pickle

import pytest
import torch
import torch.nn as nn

from nasx.space import (
    Categorical,
    InvalidArchError,
    LabelConflictError,
    ModelSpace,
    MutableConv2d,
    MutableExpression,
    MutableLinear,
    ensure_frozen,
    model_context,
    search_space,
)

A = {"a": 4, "b": 3}


def choices():
    return Categorical([2, 4], label="a"), Categorical([3, 5], label="b")


@pytest.mark.parametrize(
    "build, expected",
    [
        (lambda a, b: a + 1, 5),
        (lambda a, b: 1 + a, 5),
        (lambda a, b: a - b, 1),
        (lambda a, b: 10 - a, 6),
        (lambda a, b: a * b, 12),
        (lambda a, b: a / 8, 0.5),
        (lambda a, b: 9 // a, 2),
        (lambda a, b: b % a, 3),
        (lambda a, b: a**2, 16),
        (lambda a, b: 2**a, 16),
        (lambda a, b: -a, -4),
        (lambda a, b: abs(-a), 4),
        (lambda a, b: a > b, True),
        (lambda a, b: a <= 3, False),
        (lambda a, b: a == 4, True),
        (lambda a, b: a != b, True),
        (lambda a, b: MutableExpression.max(a, b, 1), 4),
        (lambda a, b: MutableExpression.min([a, b]), 3),
        (lambda a, b: MutableExpression.condition(a > b, "a", "b"), "a"),
        (lambda a, b: Categorical([[1, 2], [3, 4]], label="c")[1], 2),
        (lambda a, b: MutableExpression.to_int(a / 3), 1),
        (lambda a, b: MutableExpression.sum([a, b, 1]), 8),
        (lambda a, b: round(a / 3, 1), 1.3),
    ],
)
def test_operator_values(build, expected):
    expr = build(*choices())
    assert expr.freeze({**A, "c": [1, 2]}) == expected


def test_simplify_lists_each_leaf_once_and_freeze_validates():
    a, b = choices()
    expr = a * a + b
    assert list(expr.simplify()) == ["a", "b"]
    assert expr.freeze(A) == 19
    with pytest.raises(InvalidArchError, match="'a'"):
        expr.freeze({"a": 7, "b": 3})
    with pytest.raises(InvalidArchError, match="'b'"):
        expr.freeze({"a": 2})
    assert expr.contains(A) and not expr.contains({"a": 2})


def test_one_label_for_two_decisions_is_refused():
    expr = Categorical([1, 2], label="x") + Categorical([1, 3], label="x")
    with pytest.raises(LabelConflictError):
        expr.simplify()


def test_grid_random_and_default():
    a, b = choices()
    expr = a * 10 + b
    assert expr.grid() == [23, 25, 43, 45]  # product of the leaves' grids, last varying fastest
    assert expr.default == 23
    memo = {}
    assert expr.random(memo, random_state=0) == memo["a"] * 10 + memo["b"]
    assert expr.grid(memo={"a": 2}) == [23, 25]


def test_equals_compares_structure_and_eq_builds_expressions():
    a, b = choices()
    assert (a + 1).equals(a + 1) and not (a + 1).equals(a + 2) and not (a + 1).equals(b + 1)
    assert isinstance(a == b, MutableExpression)
    assert bool(a == Categorical([2, 4], label="a"))  # same decision: equal as a bool
    assert not bool(a == b) and bool(a != b)
    assert a in [Categorical([2, 4], label="a")]


def test_an_undecided_expression_refuses_bool_and_int():
    a, _ = choices()
    with pytest.raises(RuntimeError, match="condition"):
        bool(a > 2)
    with pytest.raises(RuntimeError, match="ensure_frozen"):
        range(a)
    with pytest.raises(TypeError):
        list(a)


def test_constant_helpers_compute_at_once():
    assert MutableExpression.max(1, 5, 3) == 5 and MutableExpression.condition(False, 1, 2) == 2


def test_expressions_pickle():
    a, b = choices()
    expr = MutableExpression.condition(a > b, a * 2, MutableExpression.max(a, b))
    assert pickle.loads(pickle.dumps(expr)).freeze(A) == 8
    assert (a + 1).function is operator.add


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        ch = Categorical([4, 8], label="ch")
        self.conv1 = MutableConv2d(3, ch, 3, padding=1)
        self.conv2 = MutableConv2d(ch, ch * 2, 3, padding=1)
        self.fc = MutableLinear(ch * 2, MutableExpression.max(ch - 2, 5))
        self.scale = ensure_frozen(ch // 4)

    def forward(self, x):
        return self.fc(self.conv2(self.conv1(x)).mean((2, 3)))


def test_expressions_in_a_space_list_only_leaf_labels_and_rebuild():
    space = Net()
    assert list(search_space(space)) == ["ch"]
    assert space.conv2.out_channels == 8 and space.fc.out_features == 5 and space.scale == 1
    with model_context({"ch": 8}):
        model = Net()
    assert type(model.conv2) is nn.Conv2d
    assert (model.conv2.in_channels, model.conv2.out_channels) == (8, 16)
    assert (model.fc.in_features, model.fc.out_features, model.scale) == (16, 6, 2)
    assert model(torch.randn(1, 3, 8, 8)).shape == (1, 6)
    assert space.freeze({"ch": 4}).fc.out_features == 5


def test_containers_simplify_and_freeze():
    from nasx.space import MutableDict, MutableList

    a, b = choices()
    lst = MutableList([a, b * 2, "plain"])
    assert list(lst.simplify()) == ["a", "b"] and lst.freeze(A) == [4, 6, "plain"]
    assert len(lst) == 3 and lst[0] is a and list(lst)[2] == "plain"
    d = MutableDict({"x": a, "y": MutableExpression.max(a, b)})
    assert d.freeze(A) == {"x": 4, "y": 4} and list(d) == ["x", "y"]
    assert lst.equals(MutableList([a, b * 2, "plain"])) and not d.equals(lst)


def test_frozen_context_and_ensure_frozen_modes():
    from nasx.space import frozen_context

    a, _ = choices()
    with frozen_context({"a": 4}):
        assert ensure_frozen(a + 1) == 5 and frozen_context.current() == {"a": 4}
    assert ensure_frozen(a, sample={"a": 4}) == 4 and ensure_frozen(a, strict=False) == 2
    with pytest.raises(RuntimeError, match="strict=False"):  # NNI's default is strict
        ensure_frozen(a)


def test_weighted_categorical_follows_its_prior():
    import random

    c = Categorical(["x", "y"], label="w", weights=[0.9, 0.1])
    draws = [c.sample(random.Random(i)) for i in range(500)]
    assert 0.85 < draws.count("x") / 500 < 0.95
    with pytest.raises(ValueError, match="summing to 1"):
        Categorical([1, 2], label="bad", weights=[0.5, 0.6])


def test_add_mutable_registers_leaves_of_expressions():
    class Space(ModelSpace):
        def __init__(self):
            super().__init__()
            self.add_mutable(Categorical([1, 2], label="p") * Categorical([3, 4], label="q"))
            self.kept = self.add_mutable(7)  # a plain value passes through

    space = Space()
    assert list(search_space(space)) == ["p", "q"] and space.kept == 7
    assert space.contains({"p": 1, "q": 4}) and not space.contains({"p": 1})
