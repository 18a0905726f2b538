"""ValueSwitch: a module chosen by a value choice's value, sharing the label with other uses."""

import pytest
import torch.nn as nn

from nasx.space import (
    Categorical,
    ModelSpace,
    MutableConv2d,
    ValueSwitch,
    model_context,
    search_space,
)
from nasx.space.value_switch import child_name


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        ratio = Categorical([1, 0.5], label="ratio")
        self.gate = ValueSwitch(ratio, {1: nn.Identity(), 0.5: nn.Sigmoid()})
        self.again = ValueSwitch(ratio, {1: nn.Identity(), 0.5: nn.Tanh()})  # same decision


def test_search_form_lists_the_label_once_and_keeps_every_candidate():
    net = Net()
    assert list(search_space(net)) == ["ratio"]
    assert [n for n, _ in net.gate.named_children()] == ["1", "0_5"]
    assert isinstance(net.gate.candidate(0.5), nn.Sigmoid)


def test_fixed_form_is_the_chosen_module():
    with model_context({"ratio": 0.5}):
        net = Net()
    assert isinstance(net.gate, nn.Sigmoid) and isinstance(net.again, nn.Tanh)


def test_a_candidate_per_value_is_required():
    with pytest.raises(ValueError, match=r"missing \[0.5\]"):
        ValueSwitch(Categorical([1, 0.5], label="r"), {1: nn.Identity()})
    with pytest.raises(TypeError, match="Categorical"):
        ValueSwitch([1, 2], {1: nn.Identity(), 2: nn.Identity()})


def test_child_names_have_no_dots():
    assert (
        child_name(0.25) == "0_25" and child_name("relu") == "relu" and child_name(True) == "True"
    )


def test_a_switch_and_a_mutable_layer_share_a_label():
    class Both(ModelSpace):
        def __init__(self):
            super().__init__()
            w = Categorical([4, 8], label="w")
            self.conv = MutableConv2d(3, w, 1)
            self.act = ValueSwitch(w, {4: nn.ReLU(), 8: nn.GELU()})

    with model_context({"w": 8}):
        m = Both()
    assert m.conv.out_channels == 8 and isinstance(m.act, nn.GELU)
