"""LayerChoice: choose one module out of several candidates."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch.nn as nn

from .base import MutableModule
from .choice import Categorical, Choice
from .context import resolve


def _candidate_items(
    candidates: Sequence[nn.Module] | Mapping[str, nn.Module],
) -> list[tuple[Any, nn.Module]]:
    """``[(value, module)]``: values are indices for a list, keys for a dict (NNI's convention)."""
    if isinstance(candidates, Mapping):
        items = list(candidates.items())
        bad = [k for k, _ in items if not isinstance(k, str) or not k or "." in k]
        if bad:
            raise ValueError(
                f"LayerChoice dict keys must be non-empty strings without '.', got {bad!r}"
            )
    elif isinstance(candidates, Sequence) and not isinstance(candidates, str):
        items = list(enumerate(candidates))  # type: ignore[arg-type]  # int keys: indices
    else:
        raise TypeError(
            f"LayerChoice candidates must be a list or dict of modules, got {type(candidates).__name__}"
        )
    if not items:
        raise ValueError("LayerChoice needs at least one candidate")
    for key, module in items:
        if not isinstance(module, nn.Module):
            raise TypeError(
                f"LayerChoice candidate {key!r} is {type(module).__name__}, not an nn.Module"
            )
    return items


class LayerChoice(MutableModule):
    """Choose one of several candidate modules.

    Args:
        candidates: a list of modules (the value is the index) or a dict of modules (the value is
            the key).
        label: the decision's label (the scope's next number when omitted, as in NNI).

    In the search form every candidate is kept as a submodule and ``forward`` runs the default
    (first) one. Under :func:`~nasx.space.model_context` the constructor returns the chosen
    candidate itself.

    Example:
        >>> import torch.nn as nn
        >>> from nasx.space import LayerChoice, model_context
        >>> lc = LayerChoice({'relu': nn.ReLU(), 'tanh': nn.Tanh()}, label='act')
        >>> lc.choice.values
        ['relu', 'tanh']
        >>> with model_context({'act': 'tanh'}):
        ...     LayerChoice({'relu': nn.ReLU(), 'tanh': nn.Tanh()}, label='act')
        Tanh()
    """

    def __init__(
        self, candidates: Sequence[nn.Module] | Mapping[str, nn.Module], *, label: str | None = None
    ):
        super().__init__()
        items = _candidate_items(candidates)
        self.choice = Categorical([key for key, _ in items], label=label, _kind="layerchoice")
        for key, module in items:
            # Straight into _modules: keys such as 'double' or 'forward' would clash with
            # nn.Module attributes under add_module; candidates are reached with lc[key].
            self._modules[str(key)] = module

    @classmethod
    def create_fixed_module(
        cls, candidates: Sequence[nn.Module] | Mapping[str, nn.Module], *, label: str | None = None
    ) -> nn.Module:
        items = _candidate_items(candidates)
        chosen = resolve(Categorical([key for key, _ in items], label=label, _kind="layerchoice"))
        module: nn.Module = dict(items)[chosen]
        return module

    @property
    def label(self) -> str:
        return self.choice.label

    @property
    def names(self) -> list[Any]:
        """The candidates' values (their indices or keys), in order."""
        return list(self.choice.values)

    def __getitem__(self, value: Any) -> nn.Module:
        """The candidate module for a value (an index or a key)."""
        module = self._modules[str(self.choice.validate(value))]
        assert module is not None  # candidates are never None
        return module

    def __setitem__(self, value: Any, module: nn.Module) -> None:
        """Replace the candidate for ``value`` (an index or key) in this search-form module.

        The decision keeps its values; a rebuild under ``model_context`` runs the constructor
        again, so replace candidates there (in the constructor), not afterwards, for that.
        """
        if not isinstance(module, nn.Module):
            raise TypeError(
                f"LayerChoice {self.label!r}: a candidate must be an nn.Module, got {type(module).__name__}"
            )
        self._modules[str(self.choice.validate(value))] = module

    def __delitem__(self, value: Any) -> None:
        raise TypeError(
            f"LayerChoice {self.label!r}: candidates can't be removed after construction (the "
            "decision's values would change under strategies that already saw them); build the "
            "LayerChoice with the candidates you want"
        )

    def __len__(self) -> int:
        return len(self.choice.values)

    def __iter__(self) -> Iterator[nn.Module]:
        """The candidate modules, in order (``list(layer_choice)``)."""
        return iter([self[v] for v in self.choice.values])

    def candidates(self) -> list[tuple[Any, nn.Module]]:
        """``[(value, module)]`` in order."""
        return [(v, self[v]) for v in self.choice.values]

    def choices(self) -> list[Choice]:
        return [self.choice]

    def freeze(self, sample: dict[str, Any]) -> nn.Module:
        """A copy of the candidate ``sample`` (an arch) picks, with its weights (NNI's
        ``freeze`` returns the candidate itself; a copy leaves this module as it was).

        >>> import torch.nn as nn
        >>> LayerChoice([nn.ReLU(), nn.Tanh()], label='act').freeze({'act': 1})
        Tanh()
        """
        return copy.deepcopy(self[self.choice.freeze(sample)])

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self[self.choice.default](*args, **kwargs)

    def extra_repr(self) -> str:
        return f"label={self.label!r}"
