"""The configuration of a strategy or evaluator, as stored with an experiment to refuse a resume
with other settings: the class (or function) name, the constructor arguments it keeps as plain
values under their own names, and what the object declares in a ``resume_settings()`` method
(nasx's Lightning evaluators declare every argument: learning rate, trainer arguments, batch
sizes; see :meth:`nasx.evaluator.Lightning.resume_settings`).

    >>> class Evolution:
    ...     def __init__(self, population_size=100, seed=None, data=None):
    ...         self.population_size, self.seed, self.data = population_size, seed, data
    >>> describe(Evolution(20, seed=1, data=object()))
    {'type': 'Evolution', 'population_size': 20}
    >>> def accuracy(model): ...
    >>> describe(accuracy)
    {'type': 'accuracy'}
    >>> class Distill:
    ...     def __init__(self, teacher, temperature=2.0):
    ...         self._temperature = temperature
    ...     def resume_settings(self):
    ...         return {'temperature': self._temperature}
    >>> describe(Distill(teacher=None, temperature=4.0))
    {'type': 'Distill', 'temperature': 4.0}
"""

from __future__ import annotations

import inspect
from typing import Any

# A seed may differ on resume: an unseeded strategy is given the stored one.
_IGNORED = {"self", "seed", "args", "kwargs"}


def describe(obj: Any) -> dict[str, Any]:
    """``{'type': name, param: value}`` for the constructor parameters stored as plain values,
    and the settings the object declares (``resume_settings()``: a dict; values that are not
    plain are stored as their type's name)."""
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return {"type": obj.__qualname__}
    cls = type(obj)
    out: dict[str, Any] = {"type": cls.__qualname__}
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]  # a builtin's __init__: nothing to read
    for name in params:
        if name in _IGNORED or name not in getattr(obj, "__dict__", {}):
            continue
        value = obj.__dict__[name]
        if _plain(value):
            out[name] = value
    declared = getattr(obj, "resume_settings", None)
    if callable(declared):
        settings = declared()
        if not isinstance(settings, dict):
            raise TypeError(
                f"{cls.__qualname__}.resume_settings() must return a dict of setting name to "
                f"value, got {type(settings).__name__}"
            )
        out.update({str(k): plain_setting(v) for k, v in settings.items()})
    return out


def plain_setting(value: Any) -> Any:
    """``value`` if it is plain (stored as is), else a name for it (its function's or type's),
    so that an optimizer class or a loss module compares by what it is, not by its address.

    >>> import math
    >>> plain_setting(0.5), plain_setting(math.sqrt), plain_setting(object())
    (0.5, 'sqrt', 'object')
    """
    if _plain(value):
        return value
    if isinstance(value, dict) and len(value) <= 16:
        return {str(k): plain_setting(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and len(value) <= 16:
        return [plain_setting(v) for v in value]
    if inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value):
        return str(getattr(value, "__qualname__", value))
    return type(value).__qualname__


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)) and len(value) <= 16:
        return all(_plain(v) for v in value)
    return False
