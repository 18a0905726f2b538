"""nasx.choice's value in a search form: the plain value wherever a plain value is expected, and
its choice where a layer that searches its arguments asks for it (nasx/space/chosen.py)."""

from __future__ import annotations

import copy
import json
import math
import pickle

import pytest
import torch
import torch.nn as nn

import nasx
from nasx.space import (
    Categorical,
    ModelSpace,
    MutableConv2d,
    ParametrizedModule,
    ensure_frozen,
    model_context,
    search_space,
)
from nasx.space.chosen import ChosenFloat, ChosenInt, ChosenStr, ChosenValue, plain


def _values_in_a_space(**declared):
    """``{name: nasx.choice(name, values)}`` as a space's constructor receives them."""
    got = {}

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            for name, values in declared.items():
                got[name] = nasx.choice(name, values)

    Net()
    return got


@pytest.mark.parametrize(
    "values, kind",
    [([16, 32], ChosenInt), ([0.1, 0.5], ChosenFloat), (["relu", "gelu"], ChosenStr)],
)
def test_the_value_behaves_as_the_plain_value(values, kind):
    value = _values_in_a_space(x=values)["x"]
    default = values[0]
    assert type(value) is kind and isinstance(value, type(default))
    assert value == default and hash(value) == hash(default) and repr(value) == repr(default)
    assert value.choice == Categorical(values, label="x") and value.label == "x"
    assert json.dumps({"x": value}) == json.dumps({"x": default})
    assert {value: 1}[default] == 1
    for copied in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert copied == default and isinstance(copied, ChosenValue)
        assert copied.choice == value.choice
    assert type(plain(value)) is type(default)
    assert type(ensure_frozen(value)) is type(default)  # NNI's ensure_frozen: a plain value
    assert ensure_frozen(value, sample={"x": values[1]}) == values[1]


def test_other_values_and_fixed_forms_are_plain():
    got = _values_in_a_space(flag=[True, False], nothing=[None, 1], pair=[[1, 2], [3, 4]])
    assert got == {"flag": True, "nothing": None, "pair": [1, 2]}
    assert not any(isinstance(v, ChosenValue) for v in got.values())

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.width = nasx.choice("w", [4, 8])

    with model_context({"w": 8}):
        assert type(Net().width) is int  # a fixed model's attributes are plain


def test_arithmetic_keeps_the_choice_as_an_expression():
    w = _values_in_a_space(w=[4, 8])["w"]
    cases = {
        "w * 2": (w * 2, 16),
        "3 + w": (3 + w, 11),
        "w // 3": (w // 3, 2),
        "w / 8": (w / 8, 1.0),
        "-w": (-w, -8),
        "round(w * 0.6)": (round(w * 0.6), 5),
        "math.ceil(w / 3)": (math.ceil(w / 3), 3),
        "w << 1": (w << 1, 16),
    }
    for text, (value, under_w8) in cases.items():
        assert isinstance(value, ChosenValue) and value == eval(text, {"math": math, "w": 4}), text
        assert value.choice.freeze({"w": 8}) == under_w8, text  # the expression NNI would build
        assert value.labels() == ["w"], text
    assert type(int(w / 2)) is int and type(w > 4) is bool  # conversions, comparisons: plain
    assert (w * torch.ones(2)).tolist() == [4.0, 4.0]  # other operands: as the plain value
    both = w * Categorical([1, 2], label="m")  # with a choice object: NNI's expression
    assert both.freeze({"w": 8, "m": 2}) == 16


def test_torch_layers_take_the_values():
    got = _values_in_a_space(w=[4, 8], k=[3, 5], p=[0.1, 0.2], mode=["zeros", "reflect"])
    conv = nn.Conv2d(2, got["w"], got["k"], padding=1, padding_mode=got["mode"])
    assert conv(torch.randn(1, 2, 6, 6)).shape == (1, 4, 6, 6)
    assert repr(conv) == repr(nn.Conv2d(2, 4, 3, padding=1))
    assert nn.Dropout(got["p"]).p == 0.1
    attn = nn.MultiheadAttention(got["w"], got["w"] // 2)
    assert attn(*(torch.randn(3, 1, 4),) * 3)[0].shape == (3, 1, 4)
    assert torch.zeros(got["w"], 2).shape == (4, 2)


def test_categorical_and_validate_read_the_plain_value():
    w = _values_in_a_space(w=[4, 8])["w"]
    c = Categorical([w, 16], label="c")
    assert c.values == [4, 16] and type(c.values[0]) is int
    assert type(Categorical([4, 8], label="w").validate(w)) is int


def test_a_parametrized_module_sees_the_choice():
    class Scale(ParametrizedModule):
        def __init__(self, factor):
            super().__init__()
            self.factor = factor

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.scale = Scale(nasx.choice("f", [1, 2]))
            self.conv = MutableConv2d(1, 4, (nasx.choice("k", [3, 5]), 1))

    net = Net()
    assert type(net.scale.factor) is int and net.scale.args["factor"].label == "f"
    assert net.conv.args["kernel_size"] == (Categorical([3, 5], label="k"), 1)
    assert sorted(search_space(net)) == ["f", "k"]
    assert net.freeze({"f": 2, "k": 5}).conv.kernel_size == (5, 1)
