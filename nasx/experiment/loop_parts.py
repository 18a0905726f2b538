"""What a :class:`~nasx.experiment.loop.TrialLoop` is built from: the seams it calls (the
:class:`Store`, :class:`Executor`, :class:`Strategy`, :class:`Keeper` and :class:`Progress`
protocols: any object with those methods will do, and the loop's tests pass fakes), when it
stops (:class:`Limits`), the trials it has not finished and the status counts
(:class:`TrialBook`), and how its strategy sees a trial (:func:`as_seen`, :func:`label_splitter`).
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from nasx.trial import FAILED, PAUSED, PRUNED, REJECTED, SUCCEEDED, Trial, TrialStatus

from .jobs import Job, TrialResult, WeightsSpec

__all__ = [
    "Executor",
    "Keeper",
    "Limits",
    "NoProgress",
    "Progress",
    "Store",
    "Strategy",
    "TrialBook",
    "as_seen",
    "label_splitter",
]


class Store(Protocol):
    """What the loop writes: :class:`~nasx.experiment.storage.TrialStore` has these."""

    def add(self, trial: Trial) -> None: ...
    def update(self, trial: Trial) -> None: ...
    def next_id(self) -> int: ...
    def log_path(self, trial_id: int) -> Any: ...


class Executor(Protocol):
    """Where jobs run (:mod:`nasx.experiment.execution`, :mod:`~nasx.experiment.ray_execution`,
    and the simulator's :class:`~nasx.experiment.simulated.SimulatedExecutor`).

    ``decide``: how a running trial's report is answered (``decide(trial, budget, value) ->
    'continue' | 'pause' | 'prune' | 'complete'``), set by the loop from its scheduler; None:
    reports are not asked about (every trial trains its whole budget)."""

    decide: Callable[[int, Any, Any], str] | None

    @property
    def capacity(self) -> int:
        """How many jobs it runs at once."""
        ...

    def submit(self, job: Job) -> None: ...
    def wait(self, timeout: float | None = None) -> list[TrialResult]: ...


class Strategy(Protocol):
    """The two calls the loop makes of a multi-trial strategy (set up before the loop runs)."""

    def propose(self) -> dict[str, Any] | None: ...
    def tell(self, trial: Trial) -> None: ...


class Keeper(Protocol):
    """Keeps trials' weights (:class:`~nasx.experiment.weights.WeightKeeper`)."""

    def job_spec(self) -> WeightsSpec: ...
    def finished(self, trial: Trial, result: TrialResult) -> None: ...


class Progress(Protocol):
    """Shows the run (:class:`~nasx.experiment.progress.Progress`)."""

    def trial_started(self) -> None: ...
    def trial_finished(self, trial: Trial) -> None: ...
    def budget_reached(self, units: float) -> None: ...


@dataclass(frozen=True)
class Limits:
    """When to stop proposing: trials counted (rejected archs do not count), failures, time."""

    max_trials: int | None = None
    max_failed_trials: int | None = None
    max_duration: float | None = None
    stop: threading.Event | None = None  # set by NasExperiment.stop(), from any thread

    def reached(
        self, counts: collections.Counter[str], elapsed: float, new_trial: bool = True
    ) -> str | None:
        """Why to stop now, or None. Constant time: it never walks the trials (100k of them)."""
        if self.stop is not None and self.stop.is_set():
            return "stopped by stop()"
        counted = sum(counts.values()) - counts[REJECTED]
        if new_trial and self.max_trials is not None and counted >= self.max_trials:
            return f"max_trials ({self.max_trials}) reached"
        failed = counts[FAILED]
        if self.max_failed_trials is not None and failed > self.max_failed_trials:
            return f"{failed} trials failed, more than max_failed_trials ({self.max_failed_trials})"
        if self.max_duration is not None and elapsed >= self.max_duration:
            return f"max_duration ({self.max_duration:g} s) reached"
        return None


@dataclass
class TrialBook:
    """The trials not finished yet (in flight, or waiting to re-run) and how many trials have
    each status. A finished trial lives in the store only, so memory does not grow with them."""

    unfinished: dict[int, Trial] = field(default_factory=dict)
    counts: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, trial: Trial) -> None:
        if not trial.finished:  # one rejected (or failed) before it ran is in the store only
            self.unfinished[trial.id] = trial
        self.counts[trial.status] += 1

    def set_status(self, trial: Trial, status: TrialStatus) -> None:
        self.counts[trial.status] -= 1
        self.counts[status] += 1
        trial.status = status


def as_seen(trial: Trial) -> Trial:
    """The trial as a strategy sees it: its arch is the joint sample (arch and hparams), and a
    trial a multi-fidelity scheduler paused or pruned is a result at the budget it reached
    (status succeeded, its metric the last value it reported, :attr:`~Trial.budget` that budget):
    strategies learn from every arch's highest budget, as they do in the scheduler's simulator.

    >>> as_seen(Trial(0, {'op': 1}, 'paused', metric=0.5, budget=3)).status
    'succeeded'
    """
    changes: dict[str, Any] = {}
    if trial.hparams:
        changes.update(arch=trial.sample, hparams={})
    if trial.status in (PAUSED, PRUNED) and trial.metric is not None:
        changes["status"] = SUCCEEDED
    return dataclasses.replace(trial, **changes) if changes else trial


def label_splitter(
    model_labels: frozenset[str], hparam_labels: frozenset[str]
) -> Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]:
    """A joint sample as ``(arch, hparams)``: the model's labels, the evaluator's labels (a
    label both share on purpose goes to both).

    >>> label_splitter(frozenset({'op'}), frozenset({'lr'}))({'op': 1, 'lr': 0.1})
    ({'op': 1}, {'lr': 0.1})
    """

    def split(sample: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        arch = {k: v for k, v in sample.items() if k in model_labels}
        hparams = {k: v for k, v in sample.items() if k in hparam_labels}
        return arch, hparams

    return split


class NoProgress:
    """The progress display of a loop that shows none."""

    def trial_started(self) -> None:
        pass

    def trial_finished(self, trial: Trial) -> None:
        pass

    def budget_reached(self, units: float) -> None:
        pass
