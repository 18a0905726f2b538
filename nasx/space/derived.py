"""``derived(fn, *inputs)``: a module argument computed from choices by any function.

Value-choice arithmetic (``ch * 2``) covers operators; ``derived`` covers the rest, such as a
rounding rule: ``derived(make_divisible, width * ratio)``. It is a
:class:`~nasx.space.MutableExpression` (plain ``fn(*inputs)`` when no input is a choice), so
Mutable layers, ``ensure_frozen`` and one-shot supernets treat it as any expression.

    >>> from nasx.space import Categorical, ensure_frozen, model_context
    >>> width = Categorical([16, 32], label='width')
    >>> hidden = derived(lambda w: w * 4, width)
    >>> hidden.default, hidden.freeze({'width': 32}), list(hidden.simplify())
    (64, 128, ['width'])
    >>> with model_context({'width': 32}):
    ...     ensure_frozen(hidden)
    128
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .expression import Mutable, MutableExpression


def derived(fn: Callable[..., Any], *inputs: Any, name: str = "") -> Any:
    """``fn(*inputs)`` as an expression of the choices among ``inputs`` (see the module docstring).

    Example:
        >>> from nasx.space import Categorical
        >>> k = Categorical([3, 5, 7], label='k')
        >>> derived(lambda k: k // 2, k, name='half').freeze({'k': 7})
        3
        >>> derived(max, 3, 4)  # no choice among the inputs: computed at once
        4
    """
    if not callable(fn):
        raise TypeError(f"derived needs a function as its first argument, got {fn!r}")
    if not any(isinstance(v, Mutable) for v in inputs):
        return fn(*inputs)
    label = name or getattr(fn, "__name__", "fn")
    template = f"{label}({', '.join('{}' for _ in inputs)})"
    return MutableExpression(fn, template, list(inputs))
