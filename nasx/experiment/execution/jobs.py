"""What crosses an executor: a :class:`Job` goes out, a :class:`TrialResult` comes back.

Both are plain, picklable dataclasses (the process pool sends them over a socket, Ray through
its object store), so a new field of a trial is added here once and every executor carries it.

    >>> job = Job(id=3, arch={'act': 1}, seed=7)
    >>> result = TrialResult.failed(job, 'WorkerDied: the worker process running trial 3 died')
    >>> result.id, result.status, result.metric
    (3, 'failed', None)
    >>> from nasx.trial import Trial
    >>> trial = Trial(3, {'act': 1}, 'running', start_time=1.0)
    >>> result.apply_to(trial); (trial.status, trial.start_time, trial.error.split(':')[0])
    ('failed', 1.0, 'WorkerDied')
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nasx._errors import NasxError
from nasx.evaluator.checkpoint import Checkpoint
from nasx.trial import FAILED, PAUSED, PRUNED, SUCCEEDED, TrialStatus

__all__ = [
    "STATUS_AFTER",
    "Decide",
    "DecisionError",
    "Job",
    "Report",
    "TrialResult",
    "TrialStarted",
    "WeightsSpec",
    "WorkerSetupFailed",
]


#: How a running trial's report is answered: ``decide(trial id, budget reached, value) ->
#: 'continue' | 'pause' | 'prune' | 'complete'`` (``value``: the number reported, or a dict of
#: metrics); every executor asks it (the loop sets ``executor.decide``)
Decide = Callable[[int, Any, Any], str]

#: A job's status from the last answer other than ``'continue'`` its reports got (None: none)
STATUS_AFTER: dict[str | None, TrialStatus] = {
    None: SUCCEEDED,
    "continue": SUCCEEDED,
    "complete": SUCCEEDED,
    "pause": PAUSED,
    "prune": PRUNED,
}


@dataclass(frozen=True)
class WeightsSpec:
    """What a trial is told about keeping its trained weights (``keep_weights``).

    ``directory``: the workdir to write them into (None: send them back in the result, as a
    Ray worker on another machine must); ``threshold``: the metric a trial must beat to enter
    the kept top k (None: every trial qualifies); ``space``: the space reference stored with
    the weights (:func:`nasx.experiment.storage.weights.space_reference`).
    """

    directory: str | None
    threshold: float | None = None
    direction: str = "maximize"
    space: dict[str, Any] | None = None


@dataclass(frozen=True)
class Job:
    """One trial to run: its id and arch, and how to run it.

    ``hparams``: values of the evaluator's choices (the evaluator is made again with them);
    ``log_path``: the trial's log file (None: the log comes back as ``TrialResult.log``);
    ``seed``: seed torch, numpy and random with it before the model is built; ``weights``:
    keep the trained weights (None: keep none); ``evaluating_mark``: a file that exists exactly
    while the model is built and evaluated (a trial in the experiment's own process: a death
    then is the trial's crash); ``budget``: train up to this budget (epochs by default; None:
    the evaluator's own full training), passed to evaluators that declare a ``budget``
    parameter; ``from_budget``: the budget the trial's training starts from (0: a fresh
    start, or a promoted trial continuing from its checkpoint there); ``decided_budget``: the
    budget up to which a scheduler decided already (a promoted trial trained again from
    scratch: its reports up to there are not asked again); ``checkpoint``: where the trial
    keeps its training state between budgets (a
    :class:`~nasx.evaluator.checkpoint.Checkpoint`, passed to evaluators that declare a
    ``checkpoint`` parameter; None: no continuation).
    """

    id: int
    arch: dict[str, Any]
    hparams: dict[str, Any] = field(default_factory=dict)
    log_path: str | None = None
    seed: int | None = None
    weights: WeightsSpec | None = None
    evaluating_mark: str | None = None
    budget: int | float | None = None
    from_budget: int | float = 0
    decided_budget: int | float = 0
    checkpoint: Checkpoint | None = None

    @classmethod
    def of(cls, job: Job | Mapping[str, Any]) -> Job:
        """``job`` itself, or a Job from a dict of the same fields (the form before Job existed).

        >>> Job.of({'id': 0, 'arch': {'k': 3}}) == Job(0, {'k': 3})
        True
        """
        if isinstance(job, Job):
            return job
        unknown = set(job) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"a job has no field(s) {', '.join(sorted(unknown))}")
        weights = job.get("weights")
        if isinstance(weights, Mapping):  # the old spec: {'dir', 'threshold', 'direction', 'space'}
            weights = WeightsSpec(
                weights.get("dir"),
                weights.get("threshold"),
                weights.get("direction", "maximize"),
                weights.get("space"),
            )
        return cls(**{**job, "hparams": job.get("hparams") or {}, "weights": weights})

    def remote(self) -> Job:
        """The job as it goes to a machine that cannot reach the workdir: no log file, weights
        sent back instead of written, and the checkpoint in a folder the worker makes (its
        state at ``from_budget`` travels with the job, the state saved comes back in the
        result: :mod:`nasx.experiment.execution.ray`)."""
        weights = (
            None if self.weights is None else dataclasses.replace(self.weights, directory=None)
        )
        checkpoint = (
            None if self.checkpoint is None else dataclasses.replace(self.checkpoint, directory="")
        )
        return dataclasses.replace(self, log_path=None, weights=weights, checkpoint=checkpoint)


@dataclass
class TrialResult:
    """What running a job gave: the fields a trial takes from it, and the trial's by-products.

    ``log``: the trial's log when it had no log file (a remote worker's); ``weights_bytes``:
    the size of the weights the trial wrote; ``weights_payload``: the serialized weights of a
    remote trial, for the experiment to write; ``weights_error``: why weights were not kept;
    ``budget``: the budget the trial reached (None: the job had no budget);
    ``checkpoint_payload``: the checkpoint file a remote trial saved at its budget, for the
    experiment to write into the trial's checkpoint folder.
    """

    id: int
    status: TrialStatus
    metric: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    intermediates: list[float] = field(default_factory=list)
    start_time: float | None = None
    end_time: float | None = None
    duration: float | None = None
    error: str | None = None
    log: str | None = None
    weights_bytes: int | None = None
    weights_payload: bytes | None = None
    weights_error: str | None = None
    budget: int | float | None = None
    checkpoint_payload: bytes | None = None

    @classmethod
    def failed(cls, job: Job, error: str) -> TrialResult:
        """The result of a trial that ended outside :func:`~nasx.experiment.execution.runner.run_trial`
        (its process died, it timed out)."""
        return cls(job.id, FAILED, end_time=time.time(), error=error)

    def apply_to(self, trial: Any) -> None:
        """Write the result's fields into ``trial`` (a :class:`~nasx.trial.Trial`); its start
        time stays the stored one when the result has none."""
        trial.status = self.status
        trial.metric, trial.metrics = self.metric, self.metrics
        trial.intermediates = self.intermediates
        trial.end_time, trial.duration, trial.error = self.end_time, self.duration, self.error
        trial.start_time = self.start_time or trial.start_time
        if self.budget is not None:  # a failed job keeps the budget the trial reached before
            trial.budget = self.budget


@dataclass(frozen=True)
class TrialStarted:
    """A worker's word that trial ``id``'s own work began (its timeout counts from here)."""

    id: int


@dataclass(frozen=True)
class Report:
    """A worker's question to the experiment's scheduler: trial ``id`` reached ``budget`` with
    ``value``; the worker waits for the answer (a decision: ``'continue'``, ``'pause'``, ...).

    >>> Report(3, 1, 0.5)
    Report(id=3, budget=1, value=0.5)
    """

    id: int
    budget: int | float
    value: float


class DecisionError(NasxError, RuntimeError):
    """The answer to a :class:`Report` when the scheduler raised: the trial raises it (and
    fails with its text), as a trial deciding in the experiment's own process would."""


@dataclass(frozen=True)
class WorkerSetupFailed:
    """A worker's word that it could not load the space or the evaluator (the traceback)."""

    traceback: str
