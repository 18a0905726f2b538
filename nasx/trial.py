"""Trial: one arch evaluated, with its metric(s), intermediate metrics, status, timing and error.

A trial is plain data shared by strategies (which learn from finished trials), the experiment
(which runs them) and storage (which keeps one row per trial).

    >>> t = Trial(id=0, arch={'act': 1}, status='succeeded', metric=0.9, metrics={'default': 0.9})
    >>> t.finished, t.succeeded
    (True, True)
    >>> Trial.from_dict(t.to_dict()) == t
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast, get_args

__all__ = ["Trial", "best_trials", "status_counts", "arch_key"]

# Statuses are plain strings in storage and in the trial table; the Literal lets a type checker
# catch a misspelled one, the constants let code name them once.
# With a multi-fidelity scheduler (nasx.experiment.schedulers) a trial may also end 'pruned'
# (stopped for good at a rung: its metric is the one it reached there) or 'paused' (its job
# ended at a rung; the scheduler may promote it to a larger budget later, when it runs again;
# once the scheduler says it never will, the trial is stored 'pruned' at the budget it reached).
TrialStatus = Literal["waiting", "running", "succeeded", "failed", "rejected", "pruned", "paused"]
WAITING: Final = "waiting"
RUNNING: Final = "running"
SUCCEEDED: Final = "succeeded"
FAILED: Final = "failed"
REJECTED: Final = "rejected"
PRUNED: Final = "pruned"
PAUSED: Final = "paused"
STATUSES: tuple[TrialStatus, ...] = get_args(TrialStatus)
# A paused trial is not re-run on resume: the scheduler's stored state decides whether it runs on.
FINISHED: tuple[TrialStatus, ...] = (SUCCEEDED, FAILED, REJECTED, PRUNED, PAUSED)

# Why a trial failed when nasx decided it (the error text starts with ``"<kind>: "``); a trial that
# raised starts its error with the exception's type name instead (``"ValueError: ..."``).
FailureKind = Literal["TrialTimeout", "WorkerDied", "Interrupted", "FilterError", "Crashed"]
FAILURE_KINDS: tuple[FailureKind, ...] = get_args(FailureKind)


def failure(kind: FailureKind, message: str) -> str:
    """The error text of a trial that failed for ``kind`` (one of :data:`FAILURE_KINDS`).

    >>> failure('TrialTimeout', 'trial 4 ran longer than trial_timeout (3 s)')
    'TrialTimeout: trial 4 ran longer than trial_timeout (3 s)'
    """
    if kind not in FAILURE_KINDS:
        raise ValueError(f"unknown failure kind {kind!r}; known: {', '.join(FAILURE_KINDS)}")
    return f"{kind}: {message}"


def failure_kind(error: str | None) -> str | None:
    """What a failed trial's error says went wrong: a :data:`FAILURE_KINDS` entry, or the type of
    the exception the trial raised; None without an error.

    >>> failure_kind('WorkerDied: the worker process running trial 3 was killed by signal SIGKILL')
    'WorkerDied'
    >>> failure_kind('ValueError: trial 0: the metric must be finite, got nan'), failure_kind(None)
    ('ValueError', None)
    """
    if not error:
        return None
    head = error.split(":", 1)[0].strip()
    return head if head.isidentifier() else None


@dataclass
class Trial:
    """One arch evaluated (or waiting to be).

    Attributes:
        id: 0, 1, 2, ... in proposal order, unique within an experiment.
        arch: ``dict[label, value]``, JSON-serialisable.
        status: ``'waiting' | 'running' | 'succeeded' | 'failed' | 'rejected' | 'pruned' |
            'paused'`` (rejected: a filter refused the arch before training; pruned, paused: a
            multi-fidelity scheduler stopped it at a rung for good, or until a promotion).
        metric: the final ``'default'`` metric of a succeeded trial, else None.
        metrics: every final metric (``{'default': ..., ...}``).
        intermediates: the metrics reported during training (e.g. one per epoch).
        start_time, end_time: Unix timestamps (None until known).
        duration: seconds the evaluation took (None until finished).
        error: the traceback or reason of a failed or rejected trial.
        hparams: ``dict[label, value]`` of the evaluator's choices (hyperparameters searched
            with the architecture, :mod:`nasx.evaluator.hparams`); empty when it has none.
            ``arch`` holds only the model's labels, so ``model_context(trial.arch)`` rebuilds
            the model, and ``freeze_evaluator(evaluator, trial.hparams)`` the evaluator.
        budget: how much training the trial got (epochs by default) when a multi-fidelity
            scheduler set it (:mod:`nasx.experiment.schedulers`): the largest budget it reached;
            None without a scheduler (the evaluator's own, full training).
    """

    id: int
    arch: dict
    status: TrialStatus = WAITING
    metric: float | None = None
    metrics: dict = field(default_factory=dict)
    intermediates: list = field(default_factory=list)
    start_time: float | None = None
    end_time: float | None = None
    duration: float | None = None
    error: str | None = None
    hparams: dict = field(default_factory=dict)
    budget: int | float | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"trial status must be one of {STATUSES}, got {self.status!r}")

    @property
    def finished(self) -> bool:
        """Whether the trial's run ended (succeeded, failed, rejected, pruned or paused)."""
        return self.status in FINISHED

    @property
    def succeeded(self) -> bool:
        return self.status == SUCCEEDED

    @property
    def sample(self) -> dict[str, Any]:
        """``arch`` and ``hparams`` in one dict: the point of the joint space a strategy proposed.

        >>> Trial(0, {'op': 'conv'}, hparams={'lr': 0.01}).sample
        {'op': 'conv', 'lr': 0.01}
        """
        return {**self.arch, **self.hparams} if self.hparams else self.arch

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of every field."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trial:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def arch_key(arch: dict[str, Any]) -> str:
    """A canonical string of an arch (sorted keys), for deduplication and lookups.

    >>> arch_key({'b': [0], 'a': 1}) == arch_key({'a': 1, 'b': [0]})
    True
    """
    return json.dumps(arch, sort_keys=True, separators=(",", ":"))


def arch_digest(arch: dict[str, Any]) -> int:
    """A 64-bit digest of :func:`arch_key`: what deduplication sets keep.

    An int of 32 bytes instead of a key string of ~140 (a 12-label arch), so a strategy that
    remembers 100,000 archs holds 3 MiB, not 14. Two different archs share a digest with
    probability 2**-64 per pair: about 3e-10 among 100,000 archs, 3e-6 among 10 million (such a
    pair would only make the second arch look proposed already). The same arch has the same
    digest in every process and run (no per-process hash seed).

    >>> arch_digest({'b': [0], 'a': 1}) == arch_digest({'a': 1, 'b': [0]})
    True
    >>> arch_digest({'a': 1}) == arch_digest({'a': 2})
    False
    """
    digest = hashlib.blake2b(arch_key(arch).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def best_trials(trials: Iterable[Trial], direction: str, top_k: int | None = None) -> list[Trial]:
    """The succeeded trials, best first (``direction`` 'maximize' or 'minimize'), ties broken by
    the lower id, those without a metric last (in id order); the first ``top_k`` when given.

    >>> ts = [Trial(0, {}, 'succeeded', metric=0.5), Trial(1, {}, 'failed'),
    ...       Trial(2, {}, 'succeeded', metric=0.9), Trial(3, {}, 'succeeded', metric=0.9)]
    >>> [t.id for t in best_trials(ts, 'maximize')], [t.id for t in best_trials(ts, 'minimize', 1)]
    ([2, 3, 0], [0])
    """
    if direction not in ("maximize", "minimize"):
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
    sign = -1.0 if direction == "maximize" else 1.0
    done = [t for t in trials if t.status == SUCCEEDED]
    scored = sorted(
        (t for t in done if t.metric is not None),
        key=lambda t: (sign * cast(float, t.metric), t.id),
    )
    # A row without a metric (an arch a one-shot run exported, ranked by the run) comes after
    # every scored one, in id order: the order the run exported them in.
    ranked = scored + sorted((t for t in done if t.metric is None), key=lambda t: t.id)
    return ranked if top_k is None else ranked[:top_k]


def status_counts(trials: Iterable[Trial]) -> dict[str, int]:
    """How many trials have each status (every status listed, zeros included).

    >>> status_counts([Trial(0, {}, 'failed'), Trial(1, {}, 'failed')])['failed']
    2
    """
    counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
    for t in trials:
        counts[t.status] = counts.get(t.status, 0) + 1
    return counts
