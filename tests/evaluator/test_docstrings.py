"""The runnable examples in evaluator and dataset docstrings stay correct."""

import doctest
import importlib

import pytest

MODULES = [
    "nasx.evaluator",
    "nasx.evaluator.base",
    "nasx.evaluator.functional",
    "nasx.evaluator.lightning",  # these two fit tiny models: under a second each
    "nasx.evaluator.supervised",
    "nasx.datasets",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
