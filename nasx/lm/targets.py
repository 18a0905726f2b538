"""What a pruned language model must meet: about a number of parameters, at most a latency (measured
with :mod:`nasx.hardware` on this machine, or any function of the model), at most a memory
footprint (weights plus the KV cache at a context length and batch, computed, not measured).

The memory of a decoder at inference is its weights and its KV cache: every layer keeps a key
and a value vector per token of the context, ``kv_width`` wide (heads x head_dim, or kv heads x
head_dim with grouped-query attention), for each sequence of the batch::

    memory = params * bytes + 2 * sum(kv_width over layers) * context * batch_size * bytes

Example:
    >>> kv_cache_bytes([64, 64], context=128, batch_size=2, bytes_per_value=2)
    131072
    >>> Targets(target_memory_bytes=5000).memory_ok(1000, [4], bytes_per_value=2)  # 2000 + 2048
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn

__all__ = ["Targets", "kv_cache_bytes", "measure_lm_latency", "memory_bytes"]

LatencyFn = Callable[[nn.Module], float]  # a model mapping [B, T] ids to logits -> milliseconds


def kv_cache_bytes(
    kv_widths: Sequence[int], context: int, batch_size: int, bytes_per_value: int
) -> int:
    """Bytes of the keys and values ``len(kv_widths)`` layers keep for ``context`` tokens of
    ``batch_size`` sequences (``kv_widths[i]``: the width of layer ``i``'s keys, = its values').

    Example:
        >>> kv_cache_bytes([8], context=4, batch_size=1, bytes_per_value=4)  # 2 x 8 x 4 x 4
        256
    """
    return 2 * sum(kv_widths) * context * batch_size * bytes_per_value


def memory_bytes(
    params: int, kv_widths: Sequence[int], context: int, batch_size: int, bytes_per_value: int
) -> int:
    """Weights plus KV cache, in bytes (see the module doc).

    Example:
        >>> memory_bytes(100, [8], context=4, batch_size=1, bytes_per_value=4)
        656
    """
    return params * bytes_per_value + kv_cache_bytes(
        kv_widths, context, batch_size, bytes_per_value
    )


def _positive(name: str, value: Any, kind: type = float) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and (kind is float or isinstance(value, int)) and math.isfinite(value) and value > 0
    if not ok:
        what = "a positive int" if kind is int else "a positive finite number"
        raise ValueError(f"{name} must be {what}, got {value!r}")


@dataclass(frozen=True)
class Targets:
    """The targets of a prune search; every one given must hold (field names are
    :func:`~nasx.lm.prune_search`'s arguments, so errors name what the user wrote).

    Args:
        target_params: about this many parameters (within ``tolerance`` of it).
        target_latency_ms: at most this many milliseconds per forward pass of ``batch_size``
            sequences of ``context`` tokens.
        target_memory_bytes: at most this many bytes of weights plus KV cache at ``context``
            tokens and ``batch_size`` sequences.
        tolerance: the relative slack of ``target_params``.
        context, batch_size: the shape latency and memory are taken at.
    """

    target_params: float | None = None
    target_latency_ms: float | None = None
    target_memory_bytes: int | None = None
    tolerance: float = 0.1
    context: int = 128
    batch_size: int = 1

    def __post_init__(self) -> None:
        given = {
            "target_params": (self.target_params, float),  # 5e5 reads as well as 500_000
            "target_latency_ms": (self.target_latency_ms, float),
            "target_memory_bytes": (self.target_memory_bytes, int),
        }
        if all(v is None for v, _ in given.values()):
            raise ValueError(
                "give at least one target: target_params, target_latency_ms or target_memory_bytes"
            )
        for name, (value, kind) in given.items():
            if value is not None:
                _positive(name, value, kind)
        if isinstance(self.tolerance, bool) or not (
            isinstance(self.tolerance, int | float) and 0 <= self.tolerance
        ):
            raise ValueError(f"tolerance must be a number >= 0, got {self.tolerance!r}")
        _positive("context", self.context, int)
        _positive("batch_size", self.batch_size, int)

    def params_ok(self, params: int) -> bool:
        """Within ``tolerance`` of ``target_params`` (True without that target)."""
        t = self.target_params
        return t is None or abs(params - t) <= self.tolerance * t

    def memory_ok(self, params: int, kv_widths: Sequence[int], bytes_per_value: int) -> bool:
        """Weights plus KV cache at most ``target_memory_bytes`` (True without that target)."""
        if self.target_memory_bytes is None:
            return True
        used = memory_bytes(params, kv_widths, self.context, self.batch_size, bytes_per_value)
        return used <= self.target_memory_bytes

    def preference(self, params: int) -> float:
        """Sort key of a candidate: nearest ``target_params`` first, else largest first (the
        biggest model under a latency or memory ceiling is the one likely to predict best)."""
        return abs(params - self.target_params) if self.target_params is not None else -params


class _TokensFromNoise(nn.Module):
    """:func:`~nasx.hardware.measure_latency` feeds random floats; a language model needs
    token ids: map each float to an id (cheap next to the model, the same for every candidate)."""

    def __init__(self, model: nn.Module, vocab_size: int):
        super().__init__()
        self.model, self.vocab_size = model, vocab_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids = (x.abs() * self.vocab_size).long() % self.vocab_size  # [B, T]
        return self.model(ids)


def measure_lm_latency(
    model: nn.Module,
    vocab_size: int,
    context: int,
    batch_size: int = 1,
    warmup: int = 2,
    repeats: int = 10,
    **kwargs: Any,
) -> float:
    """Median milliseconds of one forward pass of ``batch_size`` sequences of ``context`` token
    ids (``model``: ids to logits), measured by :func:`nasx.hardware.measure_latency`
    (``kwargs`` go to it: ``threads``, ``device``, ``backend``, ``clock``).

    Example:
        >>> model = nn.Sequential(nn.Embedding(16, 8), nn.Linear(8, 16))
        >>> measure_lm_latency(model, vocab_size=16, context=4, warmup=1, repeats=3) > 0
        True
    """
    from ..hardware.latency import measure_latency

    result = measure_latency(
        _TokensFromNoise(model, vocab_size),
        (context,),
        batch_size=batch_size,
        warmup=warmup,
        repeats=repeats,
        **kwargs,
    )
    return result.median_ms
