"""The runnable examples in evaluator and dataset docstrings stay correct."""

import doctest
import importlib

import pytest

LIGHT = ["nasx.evaluator", "nasx.evaluator.base", "nasx.evaluator.functional", "nasx.datasets"]
TRAINING = ["nasx.evaluator.lightning", "nasx.evaluator.supervised"]  # each example fits a model


@pytest.mark.parametrize(
    "name", LIGHT + [pytest.param(n, marks=pytest.mark.slow) for n in TRAINING]
)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
