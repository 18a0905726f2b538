"""Values of a mixed layer's arguments under an arch: the helpers every mixed value layer shares.

A ``Mutable*`` layer's constructor arguments (its public ``.args``) may be choices, expressions of
choices (``c_in * expand``) or tuples of them; a mixed layer asks what each argument is under an
arch, which choices it depends on, every value it can take and its largest value.

    >>> from nasx.space import Categorical
    >>> k = Categorical([3, 5], label='k')
    >>> value_of((k, 1), {'k': 5}), largest(k, 'kernel_size', 'MixedConv2d')
    ((5, 1), 5)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Protocol

import torch
import torch.nn as nn

from nasx.space import Choice


class MutableLayerLike(Protocol):
    """What a mixed layer reads from the ``Mutable*`` layer it replaces (``nasx.space.mutable_ops``):
    the torch layer it extends, its constructor arguments by name (choices included) and the
    choices among them."""

    torch_layer: type[nn.Module]

    @property
    def args(self) -> dict[str, Any]: ...

    def choices(self) -> list[Choice]: ...


def value_of(arg: Any, arch: Mapping[str, Any]) -> Any:
    """The value module argument ``arg`` takes under ``arch``: a choice's value, an expression's
    frozen value (anything with ``freeze(arch)``), elementwise for tuples, else ``arg`` itself.

    Example:
        >>> from nasx.space import Categorical
        >>> value_of((Categorical([3, 5], label='k'), 1), {'k': 5})
        (5, 1)
    """
    if isinstance(arg, Choice):
        return arch[arg.label]
    if isinstance(arg, (tuple, list)):
        return type(arg)(value_of(a, arch) for a in arg)
    freeze = getattr(arg, "freeze", None)
    if callable(freeze):
        return freeze(arch)
    return arg


def leaf_choices(arg: Any) -> dict[str, Choice]:
    """The choices ``arg`` depends on, by label (a choice, an expression's ``simplify()``)."""
    if isinstance(arg, Choice):
        return {arg.label: arg}
    if isinstance(arg, (tuple, list)):
        out: dict[str, Choice] = {}
        for a in arg:
            out.update(leaf_choices(a))
        return out
    simplify = getattr(arg, "simplify", None)
    if callable(simplify):
        return dict(simplify())
    return {}


def outcomes(arg: Any) -> list[tuple[dict[str, int], Any]]:
    """Every value ``arg`` can take: ``[({label: index in grid}, value)]`` over its choices."""
    leaves = leaf_choices(arg)
    labels = list(leaves)
    grids = [leaves[label].grid() for label in labels]
    out = []
    for idx in itertools.product(*(range(len(g)) for g in grids)):
        arch = {label: grids[i][k] for i, (label, k) in enumerate(zip(labels, idx, strict=True))}
        out.append((dict(zip(labels, idx, strict=True)), value_of(arg, arch)))
    return out


def largest(arg: Any, what: str, owner: str) -> int:
    """The largest value of ``arg`` (which must take int values), named in the error as ``owner``'s ``what``."""
    values = [v for _, v in outcomes(arg)]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{owner}: {what} must take int values, got {values!r}")
    return max(int(v) for v in values)


def pair(v: Any) -> tuple[int, int]:
    """A kernel size as ``(h, w)``."""
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def fit_channels(t: torch.Tensor, n: int, dim: int = 1) -> torch.Tensor:
    """``t`` with ``dim`` cut or zero-padded to ``n`` (Proxyless compares paths of other widths)."""
    have = t.shape[dim]
    if have >= n:
        return t.narrow(dim, 0, n)
    shape = list(t.shape)
    shape[dim] = n - have
    return torch.cat([t, t.new_zeros(shape)], dim)


def check_input(owner: str, got: int, want: int, what: str) -> None:
    """Refuse an input of another width than this arch's layer takes, naming the layer."""
    if got != want:
        raise RuntimeError(
            f"{owner}: the input has {got} {what} but this arch's layer takes {want}; "
            "the argument must match the layer before it (the same choice or expression)"
        )


def all_archs(labels: Mapping[str, Choice]) -> list[dict[str, Any]]:
    """Every arch over ``labels`` (the product of their grids)."""
    names = list(labels)
    return [
        dict(zip(names, values, strict=True))
        for values in itertools.product(*(labels[n].grid() for n in names))
    ]


def max_arch(labels: Mapping[str, Choice]) -> dict[str, Any]:
    """Each label at its largest value (numbers), else its default."""
    out = {}
    for label, c in labels.items():
        grid = c.grid()
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in grid)
        out[label] = max(grid) if numeric else c.default
    return out
