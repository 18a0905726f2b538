"""An executor for tests that runs several jobs at once yet decides in an order fixed by the
events, never by timing, so a run with two jobs in flight can be compared exactly with another.

:class:`LockstepExecutor` runs each job in a thread of this process (as the process pool runs it
in a worker) and answers its reports from :meth:`~LockstepExecutor.wait`, in the experiment's
thread (as the pool answers them). It answers only once every job in flight is waiting at a
report or has ended: ended jobs come back first (by trial id); else the report at the lowest
budget reached is answered (then the lowest trial id). A job that reaches a report whose answer
the store already holds (a job re-run after a kill) gets it without the scheduler, yet the
reports the scheduler hears come in the same order: the lowest (budget, trial) first. So a
killed and resumed run makes the uninterrupted run's decisions exactly when, and only when,
the resumed run answers each re-run report as it was answered before the kill.

``NasExperiment`` builds its executor with ``make_executor``; :func:`lockstep` puts this one in
its place (a test's ``monkeypatch``, or ``unittest.mock.patch`` in a child process).

    >>> from nasx.experiment.execution.jobs import Job
    >>> from nasx.experiment.execution.runner import no_model
    >>> def fn(model, budget, report):
    ...     for epoch in range(budget): report(epoch)
    ...     return budget
    >>> heard = []
    >>> ex = LockstepExecutor(no_model, fn, capacity=2)
    >>> ex.decide = lambda trial, budget, value: heard.append((trial, budget)) or 'continue'
    >>> ex.submit(Job(1, {}, budget=2)); ex.submit(Job(0, {}, budget=3))
    >>> results = []
    >>> while len(results) < 2: results += ex.wait()
    >>> heard
    [(0, 1), (1, 1), (0, 2), (1, 2), (0, 3)]
    >>> [r.id for r in results]
    [1, 0]
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from nasx.experiment.execution.jobs import Job, TrialResult
from nasx.experiment.execution.runner import run_trial

__all__ = ["LockstepExecutor", "lockstep"]


@dataclass
class _Slot:
    """One job in flight: the report it waits at, the answer it gets, its result once ended."""

    job: Job
    question: tuple[Any, Any] | None = None  # (budget reached, value) it waits on
    answer: Any = None  # a decision, or the exception deciding raised
    result: TrialResult | None = None


class LockstepExecutor:
    """Runs up to ``capacity`` jobs at once, each in a thread, and answers their reports in the
    order of (budget reached, trial id) once all of them wait (see the module docstring)."""

    def __init__(self, builder: Any, evaluator: Any, capacity: int) -> None:
        self.builder, self.evaluator, self.capacity = builder, evaluator, capacity
        #: the scheduler's answer to a report, set by the trial loop
        self.decide: Any = None
        self._slots: dict[int, _Slot] = {}
        self._changed = threading.Condition()

    def submit(self, job: Job) -> None:
        if len(self._slots) >= self.capacity:
            raise RuntimeError(f"all {self.capacity} threads are busy; wait() for a result first")
        slot = _Slot(job)
        self._slots[job.id] = slot
        threading.Thread(target=self._run, args=(slot,), daemon=True).start()

    def _run(self, slot: _Slot) -> None:
        def ask(trial: int, budget: Any, value: Any) -> Any:
            with self._changed:
                slot.question = (budget, value)
                self._changed.notify_all()
                self._changed.wait_for(lambda: slot.answer is not None)
                answer, slot.answer = slot.answer, None
            if isinstance(answer, BaseException):
                raise answer
            return answer

        result = run_trial(self.builder, self.evaluator, slot.job, ask if self.decide else None)
        with self._changed:
            slot.result = result
            self._changed.notify_all()

    def wait(self, timeout: float | None = None) -> list[TrialResult]:
        """The jobs that ended, or (none ended) [] after answering one report."""
        with self._changed:
            slots = self._slots.values()
            self._changed.wait_for(
                lambda: all(s.question is not None or s.result is not None for s in slots)
            )
            ended = [t for t in sorted(self._slots) if self._slots[t].result is not None]
            if ended:
                return [self._slots.pop(t).result for t in ended]
            if not self._slots:
                return []
            asking = [(s.question[0], s.job.id, s) for s in slots if s.question is not None]
            _, _, slot = min(asking, key=lambda a: a[:2])
            (budget, value), slot.question = slot.question, None
        try:  # in this thread, as the pool answers in the experiment's process
            answer = self.decide(slot.job.id, budget, value)
        except Exception as e:  # noqa: BLE001 - raised in the trial's thread: its trial fails
            answer = e
        with self._changed:
            slot.answer = answer
            self._changed.notify_all()
        return []

    def shutdown(self) -> None:
        self._slots.clear()  # (daemon threads: a job left waiting ends with the process)


def lockstep(exp: Any, builder: Any, store: Any) -> LockstepExecutor:
    """A ``make_executor`` that gives ``exp`` (a NasExperiment) a :class:`LockstepExecutor`
    with its ``max_concurrent_trials``."""
    return LockstepExecutor(builder, exp.evaluator, exp.max_concurrent_trials)
