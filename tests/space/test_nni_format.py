"""NNI's search-space JSON and tuner parameters, over hand-made spaces and every hub space."""

import json

import pytest
import torch.nn as nn

from nasx.hub import list_spaces, space_entry
from nasx.space import (
    Categorical,
    InputChoice,
    InvalidArchError,
    LayerChoice,
    ModelSpace,
    Numerical,
    Repeat,
    arch_from_nni,
    search_space,
    search_space_from_nni,
    to_nni_search_space,
)


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.op = LayerChoice({"relu": nn.ReLU(), "tanh": nn.Tanh()}, label="op")
        self.skip = InputChoice(3, n_chosen=2, label="skip")
        self.depth = Repeat(nn.Identity(), (1, 2), label="depth")
        self.add_mutable(Categorical([16, 32], label="width"))
        self.add_mutable(Numerical(0.1, 1.0, quantize=0.1, label="ratio"))
        self.add_mutable(Numerical(mu=0.0, sigma=1.0, label="noise"))


def test_export_uses_nni_types():
    assert to_nni_search_space(Net()) == {
        "op": {"_type": "layer_choice", "_value": ["relu", "tanh"]},
        "skip": {"_type": "input_choice", "_value": {"candidates": [0, 1, 2], "n_chosen": 2}},
        "depth": {"_type": "choice", "_value": [1, 2]},
        "width": {"_type": "choice", "_value": [16, 32]},
        "ratio": {"_type": "quniform", "_value": [0.1, 1.0, 0.1]},
        "noise": {"_type": "normal", "_value": [0.0, 1.0]},
    }


def test_tuner_parameters_in_nni_formats_become_an_arch():
    params = {
        "op": {"_value": "tanh", "_idx": 1},
        "skip": {"_value": [0, 2], "_idx": [0, 2]},
        "depth": {"_value": 2, "_idx": 1},
        "width": 32,
        "ratio": {"_value": 0.3},
        "noise": -0.5,
    }
    arch = arch_from_nni(params, Net())
    assert arch == {
        "op": "tanh",
        "skip": [0, 2],
        "depth": 2,
        "width": 32,
        "ratio": 0.3,
        "noise": -0.5,
    }
    with pytest.raises(InvalidArchError, match="'width'"):
        arch_from_nni({**params, "width": 64}, Net())


def test_an_unknown_type_is_named():
    with pytest.raises(ValueError, match="'x' has _type 'randint'"):
        search_space_from_nni({"x": {"_type": "randint", "_value": [0, 3]}})


@pytest.mark.parametrize("name", list_spaces())
def test_every_hub_space_round_trips_through_nni_json(name):
    entry = space_entry(name)
    ss = search_space(entry.cls(**entry.small))
    text = json.dumps(to_nni_search_space(ss))
    back = search_space_from_nni(json.loads(text))
    assert list(back) == list(ss) and back == ss
    arch = ss.sample(seed=1)
    as_tuner = {label: {"_value": value} for label, value in json.loads(json.dumps(arch)).items()}
    assert arch_from_nni(as_tuner, ss) == ss.validate(arch)
