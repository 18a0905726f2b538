"""Replay a whole training step from one CUDA graph instead of launching its kernels one by one.

A supernet search step, or the training step of a small model, is bound by the host on a GPU:
a DARTS step launches 25-45 thousand kernels of a few microseconds each, and the GPU idles between
them (issue 12 measured it busy 22-35% of a step on an H100). Captured once in a CUDA graph and
replayed, the same step costs one launch: the measured hand-written reference went from 909 ms
to 226 ms per step.

What a captured step may do:

- tensor work only: no ``.item()``, no Python branching on tensor values, no host copies (the
  capture fails, and :class:`CapturedStep` falls back to eager steps for good, logging why);
- the same Python path every step: a strategy that samples a different path each step cannot be
  captured (its callers do not ask);
- static shapes: a batch of another shape (the short last batch of an epoch) runs eagerly;
- Python numbers read inside the step (a learning rate, a Gumbel temperature) are frozen into the
  graph; the caller passes them as the ``key`` of each call, and a new key captures again (once per
  epoch for a per-epoch schedule; a key that changes at every step turns graphs off).

Optimizers must keep their state on the device: :func:`make_capturable` sets ``capturable=True``
where an optimizer has that option (Adam, AdamW, ...). The first ``warmup`` calls run eagerly on a
side stream (optimizer state, cuDNN plans and allocator pools are created there, as the CUDA-graph
documentation of PyTorch asks), then the step is captured and replayed.

    >>> import torch
    >>> step = CapturedStep(lambda x: (x * 2).sum(), optimizers=[])
    >>> step((torch.ones(3),), key=()).item()   # not on a GPU: runs eagerly
    6.0
    >>> step.enabled
    False
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

import torch

_log = logging.getLogger("nasx.cuda_graph")


def make_capturable(optimizer: torch.optim.Optimizer) -> None:
    """Keep ``optimizer``'s step counters on the device, so its ``step()`` can be captured.

    Optimizers with a ``capturable`` option (Adam, AdamW, RMSprop, ...) get it switched on for
    their parameter groups on a CUDA device, and step counters already created on the CPU (a
    resumed run) move to their parameter's device. Others (SGD) need nothing.

        >>> p = torch.nn.Parameter(torch.ones(2, device='cuda' if torch.cuda.is_available() else 'cpu'))
        >>> opt = torch.optim.Adam([p])
        >>> make_capturable(opt); opt.param_groups[0]['capturable'] == p.is_cuda
        True
    """
    for group in optimizer.param_groups:
        if "capturable" not in group or not all(p.is_cuda for p in group["params"]):
            continue  # no option, or CPU parameters (which a capturable step refuses)
        group["capturable"] = True
        for p in group["params"]:
            state = optimizer.state.get(p, {})
            step = state.get("step")
            if torch.is_tensor(step) and step.device != p.device:
                state["step"] = step.to(p.device, dtype=torch.float32)


def optimizer_key(optimizers: Sequence[torch.optim.Optimizer]) -> tuple[Any, ...]:
    """The Python numbers of each param group (lr, momentum, ...) a captured step freezes.

    >>> p = torch.nn.Parameter(torch.ones(1))
    >>> optimizer_key([torch.optim.SGD([p], lr=0.1)])[0][0][:1]
    (('dampening', 0),)
    """
    return tuple(
        tuple(
            tuple(sorted((k, v) for k, v in g.items() if k != "params" and _hashable(v)))
            for g in opt.param_groups
        )
        for opt in optimizers
    )


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return not torch.is_tensor(value)


def _signature(tensors: Sequence[torch.Tensor]) -> tuple[Any, ...]:
    return tuple((t.shape, t.dtype, t.device, t.is_contiguous()) for t in tensors)


@contextlib.contextmanager
def _capture_autocast() -> Iterator[None]:
    """Keep the caller's autocast (Lightning's bf16-mixed) but without its weight-cast cache,
    which a CUDA graph cannot hold (PyTorch's graph documentation asks for cache_enabled=False)."""
    if torch.is_autocast_enabled("cuda"):
        dtype = torch.get_autocast_dtype("cuda")
        with torch.autocast("cuda", dtype=dtype, cache_enabled=False):
            yield
    else:
        yield


@contextlib.contextmanager
def _quiet_stream_warning() -> Iterator[None]:
    """Warm-up and capture run on side streams, as PyTorch's graph documentation asks; autograd
    warns that parameters first used on the default stream now accumulate gradients from another
    one. That costs one synchronisation at warm-up and capture, and nothing per replay."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The AccumulateGrad node's stream")
        yield


class CapturedStep:
    """Run ``step(*inputs)`` eagerly a few times, then from a CUDA graph (see the module doc).

    Args:
        step: a function of tensors returning a tensor (or a tuple of tensors); the values it
            returns are overwritten by the next replay (clone them to keep them).
        optimizers: the optimizers ``step`` steps (made capturable; their hyperparameters are
            part of every call's key).
        warmup: eager calls before the capture.
        name: what the log messages call the step.

    Call it with the step's inputs and a ``key`` (the Python values the step reads). ``enabled``
    turns False for good when capturing fails (the reason is in ``disabled_reason``).
    """

    def __init__(
        self,
        step: Callable[..., Any],
        optimizers: Sequence[torch.optim.Optimizer],
        *,
        warmup: int = 2,
        name: str = "training step",
    ):
        self.step = step
        self.optimizers = list(optimizers)
        self.warmup = warmup
        self.name = name
        self.enabled = torch.cuda.is_available()
        self.disabled_reason = "" if self.enabled else "CUDA is not available"
        self.graph: torch.cuda.CUDAGraph | None = None
        self.captures = 0  # how many times a graph was captured (a new key captures again)
        self.replays = 0
        self._eager_calls = 0
        self._key: Hashable = None
        self._signature: tuple[Any, ...] | None = None
        self._static_inputs: list[torch.Tensor] = []
        self._static_outputs: Any = None
        self._recaptures_in_a_row = 0
        for opt in self.optimizers:
            make_capturable(opt)

    def disable(self, reason: str) -> None:
        """Run every later call eagerly (and free the graph), saying why once."""
        if self.enabled:
            _log.info("%s runs without a CUDA graph: %s", self.name, reason)
        self.enabled, self.disabled_reason = False, reason
        self.graph, self._static_inputs, self._static_outputs = None, [], None

    def __call__(self, inputs: Sequence[torch.Tensor], key: Hashable = ()) -> Any:
        inputs = list(inputs)
        if not self.enabled or not all(t.is_cuda for t in inputs):
            return self.step(*inputs)
        key = (key, optimizer_key(self.optimizers))
        signature = _signature(inputs)
        if self._signature is not None and signature != self._signature:
            return self.step(*inputs)  # another shape (an epoch's short last batch): eager
        if self.graph is not None and key == self._key:
            self._recaptures_in_a_row = 0
            return self._replay(inputs)
        if self._eager_calls < self.warmup:
            self._eager_calls += 1
            return self._eager_on_side_stream(inputs)
        if self.graph is not None:  # the key changed: the frozen numbers are stale
            self._recaptures_in_a_row += 1
            if self._recaptures_in_a_row > 3:
                self.disable(
                    "the values frozen into the graph (learning rate, temperature, ...) change at "
                    "every step; a per-step schedule cannot be replayed from one graph"
                )
                return self.step(*inputs)
        self._signature = signature
        if not self._capture(inputs, key):
            return self.step(*inputs)
        return self._replay(inputs)

    def _eager_on_side_stream(self, inputs: list[torch.Tensor]) -> Any:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), _quiet_stream_warning():
            out = self.step(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        return out

    def _capture(self, inputs: list[torch.Tensor], key: Hashable) -> bool:
        self.graph, self._static_outputs = None, None  # free the old graph's pool first
        static = [t.detach().clone() for t in inputs]
        graph = torch.cuda.CUDAGraph()
        for opt in self.optimizers:
            opt.zero_grad(set_to_none=True)  # gradients get allocated inside the graph's pool
        generator = torch.cuda.default_generators[torch.cuda.current_device()]
        # (clone_state / graphsafe_set_state: torch 2.3 and newer)
        rng_before = generator.clone_state() if hasattr(generator, "clone_state") else None
        try:
            with torch.cuda.graph(graph), _capture_autocast(), _quiet_stream_warning():
                outputs = self.step(*static)
        except Exception as err:  # a host sync, an unsupported op: eager from now on
            torch.cuda.synchronize()
            # When the capture breaks, torch skips the epilogue that tells the CUDA generator the
            # capture is over, so every later random op on the device (dropout, drop-path, randn)
            # would raise "Offset increment outside graph capture". Put back its state from before.
            if rng_before is not None:
                generator.graphsafe_set_state(rng_before)
            self.disable(f"capturing it failed ({type(err).__name__}: {err})".strip())
            return False
        self.graph, self._static_inputs, self._static_outputs = graph, static, outputs
        self._key = key
        self.captures += 1
        return True

    def _replay(self, inputs: list[torch.Tensor]) -> Any:
        for static, t in zip(self._static_inputs, inputs, strict=True):
            static.copy_(t, non_blocking=True)
        assert self.graph is not None
        self.graph.replay()
        self.replays += 1
        return self._static_outputs
