"""NNI's search-space file and tuner parameters: how an external tuner drives a nasx space.

:func:`to_nni_search_space` writes a space in the format of ``nnictl ss_gen`` (and NNI's HPO
search-space files): ``{label: {"_type": ..., "_value": ...}}``, plain JSON.
:func:`search_space_from_nni` reads it back into a :class:`~nasx.space.SearchSpace`, and
:func:`arch_from_nni` turns what a tuner sends back (``{label: {"_value": v, "_idx": i}}`` or
plain ``{label: v}``) into an arch.

    >>> import json
    >>> from nasx.space import Categorical, Numerical, SearchSpace
    >>> space = SearchSpace(k=Categorical([3, 5], label='k'), lr=Numerical(0.1, 1.0, label='lr'))
    >>> text = json.dumps(to_nni_search_space(space))
    >>> text
    '{"k": {"_type": "choice", "_value": [3, 5]}, "lr": {"_type": "uniform", "_value": [0.1, 1.0]}}'
    >>> search_space_from_nni(json.loads(text)) == space
    True
    >>> arch_from_nni({'k': {'_value': 5, '_idx': 1}, 'lr': 0.5}, space)
    {'k': 5, 'lr': 0.5}

Types written: ``layer_choice`` (a LayerChoice's candidates), ``input_choice``
(``{"candidates": [...], "n_chosen": k}``), ``choice`` (a value choice or a Repeat depth),
``uniform``/``quniform``/``loguniform``/``qloguniform`` (``[low, high(, q)]``) and
``normal``/``qnormal`` (``[mu, sigma(, q)]``); a set of values that is not an input choice is
written as nasx's own ``multiple_choice`` (same ``_value`` as ``input_choice``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch.nn as nn

from .choice import Categorical, CategoricalMultiple, Choice
from .errors import InvalidArchError
from .labels import ResolvedLabel
from .numerical import Numerical
from .search_space import SearchSpace, search_space

__all__ = ["arch_from_nni", "search_space_from_nni", "to_nni_search_space"]


def _entry(c: Choice) -> dict[str, Any]:
    if isinstance(c, Categorical):
        kind = {"layerchoice": "layer_choice"}.get(getattr(c, "kind", "choice"), "choice")
        return {"_type": kind, "_value": list(c.values)}
    if isinstance(c, CategoricalMultiple):
        kind = "input_choice" if getattr(c, "kind", "") == "inputchoice" else "multiple_choice"
        return {"_type": kind, "_value": {"candidates": list(c.values), "n_chosen": c.n_chosen}}
    if isinstance(c, Numerical):
        q = [c.quantize] if c.quantize is not None else []
        prefix = "q" if q else ""
        if c.mu is not None and c.sigma is not None:
            if c.log_distributed or math.isfinite(c.low) or math.isfinite(c.high):
                raise ValueError(
                    f"Numerical {c.label!r}: NNI's search-space format has no log-normal or "
                    "clipped normal distribution; only normal(mu, sigma) and qnormal"
                )
            return {"_type": prefix + "normal", "_value": [c.mu, c.sigma, *q]}
        kind = prefix + ("loguniform" if c.log_distributed else "uniform")
        return {"_type": kind, "_value": [c.low, c.high, *q]}
    raise TypeError(f"no NNI search-space type for {type(c).__name__} {c.label!r}")


def to_nni_search_space(space: nn.Module | Mapping[str, Choice]) -> dict[str, dict[str, Any]]:
    """NNI's search-space JSON (a plain dict) of a model space or a :class:`SearchSpace`."""
    choices = search_space(space) if isinstance(space, nn.Module) else space
    return {label: _entry(c) for label, c in choices.items()}


def _choice(label: str, entry: Mapping[str, Any]) -> Choice:
    if not isinstance(entry, Mapping) or "_type" not in entry or "_value" not in entry:
        raise ValueError(
            f"search-space entry {label!r} must be a dict with '_type' and '_value', got {entry!r}"
        )
    kind, value = entry["_type"], entry["_value"]
    name = ResolvedLabel(label)  # the label is already complete: no scope prefix
    if kind in ("choice", "layer_choice"):
        return Categorical(
            value, label=name, _kind="layerchoice" if kind == "layer_choice" else "choice"
        )
    if kind in ("input_choice", "multiple_choice"):
        return CategoricalMultiple(
            value["candidates"],
            n_chosen=value.get("n_chosen", 1),
            label=name,
            _kind="inputchoice" if kind == "input_choice" else "choice",
        )
    numbers = list(value)
    q = numbers[2] if kind.startswith("q") and len(numbers) > 2 else None
    if kind in ("uniform", "quniform", "loguniform", "qloguniform"):
        return Numerical(
            numbers[0], numbers[1], log_distributed="log" in kind, quantize=q, label=name
        )
    if kind in ("normal", "qnormal"):
        return Numerical(mu=numbers[0], sigma=numbers[1], quantize=q, label=name)
    raise ValueError(
        f"search-space entry {label!r} has _type {kind!r}; nasx reads choice, layer_choice, "
        "input_choice, multiple_choice, uniform, quniform, loguniform, qloguniform, normal, qnormal"
    )


def search_space_from_nni(data: Mapping[str, Any]) -> SearchSpace:
    """A :class:`SearchSpace` from NNI's search-space JSON (as written by :func:`to_nni_search_space`)."""
    return SearchSpace({label: _choice(label, entry) for label, entry in data.items()})


def arch_from_nni(
    parameters: Mapping[str, Any], space: nn.Module | Mapping[str, Choice]
) -> dict[str, Any]:
    """The arch a tuner's parameters describe, validated against ``space``.

    Accepts NNI's formats: ``{label: {"_value": v, "_idx": i}}`` (the index wins for a choice of
    values, so a layer choice's candidate names need not match nasx's values) and plain
    ``{label: v}``.
    """
    choices = search_space(space) if isinstance(space, nn.Module) else SearchSpace(space)
    arch: dict[str, Any] = {}
    for label, given in parameters.items():
        c = choices.get(label)
        if isinstance(given, Mapping) and ("_value" in given or "_idx" in given):
            idx = given.get("_idx")
            if isinstance(c, Categorical) and isinstance(idx, int) and 0 <= idx < len(c.values):
                arch[label] = c.values[idx]
            elif isinstance(c, CategoricalMultiple) and isinstance(idx, list):
                arch[label] = [c.values[i] for i in idx]
            elif "_value" in given:
                arch[label] = given["_value"]
            else:
                raise InvalidArchError(
                    f"parameter {label!r} has no usable '_value' or '_idx': {given!r}"
                )
        else:
            arch[label] = given
    return choices.validate(arch)
