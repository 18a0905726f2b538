"""Tests for FunctionalEvaluator: kwargs, the report callback, pickling."""

import pickle

import cloudpickle
import pytest
import torch

from nasx.evaluator import FunctionalEvaluator


def count_params(model, scale=1.0):
    return scale * sum(p.numel() for p in model.parameters())


def with_report(model, epochs, report):
    for epoch in range(epochs):
        report(epoch / 10)
    return {"default": float(epochs), "extra": 1.0}


def test_kwargs_are_passed_and_metric_returned():
    ev = FunctionalEvaluator(count_params, scale=2.0)
    # Linear(3, 4): 3*4 weights + 4 biases = 16 parameters
    assert ev.evaluate(torch.nn.Linear(3, 4)) == 32.0
    assert ev.kwargs == {"scale": 2.0} and ev.fn is count_params


def test_report_receives_intermediates():
    seen = []
    result = FunctionalEvaluator(with_report, epochs=3).evaluate(None, report=seen.append)
    assert seen == [0.0, 0.1, 0.2]
    assert result == {"default": 3.0, "extra": 1.0}


def test_report_defaults_to_a_no_op():
    assert FunctionalEvaluator(with_report, epochs=2).evaluate(None) == {
        "default": 2.0,
        "extra": 1.0,
    }


def test_report_not_passed_to_functions_without_it():
    def fn(model, **kwargs):
        return len(kwargs)

    assert FunctionalEvaluator(fn, a=1).evaluate(None, report=print) == 1


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        FunctionalEvaluator(3)
    with pytest.raises(TypeError, match="reserved"):
        FunctionalEvaluator(with_report, report=print)
    with pytest.raises(TypeError, match="'arch' is reserved"):
        FunctionalEvaluator(with_report, arch={})


def lookup(model, arch, table, report):
    report(0.5)
    return table[arch["op"]]


def test_arch_is_passed_to_functions_that_declare_it():
    seen = []
    ev = FunctionalEvaluator(lookup, table={"a": 1.0, "b": 2.0}, needs_model=False)
    assert ev.needs_model is False and FunctionalEvaluator(lookup).needs_model is True
    assert ev.evaluate(None, report=seen.append, arch={"op": "b"}) == 2.0
    assert seen == [0.5]
    # a function without `arch` is called as before, even when an arch is available
    assert FunctionalEvaluator(count_params).evaluate(torch.nn.Linear(1, 1), arch={"x": 1}) == 2.0
    with pytest.raises(TypeError, match="declares an `arch` parameter but no arch"):
        ev.evaluate(None)


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps])
def test_pickle_round_trip(dumps):
    ev = pickle.loads(dumps(FunctionalEvaluator(count_params, scale=3.0)))
    assert ev.evaluate(torch.nn.Linear(1, 1)) == 6.0
    # a lambda is not importable: it travels by value
    ev = pickle.loads(dumps(FunctionalEvaluator(lambda model, k: k + 1, k=1)))
    assert ev.evaluate(None) == 2
