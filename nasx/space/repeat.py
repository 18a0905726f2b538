"""Repeat: stack a block a chosen number of times."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch.nn as nn

from .base import MutableModule
from .choice import Categorical, Choice
from .chosen import ChosenValue
from .context import ensure_frozen, resolve
from .expression import Mutable, MutableExpression

# A block, a factory(index) -> block, or one of those per position.
BlockSpec = (
    nn.Module | Callable[[int], nn.Module] | Sequence[nn.Module | Callable[[int], nn.Module]]
)


Depth = int | tuple[int, int] | Categorical | MutableExpression


def _depth_choice(depth: Depth, label: str | None) -> Categorical | MutableExpression | int:
    if isinstance(depth, ChosenValue):
        # NNI's Repeat(blocks, nni.choice('depth', [1, 2, 3])): a searched depth, as the object is
        depth = depth.choice
    if isinstance(depth, MutableExpression):
        # NNI's depth as an expression of choices (``Categorical([1, 2], label='d') + 1``): its
        # values are the expression's over every combination of its choices.
        try:
            values = depth.grid()
        except ValueError as error:
            raise ValueError(
                f"Repeat depth {depth!r} must take finitely many values: {error}"
            ) from None
        bad = [d for d in values if isinstance(d, bool) or not isinstance(d, int) or d < 0]
        if bad:
            raise ValueError(f"Repeat depth {depth!r} takes values that are not ints >= 0: {bad!r}")
        return depth
    if isinstance(depth, Categorical):
        bad = [d for d in depth.values if not isinstance(d, int) or d < 0]
        if bad:
            raise ValueError(
                f"Repeat depth choice {depth.label!r} has values that are not ints >= 0: {bad!r}"
            )
        return depth
    if isinstance(depth, bool):
        raise TypeError(
            "Repeat depth must be an int, a (min, max) tuple or a Categorical, got a bool"
        )
    if isinstance(depth, int):
        if depth < 0:
            raise ValueError(f"Repeat depth must be >= 0, got {depth}")
        return depth
    if (
        isinstance(depth, (tuple, list))
        and len(depth) == 2
        and all(isinstance(d, int) for d in depth)
    ):
        lo, hi = depth
        if not 0 <= lo <= hi:
            raise ValueError(f"Repeat depth range must satisfy 0 <= min <= max, got {tuple(depth)}")
        return Categorical(list(range(lo, hi + 1)), label=label, _kind="repeat")
    raise TypeError(
        "Repeat depth must be an int, a (min, max) tuple, a Categorical or an expression of "
        f"choices, got {depth!r}"
    )


def _make_blocks(blocks: BlockSpec, n: int) -> list[nn.Module]:
    if isinstance(blocks, Sequence) and not isinstance(blocks, nn.Module):
        if len(blocks) < n:
            raise ValueError(f"Repeat got {len(blocks)} blocks but depth can reach {n}")
        specs = list(blocks[:n])
    else:
        specs = [blocks] * n
    built = []
    for i, spec in enumerate(specs):
        if isinstance(spec, nn.Module):
            built.append(copy.deepcopy(spec))  # every position owns its weights
        elif callable(spec):
            module = spec(i)
            if not isinstance(module, nn.Module):
                raise TypeError(
                    f"Repeat block factory returned {type(module).__name__} for index {i}, not an nn.Module"
                )
            built.append(module)
        else:
            raise TypeError(
                f"Repeat blocks must be modules or callables(index) -> module, got {type(spec).__name__}"
            )
    return built


class Repeat(MutableModule):
    """Repeat a block ``depth`` times, where the depth may be a choice.

    Args:
        blocks: a module (deep-copied for each position), a factory ``f(index) -> module``, or a
            list with one module or factory per position.
        depth: an int (fixed), a ``(min, max)`` tuple (choose any depth in between), a
            :class:`~nasx.space.Categorical` of ints (or ``nasx.choice(label, values)``, NNI's
            spelling), or an expression of choices (``Categorical([1, 2], label='d') * 2``;
            NNI's), whose choices are the decisions.
        label: label of the depth choice (the scope's next number when omitted, as in NNI).

    The search form holds the deepest stack, children named ``'0'``, ``'1'``, ... (the same
    names as the fixed ``nn.Sequential``), and runs the default (smallest) depth. Under
    :func:`~nasx.space.model_context` the constructor returns ``nn.Sequential`` of the chosen depth.

    Example:
        >>> import torch.nn as nn
        >>> from nasx.space import Repeat, model_context
        >>> with model_context({'depth': 2}):
        ...     Repeat(lambda i: nn.Linear(4, 4), (1, 3), label='depth')
        Sequential(
          (0): Linear(in_features=4, out_features=4, bias=True)
          (1): Linear(in_features=4, out_features=4, bias=True)
        )
    """

    def __init__(self, blocks: BlockSpec, depth: Depth, *, label: str | None = None):
        super().__init__()
        self.depth_choice = _depth_choice(depth, label)
        if isinstance(self.depth_choice, Categorical):
            max_depth = max(self.depth_choice.values)
        elif isinstance(self.depth_choice, MutableExpression):
            max_depth = max(self.depth_choice.grid())
        else:
            max_depth = self.depth_choice
        for i, block in enumerate(_make_blocks(blocks, max_depth)):
            self.add_module(str(i), block)

    @classmethod
    def create_fixed_module(
        cls, blocks: BlockSpec, depth: Depth, *, label: str | None = None
    ) -> nn.Sequential:
        chosen = _depth_choice(depth, label)
        if isinstance(chosen, Categorical):
            n = resolve(chosen)
        elif isinstance(chosen, MutableExpression):
            n = ensure_frozen(chosen)
        else:
            n = chosen
        return nn.Sequential(*_make_blocks(blocks, n))

    @property
    def label(self) -> str | None:
        return self.depth_choice.label if isinstance(self.depth_choice, Categorical) else None

    @property
    def default_depth(self) -> int:
        if isinstance(self.depth_choice, (Categorical, MutableExpression)):
            depth: int = self.depth_choice.default
            return depth
        return self.depth_choice

    @property
    def blocks(self) -> list[nn.Module]:
        """All blocks of the deepest stack, in order."""
        return [m for m in self._modules.values() if m is not None]

    def choices(self) -> list[Choice]:
        if isinstance(self.depth_choice, MutableExpression):
            return list(self.depth_choice.simplify().values())
        return [self.depth_choice] if isinstance(self.depth_choice, Categorical) else []

    def freeze(self, sample: dict[str, Any]) -> nn.Sequential:
        """``nn.Sequential`` of copies of the first blocks, as many as ``sample`` (an arch)
        gives the depth, with their weights (NNI's ``freeze``).

        >>> import torch.nn as nn
        >>> len(Repeat(nn.Linear(2, 2), (1, 3), label='d').freeze({'d': 2}))
        2
        """
        if isinstance(self.depth_choice, Mutable):
            depth = self.depth_choice.freeze(sample)
        else:
            depth = self.depth_choice
        return nn.Sequential(*(copy.deepcopy(b) for b in self.blocks[:depth]))

    def forward(self, x: Any) -> Any:
        for block in self.blocks[: self.default_depth]:
            x = block(x)
        return x

    def extra_repr(self) -> str:
        return f"depth={self.depth_choice!r}"
