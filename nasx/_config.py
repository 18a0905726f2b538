"""The configuration of a strategy or evaluator, as stored with an experiment to refuse a resume
with other settings: the class (or function) name and the constructor arguments it keeps as
plain values.

    >>> class Evolution:
    ...     def __init__(self, population_size=100, seed=None, data=None):
    ...         self.population_size, self.seed, self.data = population_size, seed, data
    >>> describe(Evolution(20, seed=1, data=object()))
    {'type': 'Evolution', 'population_size': 20}
    >>> def accuracy(model): ...
    >>> describe(accuracy)
    {'type': 'accuracy'}
"""

from __future__ import annotations

import inspect
from typing import Any

# A seed may differ on resume: an unseeded strategy is given the stored one.
_IGNORED = {"self", "seed", "args", "kwargs"}


def describe(obj: Any) -> dict[str, Any]:
    """``{'type': name, param: value}`` for the constructor parameters stored as plain values."""
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return {"type": obj.__qualname__}
    cls = type(obj)
    out: dict[str, Any] = {"type": cls.__qualname__}
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return out
    for name in params:
        if name in _IGNORED or name not in getattr(obj, "__dict__", {}):
            continue
        value = obj.__dict__[name]
        if _plain(value):
            out[name] = value
    return out


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)) and len(value) <= 16:
        return all(_plain(v) for v in value)
    return False
