"""Argument checks shared by the public API: one message format naming the argument and its range.

>>> check_int('max_trials', 5, minimum=1)
5
>>> check_int('max_trials', -5, minimum=1)
Traceback (most recent call last):
...
ValueError: max_trials must be an integer >= 1 (or None for no limit), got -5
"""

from __future__ import annotations

import numbers
from typing import Any


def check_int(
    name: str,
    value: Any,
    *,
    minimum: int = 0,
    maximum: int | None = None,
    allow_none: bool = True,
) -> Any:
    """``value`` if it is an int in ``[minimum, maximum]`` (or None when allowed), else a
    ValueError (TypeError for a non-integer) naming ``name`` and the allowed range."""
    allowed = (
        f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum}]"
    )
    if allow_none:
        allowed += " (or None for no limit)"
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {allowed}, got {value!r} ({type(value).__name__})")
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return number


def check_number(
    name: str, value: Any, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    """``value`` as a float if it is a finite number in ``[minimum, maximum]``, naming ``name``.

    >>> check_number('mutation_prob', 1.5, minimum=0, maximum=1)
    Traceback (most recent call last):
    ...
    ValueError: mutation_prob must be a number in [0, 1], got 1.5
    """
    lo = "-inf" if minimum is None else f"{minimum:g}"
    hi = "inf" if maximum is None else f"{maximum:g}"
    allowed = f"a number in [{lo}, {hi}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {allowed}, got {value!r} ({type(value).__name__})")
    v = float(value)
    if v != v or (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return v
