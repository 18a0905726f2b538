"""The trial loop: propose archs, fill the executor with jobs, store the results, tell the strategy.

One :class:`TrialLoop` runs one ``NasExperiment.run()`` of a multi-trial search::

    queue (interrupted trials), or scheduler.next_assignment(): a promotion, or a new trial of
    strategy.propose() -> arch -> validate -> admit (constraints, filter) -> store.add (running)
    -> executor.submit(Job at the assignment's budget)
    executor.wait() -> TrialResult -> store.update -> scheduler.finished -> weights, callbacks
    -> strategy.tell

Every run is scheduled: without a multi-fidelity scheduler the loop holds the plain one
(:class:`~nasx.experiment.schedulers.FullBudget`, first come first served, every trial the
evaluator's own budget), so there is one path through it for every search, simulated or real.

It knows the store, the executor and the strategy only by the few methods it calls
(:class:`Store`, :class:`Executor`), so it runs on fakes without a workdir:

    >>> import contextlib
    >>> from nasx.space import Categorical, SearchSpace
    >>> from nasx.strategy import GridSearch
    >>> from nasx.experiment.execution.jobs import TrialResult
    >>> class Store:  # keeps rows in a dict
    ...     rows = {}
    ...     def add(self, trial): self.rows[trial.id] = trial.status
    ...     def update(self, trial): self.rows[trial.id] = trial.status
    ...     def next_id(self): return len(self.rows)
    ...     def log_path(self, trial_id): return None
    ...     def atomic(self): return contextlib.nullcontext()
    >>> class Executor:  # runs each job when asked for results
    ...     capacity, jobs = 1, []
    ...     def submit(self, job): self.jobs.append(job)
    ...     def wait(self, timeout=None):
    ...         return [TrialResult(self.jobs.pop().id, 'succeeded', metric=1.0)] if self.jobs else []
    >>> space = SearchSpace({'k': Categorical([1, 2], label='k')})
    >>> strategy = GridSearch(shuffle=False); strategy.setup(space, [])
    >>> loop = TrialLoop(Store(), Executor(), strategy, space, Limits(max_trials=5))
    >>> loop.run()
    'the strategy has no more archs to propose'
    >>> Store.rows, loop.book.counts['succeeded']
    ({0: 'succeeded', 1: 'succeeded'}, 2)
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from nasx.experiment.execution.jobs import Decide, Job, TrialResult, WeightsSpec
from nasx.experiment.execution.local import evaluating_mark
from nasx.experiment.loop.scheduled import ScheduledRun, scheduled_run
from nasx.space import InvalidArchError, SearchSpace
from nasx.trial import (
    FAILED,
    PAUSED,
    PRUNED,
    REJECTED,
    RUNNING,
    SUCCEEDED,
    WAITING,
    Trial,
    TrialStatus,
    failure,
)

_log = logging.getLogger("nasx.experiment")

__all__ = [
    "Executor",
    "Keeper",
    "Limits",
    "NoProgress",
    "Progress",
    "Store",
    "Strategy",
    "TrialBook",
    "TrialLoop",
    "as_seen",
    "label_splitter",
]


class Store(Protocol):
    """What the loop writes: :class:`~nasx.experiment.storage.store.TrialStore` has these."""

    def add(self, trial: Trial) -> None: ...
    def update(self, trial: Trial) -> None: ...
    def next_id(self) -> int: ...
    def log_path(self, trial_id: int) -> Any: ...
    def atomic(self) -> contextlib.AbstractContextManager[Any]:
        """A transaction: a trial's row and the scheduler's state written together, so a run
        killed between them resumes consistent (``contextlib.nullcontext()`` in memory)."""
        ...


class Executor(Protocol):
    """Where jobs run (:mod:`nasx.experiment.execution.local`, :mod:`~nasx.experiment.execution.ray`,
    and the simulator's :class:`~nasx.experiment.simulated.SimulatedExecutor`).

    ``decide``: how a running trial's report is answered (``decide(trial, budget, value) ->
    'continue' | 'pause' | 'prune' | 'complete'``), set by the loop from its scheduler; None:
    reports are not asked about (every trial trains its whole budget)."""

    decide: Decide | None

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
    """Keeps trials' weights (:class:`~nasx.experiment.storage.weights.WeightKeeper`)."""

    def job_spec(self) -> WeightsSpec: ...
    def finished(self, trial: Trial, result: TrialResult) -> None: ...


