"""Every example in nasx.space's docstrings runs and prints what it claims."""
import doctest
import importlib
import pkgutil

import pytest

import nasx
import nasx.space

MODULES = ["nasx", "nasx._lazy"] + [f"nasx.space.{m.name}" for m in pkgutil.iter_modules(nasx.space.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
