"""Mutable* layers: NNI's args and freeze(sample), and Mutable<Layer> for any torch.nn layer."""

import pickle

import pytest
import torch
import torch.nn as nn

import nasx.space
from nasx.space import (
    Categorical,
    ModelSpace,
    MutableConv2d,
    MutableMultiheadAttention,
    model_context,
    mutable_layer,
    search_space,
)


def test_args_and_freeze():
    out = Categorical([8, 16], label="out")
    conv = MutableConv2d(3, out, kernel_size=3)
    assert (
        conv.args["out_channels"] is out
        and conv.args["kernel_size"] == 3
        and conv.args["stride"] == 1
    )
    frozen = conv.freeze({"out": 16})
    assert type(frozen) is nn.Conv2d and frozen.out_channels == 16


def test_multihead_attention_heads_are_a_choice():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.attn = MutableMultiheadAttention(
                16, Categorical([2, 4], label="heads"), batch_first=True
            )

        def forward(self, x):
            return self.attn(x, x, x)[0]

    assert list(search_space(Net())) == ["heads"]
    with model_context({"heads": 4}):
        model = Net()
    assert type(model.attn) is nn.MultiheadAttention and model.attn.num_heads == 4
    assert model(torch.randn(2, 5, 16)).shape == (2, 5, 16)


def test_any_torch_layer_gets_a_mutable_class_on_first_use():
    MutablePReLU = nasx.space.MutablePReLU
    assert MutablePReLU is mutable_layer(nn.PReLU) is nasx.space.mutable_ops.MutablePReLU

    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.act = MutablePReLU(Categorical([1, 4], label="n"))

    space = Net()
    assert list(search_space(space)) == ["n"]
    assert type(pickle.loads(pickle.dumps(space.act))) is MutablePReLU  # found again by name
    assert space.freeze({"n": 4}).act.num_parameters == 4
    with pytest.raises(AttributeError, match="MutableNoSuchLayer"):
        nasx.space.MutableNoSuchLayer  # noqa: B018
    with pytest.raises(AttributeError):
        nasx.space.MutableSequential  # noqa: B018  # containers are not layers