class Progress(Protocol):
    """Shows the run (:class:`~nasx.experiment.display.progress.Progress`)."""

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


class TrialLoop:
    """Runs trials until a limit, the strategy's end or the filter's patience stops it.

    Args:
        store, executor, strategy: see :class:`Store`, :class:`Executor`, :class:`Strategy`.
        space: the (joint) search space proposals are validated against.
        limits: :class:`Limits`.
        book: the unfinished trials and status counts, kept across runs of one experiment.
        split: a joint sample as ``(arch, hparams)`` (default: all of it is the arch).
        admit: why an arch is rejected before it runs (constraints, a filter), or None; an
            exception it raises fails the trial (``FilterError``).
        patience: rejections in a row after which the loop stops.
        keeper: a :class:`~nasx.experiment.storage.weights.WeightKeeper` (``keep_weights``), or None.
        progress: ``trial_started()``, ``trial_finished(trial)``.
        seed: each trial is seeded with ``seed + trial id`` (None: not seeded).
        on_finished: called with each finished trial after its row is stored (TensorBoard).
        scheduler: a :class:`~nasx.experiment.loop.scheduled.ScheduledRun`: its scheduler decides
            what runs next and at what budget, and answers the trials' reports (through the
            executor's ``decide``). None: every trial trains its evaluator's own budget.
    """

    def __init__(
        self,
        store: Store,
        executor: Executor,
        strategy: Strategy,
        space: SearchSpace,
        limits: Limits,
        *,
        book: TrialBook | None = None,
        split: Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]] | None = None,
        admit: Callable[[dict[str, Any]], str | None] | None = None,
        patience: int = 100,
        keeper: Keeper | None = None,
        progress: Progress | None = None,
        seed: int | None = None,
        on_finished: Callable[[Trial], None] | None = None,
        scheduler: ScheduledRun | None = None,
    ):
        self.store, self.executor, self.strategy, self.space = store, executor, strategy, space
        self.limits = limits
        self.book = book if book is not None else TrialBook()
        self.split = split or (lambda sample: (sample, {}))
        self.admit = admit or (lambda arch: None)
        self.patience = patience
        self.keeper, self.seed, self.on_finished = keeper, seed, on_finished
        self.progress: Progress = progress if progress is not None else NoProgress()
        self.in_flight: set[int] = set()
        self.interrupted: list[Trial] = []  # in flight when Ctrl-C or SIGTERM stopped the run
        self.stop_reason: str | None = None
        self._next_id: int | None = None  # asked of the store once per run, then counted here
        self._rejections_in_a_row = 0
        self.scheduler = scheduler if scheduler is not None else scheduled_run(None, None)
        # every executor answers its trials' reports with it (in this process, or asked from
        # a worker or a Ray task: execution.py); a scheduler that decides nothing is not asked
        executor.decide = self.scheduler.decide if self.scheduler.scheduler.decides else None
        self._count_retired()  # paused trials a resume found it will never promote
        self._exhausted = False  # the strategy proposed None: promotions may go on

    # ----------------------------------------------------------------- the loop
    def run(self, queue: list[Trial] | None = None) -> str | None:
        """Run until stopped; ``queue``: interrupted trials to re-run first. The stop reason."""
        queue = sorted(queue or [], key=lambda t: t.id)
        started = time.monotonic()
        self.stop_reason, self._next_id = None, None
        try:
            while True:
                self._fill(queue, started)
                if not self.in_flight:
                    break
                for result in self.executor.wait(timeout=1.0):
                    self._collect(result)
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (nasx.experiment.loop.interrupt)
            self._store_interrupted()
            raise
        _log.info("experiment stopped: %s", self.stop_reason)
        return self.stop_reason

    def _store_interrupted(self) -> None:
        """Every trial not finished in the store (in flight, or waiting to re-run) goes back to
        waiting, with a note: it runs again on resume, and counts no crash (its ``evaluating``
        mark goes too). A result that came back just as the run was stopped is dropped with it."""
        for trial in sorted(self.book.unfinished.values(), key=lambda t: t.id):
            self.book.set_status(trial, WAITING)
            trial.error = failure(
                "Interrupted",
                "the experiment was stopped (Ctrl-C or SIGTERM) while this trial ran; it runs "
                "again on resume",
            )
            self.store.update(trial)
            log_path = self.store.log_path(trial.id)
            if log_path is not None:
                evaluating_mark(log_path).unlink(missing_ok=True)
            if trial.id in self.in_flight:
                self.interrupted.append(trial)
        self.in_flight.clear()
        _log.warning(
            "experiment stopped: %d trial(s) in flight stored as interrupted", len(self.interrupted)
        )

    def _fill(self, queue: list[Trial], started: float) -> None:
        """Submit jobs until the executor is full or something says stop."""
        while self.stop_reason is None and len(self.in_flight) < self.executor.capacity:
            # max_trials stops new trials only (_start_next): not the rerun of interrupted
            # trials (counted already), nor promotions
            elapsed = time.monotonic() - started
            self.stop_reason = self.limits.reached(self.book.counts, elapsed, new_trial=False)
            if self.stop_reason is not None:
                return
            if queue:
                trial = self._restart(queue.pop(0))
                self._submit(trial, trial.budget)
            elif not self._start_next(elapsed):
                return

    def _start_next(self, elapsed: float) -> bool:
        """One free worker: a new trial or a promotion at the budget the scheduler says. False
        when nothing can run now (the loop waits for the trials in flight, or stops)."""
        no_new = self.limits.reached(self.book.counts, elapsed)  # why no new trial may start
        assignment = self.scheduler.next_assignment(
            allow_new=no_new is None and not self._exhausted
        )
        if assignment is None:
            if not self.in_flight:
                self.stop_reason = no_new or self._nothing_left()
            return False
        if assignment.trial is not None:  # a promotion: continued from its checkpoint, or restarted
            with self.store.atomic():  # the row and the scheduler's job: both or neither
                trial = self.scheduler.promote(assignment)
                self.book.unfinished[trial.id] = trial
                self.book.set_status(trial, RUNNING)
                trial.start_time, trial.error = time.time(), None
                trial.budget = assignment.budget  # while it runs: the budget it trains towards
                self.store.update(trial)
            self._submit(trial, assignment.budget, promoted=True)
            return True
        sample = assignment.arch if assignment.arch is not None else self.strategy.propose()
        if sample is None:
            self._exhausted = True  # the assignment is dropped; promotions only from now on
            return True
        with self.store.atomic():  # the row and the scheduler's job: both or neither
            # its budget, while it runs: the one it trains towards (resumed, an interrupted
            # trial reruns it)
            fresh = self._new_trial(sample, assignment.budget)
            if fresh is not None:
                self.scheduler.started(fresh.id, assignment)
        if fresh is not None:
            self._submit(fresh, assignment.budget)
        return True

    def _nothing_left(self) -> str:
        """Why the run ends when the scheduler has nothing more to assign."""
        if not self.scheduler.scheduler.decides:  # no trial is ever paused
            return "the strategy has no more archs to propose"
        return "the strategy has no more archs to propose and the scheduler nothing to promote"

    def _count_retired(self) -> None:
        """Count the paused trials the scheduler has pruned (it will never promote them)."""
        for _ in self.scheduler.retired:
            self.book.counts[PAUSED] -= 1
            self.book.counts[PRUNED] += 1
        self.scheduler.retired.clear()

    def _restart(self, trial: Trial) -> Trial:
        _log.info("re-running interrupted trial %d", trial.id)
        self.scheduler.rerun(trial)  # from its last checkpoint, if it has one
        self.book.set_status(trial, RUNNING)
        trial.start_time, trial.error = time.time(), None
        self.store.update(trial)
        return trial

    def _new_trial(self, sample: Any, budget: Any) -> Trial | None:
        """A trial of ``sample`` trained towards ``budget``, stored as running; None when it was
        rejected or failed."""
        arch, hparams = self.split(self._validate(sample))
        if self._next_id is None:
            self._next_id = self.store.next_id()
        trial = Trial(
            self._next_id, arch, RUNNING, start_time=time.time(), hparams=hparams, budget=budget
        )
        self._next_id += 1
        try:
            reason = self.admit(arch)
        except (
            Exception
        ) as e:  # e.g. the model cannot be built: the trial fails, the search goes on
            self._record_unrun(
                trial, FAILED, failure("FilterError", f"the filter raised {type(e).__name__}: {e}")
            )
            return None
        if reason is not None:
            self._record_unrun(trial, REJECTED, reason)
            return None
        self._rejections_in_a_row = 0
        self.store.add(trial)
        self.book.add(trial)
        return trial

    def _validate(self, sample: Any) -> dict[str, Any]:
        try:
            return self.space.validate(sample)
        except InvalidArchError as e:
            raise InvalidArchError(
                f"strategy {type(self.strategy).__name__} proposed an invalid arch {sample!r}: {e}"
            ) from None

    def _record_unrun(self, trial: Trial, status: TrialStatus, error: str) -> None:
        """Store a trial that never ran (rejected, or its filter failed) and tell the strategy."""
        trial.status, trial.error = status, error
        trial.end_time, trial.duration = trial.start_time, 0.0
        self.store.add(trial)
        self.book.add(trial)
        self.strategy.tell(as_seen(trial))
        if status != REJECTED:
            self.progress.trial_finished(trial)
            return
        self._rejections_in_a_row += 1
        if self._rejections_in_a_row >= self.patience:
            self.stop_reason = (
                f"the filter rejected {self._rejections_in_a_row} archs in a row "
                f"(patience {self.patience}); last: {error}"
            )

    def _submit(self, trial: Trial, budget: Any = None, promoted: bool = False) -> None:
        """Send ``trial`` to the executor, trained up to ``budget`` (None: the evaluator's own),
        from where the scheduler says (a promoted trial's checkpoint)."""
        start = self.scheduler.job_fields(trial.id, budget)
        log_path = self.store.log_path(trial.id)
        job = Job(
            trial.id,
            trial.arch,
            trial.hparams,
            log_path=None if log_path is None else str(log_path),
            seed=None if self.seed is None else self.seed + trial.id,
            weights=self._weights_spec(),
            budget=budget,
            **start,
        )
        self.in_flight.add(trial.id)
        self.executor.submit(job)
        if not promoted:  # the progress display counts trials, not jobs
            self.progress.trial_started()

    def _weights_spec(self) -> WeightsSpec | None:
        return None if self.keeper is None else self.keeper.job_spec()

    def _collect(self, result: TrialResult) -> Trial:
        """Store a finished trial's result, then keep its weights and tell the strategy."""
        trial = self.book.unfinished[result.id]
        if result.log:  # remote workers send their log back
            with open(self.store.log_path(trial.id), "a") as f:
                f.write(result.log)
        self.book.set_status(trial, result.status)
        self.scheduler.whole_curve(result)  # a continued trial's row keeps its whole curve,
        self.scheduler.explain(result)  # and a pruned one why (a broken constraint)
        result.apply_to(trial)
        with self.store.atomic():  # the row and the scheduler's bookkeeping of the job's end
            self.store.update(trial)
            before = self.scheduler.reached
            first = self.scheduler.finished(trial)
            reached = self.scheduler.reached - before
            self._count_retired()
        # Finished only once stored: a stop before this line stores it as interrupted instead.
        del self.book.unfinished[trial.id]
        self.in_flight.discard(trial.id)
        if self.keeper is not None:  # after the row: pruning never outruns the stored result
            self.keeper.finished(trial, result)
        if self.on_finished is not None:
            self.on_finished(trial)
        if trial.status == FAILED:
            _log.warning("trial %d failed: %s", trial.id, (trial.error or "").splitlines()[0])
        self.progress.budget_reached(reached)
        if not first:
            # a promoted trial reached a higher budget: the strategy hears its newer result
            # (the display heard of the trial already)
            seen, update = as_seen(trial), getattr(self.strategy, "update", None)
            if update is not None and seen.succeeded:  # a failed promotion: the old one stands
                update(seen)
            return trial
        self.strategy.tell(as_seen(trial))
        self.progress.trial_finished(trial)
        return trial
