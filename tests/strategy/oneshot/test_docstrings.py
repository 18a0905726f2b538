"""The local DARTS-like space's docstring examples run (nasx's own: tests/test_docstrings.py)."""

import doctest
import importlib

from .toys import DartsLikeSpace


def test_darts_space_docstring_examples():
    module = importlib.import_module(DartsLikeSpace.__module__)
    assert doctest.testmod(module).failed == 0
