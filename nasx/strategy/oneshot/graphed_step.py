"""A one-shot search step replayed from a CUDA graph (see :mod:`nasx._cuda_graph`), and when it
can be.

A step can be captured when it does the same tensor work every time: a mixture strategy (DARTS
first order, GumbelDARTS) on one GPU. Path-sampling strategies (ENAS, RandomOneShot, Proxyless)
run another sub-network at every step, second-order DARTS reads a norm on the host, DDP
all-reduces between backward passes, and fp16 mixed precision's loss scaler checks for
infinities on the host: those run eagerly.

:class:`GraphedSearchStep` owns everything a replayed step needs (the captured graph, the batch
structure, the warm-up flag of the current call, the evaluator's log calls recorded at capture);
:class:`~nasx.strategy.oneshot.lightning.OneShotModule` holds one and asks it
:attr:`GraphedSearchStep.recording` while its own step runs inside a capture or replay.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import torch
import torch.nn as nn
from torch.utils._pytree import TreeSpec, tree_flatten, tree_unflatten

from nasx._cuda_graph import CapturedStep

from .distributed import world_size

#: ``(name, value, log kwargs)`` of one ``self.log`` call of the evaluator's module.
LogCall = tuple[str, Any, dict[str, Any]]


def graph_blocker(module: Any) -> str | None:
    """Why ``module`` (a :class:`~nasx.strategy.oneshot.lightning.OneShotModule`) must run its
    search steps eagerly, or None when they can be replayed from a CUDA graph.

        >>> from types import SimpleNamespace
        >>> from nasx.strategy import DARTS
        >>> graph_blocker(SimpleNamespace(strategy=DARTS(cuda_graphs=False)))
        'cuda_graphs=False'
    """
    strategy = module.strategy
    if strategy.cuda_graphs is False:
        return "cuda_graphs=False"
    device = next(iter(module.supernet.parameters())).device
    if device.type != "cuda":
        return f"the supernet trains on {device.type}, not on a CUDA GPU"
    if strategy.graph_key() is None:
        return f"{type(strategy).__name__} {strategy.graph_blocker_reason}"
    if world_size() > 1:
        return "it runs under DDP (gradients are all-reduced between its backward passes)"
    trainer = getattr(module, "_trainer", None)  # Lightning's attribute: None when detached
    precision = str(getattr(trainer, "precision", "")) if trainer is not None else ""
    if precision.startswith("16"):
        return f"precision {precision!r} scales the loss with checks on the host (use 'bf16-mixed')"
    return None


class SearchStepModule(Protocol):
    """What a graphed step needs from its :class:`~nasx.strategy.oneshot.lightning.OneShotModule`
    (a protocol: lightning.py imports this module)."""

    strategy: Any

    @property
    def supernet(self) -> nn.Module: ...

    def opts(self) -> list[Any]: ...
    def eager_search_step(
        self, train_batch: Any, val_batch: Any, batch_idx: int, warm: bool, log: bool
    ) -> torch.Tensor: ...
    def count_graphed_steps(self, warm: bool) -> None: ...
    def log(self, name: str, value: Any, *args: Any, **kwargs: Any) -> None: ...


class GraphedSearchStep:
    """One module's search step, captured once in a CUDA graph and replayed (eager for batches of
    another shape or structure, and for good when capturing fails).

    Build it with :meth:`for_module`, which returns None where the step cannot be captured (a
    path-sampling strategy, a run off the GPU, DDP, fp16 mixed precision, ``cuda_graphs=False``)
    and raises when the strategy asked for graphs with ``cuda_graphs=True``. Call it as the
    module's search step.
    """

    def __init__(self, module: SearchStepModule):
        self.module = module
        raw = [getattr(o, "optimizer", o) for o in module.opts()]  # torch's, not Lightning's
        self.captured = CapturedStep(
            self._step, raw, name=f"{type(module.strategy).__name__} search step"
        )
        self.batch_spec: TreeSpec | None = None  # structure of (train_batch, val_batch)
        self.warm = False  # the current call is a warm-up step (no architecture step)
        self.recording = False  # inside a call: the module's logs and backward go through us
        self.logged: list[LogCall] = []  # the log calls of the current call
        self.capture_logs: list[LogCall] = []  # those of the latest capture (a replay's logs)

    @classmethod
    def for_module(cls, module: SearchStepModule) -> GraphedSearchStep | None:
        """The graphed step of ``module``, or None when its steps must run eagerly."""
        reason = graph_blocker(module)
        if reason is not None:
            if module.strategy.cuda_graphs:
                raise ValueError(f"cuda_graphs=True, but this search cannot use them: {reason}")
            return None
        return cls(module)

    @property
    def enabled(self) -> bool:
        """False for good once capturing failed (the reason is logged once)."""
        return self.captured.enabled

    def __call__(self, train_batch: Any, val_batch: Any, warm: bool, log: bool) -> torch.Tensor:
        """One search step (architecture then weights) from the graph; returns the weight loss."""
        module = self.module
        leaves, spec = tree_flatten((train_batch, val_batch))
        if not all(torch.is_tensor(t) for t in leaves):
            self.captured.disable("the batches hold values other than tensors")
            return module.eager_search_step(train_batch, val_batch, 0, warm, log)
        self.batch_spec, self.warm, self.logged = spec, warm, []
        strategy = module.strategy
        key = (warm, strategy.graph_key(), strategy.gradient_clip_val, str(spec))
        captures = self.captured.captures
        loss = self.captured(leaves, key=key)
        module.count_graphed_steps(warm)
        # The logs of this call: recorded now (an eager or capturing call), or, for a replay,
        # those recorded at capture, whose tensors the replay has just overwritten.
        if self.captured.captures != captures:
            self.capture_logs = self.logged
        if log:
            for name, value, kwargs in self.logged or self.capture_logs:
                value = value.detach().clone() if torch.is_tensor(value) else value
                module.log(name, value, **kwargs)
        out: torch.Tensor = loss.clone()
        return out

    def _step(self, *leaves: torch.Tensor) -> torch.Tensor:
        """The function :class:`CapturedStep` runs, captures and replays."""
        assert self.batch_spec is not None
        train_batch, val_batch = tree_unflatten(list(leaves), self.batch_spec)
        with self._recording():
            return self.module.eager_search_step(train_batch, val_batch, 0, self.warm, log=True)

    @contextlib.contextmanager
    def _recording(self) -> Iterator[None]:
        self.recording = True
        try:
            yield
        finally:
            self.recording = False

    def log_functions(self) -> tuple[Callable[..., None], Callable[..., None]]:
        """``log`` and ``log_dict`` for the evaluator's module inside a captured step: the calls
        are recorded, to repeat after replays (the values are the graph's own output tensors,
        which every replay overwrites). A logged torchmetrics Metric cannot be replayed (its
        update is Python state): capturing fails and the search goes on eagerly."""
        from torchmetrics import Metric

        def record(name: str, value: Any, *args: Any, **kwargs: Any) -> None:
            if isinstance(value, Metric):
                if torch.cuda.is_current_stream_capturing():
                    raise RuntimeError(
                        f"the evaluator's training_step logs the metric object {name!r}, whose "
                        "update a replayed graph would skip"
                    )
                self.module.log(name, value, *args, **kwargs)
                return
            self.logged.append((name, value, kwargs))

        def record_dict(values: dict[str, Any], *args: Any, **kwargs: Any) -> None:
            for name, value in values.items():
                record(name, value, **kwargs)

        return record, record_dict
