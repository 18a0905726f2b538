"""Every example in nasx.strategy.oneshot's docstrings (and the local DARTS space's) runs."""
import doctest
import importlib
import pkgutil

import pytest

import nasx.strategy.oneshot

from .toys import DartsLikeSpace

MODULES = ["nasx.strategy.oneshot"] + [f"nasx.strategy.oneshot.{m.name}"
                                       for m in pkgutil.iter_modules(nasx.strategy.oneshot.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_darts_space_docstring_examples():
    module = importlib.import_module(DartsLikeSpace.__module__)
    assert doctest.testmod(module).failed == 0
