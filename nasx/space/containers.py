"""``MutableList`` and ``MutableDict``: several mutables handled as one (NNI's containers).

A container simplifies to the leaf choices of its items and freezes to a plain list or dict:

    >>> from nasx.space import Categorical, MutableDict, MutableList
    >>> a, b = Categorical([1, 2], label='a'), Categorical([3, 4], label='b')
    >>> pair = MutableList([a, b * 10, 'plain'])
    >>> list(pair.simplify()), pair.freeze({'a': 2, 'b': 3})
    (['a', 'b'], [2, 30, 'plain'])
    >>> MutableDict({'x': a, 'y': b}).freeze({'a': 1, 'b': 4})
    {'x': 1, 'y': 4}
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .expression import Mutable

if TYPE_CHECKING:
    from .choice import Choice

__all__ = ["MutableDict", "MutableList"]


def _leaves(items: Iterable[Any]) -> Iterator[Choice]:
    for item in items:
        if isinstance(item, Mutable):
            yield from item.leaf_choices()


def _freeze(item: Any, sample: Mapping[str, Any]) -> Any:
    return item.freeze(sample) if isinstance(item, Mutable) else item


class MutableList(Mutable):
    """A list whose items may be choices or expressions (plain values are kept as they are)."""

    def __init__(self, mutables: Iterable[Any] | None = None):
        self.mutables = list(mutables or [])

    def leaf_choices(self) -> Iterator[Choice]:
        return _leaves(self.mutables)

    def _children(self) -> list[Mutable]:
        return [item for item in self.mutables if isinstance(item, Mutable)]

    def freeze(self, sample: Mapping[str, Any]) -> list[Any]:
        return [_freeze(item, sample) for item in self.mutables]

    @property
    def default(self) -> list[Any]:
        """Every item at its choices' defaults (NNI's ``default()``; a property, as for choices).

        >>> from nasx.space import Categorical
        >>> MutableList([Categorical([1, 2], label='a'), 'plain']).default
        [1, 'plain']
        """
        return self.freeze({label: leaf.default for label, leaf in self.simplify().items()})

    def equals(self, other: Any) -> bool:
        from .expression import _equal

        return (
            isinstance(other, MutableList)
            and len(self.mutables) == len(other.mutables)
            and all(_equal(a, b) for a, b in zip(self.mutables, other.mutables))
        )

    # A container is a list, not a lazy value: indexing and len() are the list's.
    def __getitem__(self, index: Any) -> Any:
        return self.mutables[index]

    def __setitem__(self, index: int, value: Any) -> None:
        self.mutables[index] = value

    def __len__(self) -> int:
        return len(self.mutables)

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]  # the base sets None: not iterable
        return iter(self.mutables)

    def append(self, mutable: Any) -> None:
        self.mutables.append(mutable)

    def extend(self, mutables: Iterable[Any]) -> None:
        self.mutables.extend(mutables)

    def __repr__(self) -> str:
        return f"MutableList({self.mutables!r})"


class MutableDict(Mutable):
    """A dict whose values may be choices or expressions (plain values are kept as they are)."""

    def __init__(self, mutables: Mapping[str, Any] | None = None):
        self.mutables = dict(mutables or {})

    def leaf_choices(self) -> Iterator[Choice]:
        return _leaves(self.mutables.values())

    def _children(self) -> list[Mutable]:
        return [item for item in self.mutables.values() if isinstance(item, Mutable)]

    def freeze(self, sample: Mapping[str, Any]) -> dict[str, Any]:
        return {key: _freeze(item, sample) for key, item in self.mutables.items()}

    @property
    def default(self) -> dict[str, Any]:
        """Every value at its choices' defaults (NNI's ``default()``; a property, as for choices).

        >>> from nasx.space import Categorical
        >>> MutableDict({'k': Categorical([3, 5], label='k'), 'n': 1}).default
        {'k': 3, 'n': 1}
        """
        return self.freeze({label: leaf.default for label, leaf in self.simplify().items()})

    def equals(self, other: Any) -> bool:
        from .expression import _equal

        return (
            isinstance(other, MutableDict)
            and list(self.mutables) == list(other.mutables)
            and all(_equal(v, other.mutables[k]) for k, v in self.mutables.items())
        )

    def __getitem__(self, key: Any) -> Any:
        return self.mutables[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.mutables[key] = value

    def __len__(self) -> int:
        return len(self.mutables)

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]  # the base sets None: not iterable
        return iter(self.mutables)

    def keys(self) -> Iterable[str]:
        return self.mutables.keys()

    def values(self) -> Iterable[Any]:
        return self.mutables.values()

    def items(self) -> Iterable[tuple[str, Any]]:
        return self.mutables.items()

    def __repr__(self) -> str:
        return f"MutableDict({self.mutables!r})"
