"""Every exception class nasx defines derives from ``nasx.NasxError`` and keeps a built-in base.

Found by importing every module of the package and walking its classes, so a new exception
class anywhere in nasx is checked without being listed here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import nasx
from nasx import NasxError

# Modules that need an optional extra or a POSIX-only module to import (tests/test_packaging.py
# checks those separately); their exceptions are still found through the modules that define them.
_OPTIONAL = ("nasx.experiment.execution.ray",)


def _nasx_exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(nasx.__path__, "nasx."):
        if info.name.startswith(_OPTIONAL) or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__.startswith("nasx")
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


EXCEPTIONS = _nasx_exception_classes()


def test_the_walk_finds_nasx_s_exceptions():
    # a walk that found nothing would make the test below pass vacuously
    assert len(EXCEPTIONS) >= 20
    assert "nasx.space.errors.InvalidArchError" in EXCEPTIONS
    assert "nasx.datasets.locate.DataNotFoundError" in EXCEPTIONS


@pytest.mark.parametrize("name", sorted(EXCEPTIONS))
def test_every_nasx_exception_is_a_nasx_error(name):
    cls = EXCEPTIONS[name]
    assert issubclass(cls, NasxError), f"{name} does not derive from nasx.NasxError"


@pytest.mark.parametrize("name", sorted(n for n in EXCEPTIONS if EXCEPTIONS[n] is not NasxError))
def test_every_nasx_exception_keeps_a_built_in_base(name):
    """``except ValueError`` (or the built-in it had before) still catches it."""
    builtin_bases = [
        b for b in EXCEPTIONS[name].__mro__ if b.__module__ == "builtins" and b is not object
    ]
    assert builtin_bases[0] is not BaseException
    assert len(builtin_bases) >= 2, f"{name} derives only from {builtin_bases}"  # X and Exception


def test_existing_handlers_still_catch_them():
    from nasx.datasets.locate import DataNotFoundError
    from nasx.space import Categorical, InvalidArchError

    with pytest.raises(ValueError):
        Categorical([1, 2], label="k").validate(3)
    with pytest.raises(NasxError) as caught:
        Categorical([1, 2], label="k").validate(3)
    assert isinstance(caught.value, InvalidArchError)
    assert issubclass(DataNotFoundError, FileNotFoundError)
    assert nasx.NasxError is NasxError
