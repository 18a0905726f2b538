"""Tests for nasx.evaluator.base: normalize_metric and the Evaluator protocol."""

import math
import pickle

import numpy as np
import pytest
import torch

from nasx.evaluator import Evaluator, normalize_metric


@pytest.mark.parametrize(
    "value, expected",
    [
        (0.5, (0.5, {"default": 0.5})),
        (3, (3.0, {"default": 3.0})),
        (np.float32(0.25), (0.25, {"default": 0.25})),
        (torch.tensor(0.75), (0.75, {"default": 0.75})),
        ({"default": 1, "loss": np.float64(0.5)}, (1.0, {"default": 1.0, "loss": 0.5})),
    ],
)
def test_normalize_metric_accepts_numbers_and_dicts(value, expected):
    metric, metrics = normalize_metric(value)
    assert (metric, metrics) == expected
    assert all(type(v) is float for v in metrics.values())


@pytest.mark.parametrize(
    "value, message",
    [
        (None, "returned None"),
        (math.nan, "finite"),
        (math.inf, "finite"),
        (-math.inf, "finite"),
        ("0.9", "real number"),
        (True, "real number"),
        ([0.9], "real number"),
        (torch.tensor([0.1, 0.2]), "real number"),
        ({"acc": 0.9}, "'default'"),
        ({"default": 0.9, "loss": math.nan}, "'loss'"),
        ({"default": "high"}, "'default'"),
    ],
)
def test_normalize_metric_errors_name_the_problem(value, message):
    with pytest.raises(ValueError, match=message):
        normalize_metric(value)


def test_missing_default_lists_the_keys():
    with pytest.raises(ValueError, match=r"\['acc', 'loss'\]"):
        normalize_metric({"loss": 1.0, "acc": 0.5})


class _Constant(Evaluator):
    def __init__(self, value):
        self.value = value

    def evaluate(self, model, report=None):
        return self.value


def test_evaluator_defaults_and_pickling():
    assert Evaluator.direction == "maximize"
    with pytest.raises(NotImplementedError, match="_Constant|Evaluator"):
        Evaluator().evaluate(None)
    ev = pickle.loads(pickle.dumps(_Constant(lambda: 4)))  # a lambda in the state: cloudpickled
    assert ev.evaluate(None)() == 4
