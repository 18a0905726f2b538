"""A scheduled experiment whose stored answers matter on resume, for the test that SIGKILLs it
(tests/experiment/test_scheduled_kills.py): three jobs in flight at once, decided in lockstep
(tests/experiment/lockstep.py), by a scheduler whose answer at a budget changes as more results
arrive there (median stopping; ASHA pruning at its rungs).

Why that: the answers a job in flight got reach the store only when another job starts or ends
meanwhile (with one job at a time they are never stored, and none are needed). A resumed run
re-runs that job and must give it the answers it got before the kill; by then the scheduler has
heard the other jobs' reports at the same budgets, so asked again it may answer otherwise
(:func:`asked_again` says where it would). With two jobs at once over this table no stored
answer would change (the job in flight that long is a good one, ahead of what arrives later);
the third job makes the window real.

As a script, ``python -m tests.experiment.replay_helpers WORKDIR SCHEDULER KILL_AT JOURNAL``
runs (or resumes) the experiment of ``SCHEDULER`` (a name in :data:`SCHEDULERS`); ``KILL_AT``
> 0 SIGKILLs this process right after its ``KILL_AT``-th write to the store that holds an
answer given to a job still in flight is committed (0: never).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Any
from unittest import mock

from nasx.experiment.loop.scheduled import JOBS_KEY, STATE_KEY
from nasx.experiment.schedulers import ASHA, MedianStopping
from nasx.experiment.storage.store import TrialStore

from .lockstep import lockstep
from .scheduled_helpers import CURVES, stored
from .scheduled_helpers import experiment as _experiment

WORKERS = 3
#: name -> (the scheduler, the seed of the archs' order): each answers a report at a budget by
#: ranking it among the reports there so far; in these orders later results change answers
SCHEDULERS: dict[str, tuple[Any, int]] = {
    "median": (lambda: MedianStopping(1, 9, min_trials=2), 1),
    "asha-stopping": (lambda: ASHA(1, 9, eta=3, mode="stopping"), 2),
    # its rungs rank the mean of each curve so far: the running sums are scheduler state too
    "asha-stopping-mean": (lambda: ASHA(1, 9, eta=3, mode="stopping", rank_by="mean"), 2),
}


def experiment(workdir, journal, scheduler: str, **kwargs):
    """The experiment of ``scheduler`` (a name in :data:`SCHEDULERS`), :data:`WORKERS` jobs at
    once; run it under :func:`with_lockstep`."""
    make, order = SCHEDULERS[scheduler]
    return _experiment(
        workdir, journal, "process", workers=WORKERS, scheduler=make(), order=order, **kwargs
    )


def with_lockstep():
    """``NasExperiment`` runs its trials on a :class:`~.lockstep.LockstepExecutor` meanwhile."""
    return mock.patch("nasx.experiment.experiment.make_executor", lockstep)


def answered(jobs: dict) -> list[tuple[int, int | float, str]]:
    """The answers stored with the jobs in flight (:data:`JOBS_KEY`): (trial, budget, answer)."""
    return [
        (int(trial), budget, answer)
        for trial, (_, _, answers) in sorted(jobs.get("jobs", {}).items())
        for budget, answer in answers
    ]


def asked_again(workdir, scheduler: str) -> list[tuple[int, int | float, str, str]]:
    """The stored answers of the jobs in flight in ``workdir`` that the stored scheduler, asked
    again with the same reports in the same order (as a resume that forgot them would), answers
    otherwise: (trial, budget, stored answer, new answer)."""
    trials, meta = stored(workdir)
    arch = {t.id: t.arch for t in trials}
    fresh = SCHEDULERS[scheduler][0]()
    fresh.load_state_dict(meta[STATE_KEY])
    changed = []
    for trial, budget, answer in answered(meta[JOBS_KEY]):
        value = CURVES.val[CURVES.row(arch[trial])][budget - 1]
        try:
            again = fresh.report(trial, budget, value)
        except ValueError as e:  # it stopped the trial at an earlier report this time
            again = f"refused: {e}"
        if again != answer:
            changed.append((trial, budget, answer, again))
    return changed


def _kill_after_answered_write(n: int) -> None:
    """SIGKILL this process right after its ``n``-th write of :data:`JOBS_KEY` that holds an
    answer given to a job still in flight is committed (the write may be part of a larger
    transaction: the trial's row with it)."""
    count, depth, armed = [0], [0], [False]
    write, atomic = TrialStore.set_meta_all, TrialStore.atomic

    def set_meta_all(self, meta):
        if answered(meta.get(JOBS_KEY, {})):
            count[0] += 1
            armed[0] = count[0] == n
        write(self, meta)

    @contextlib.contextmanager
    def atomic_then_kill(self):
        depth[0] += 1
        try:
            with atomic(self):
                yield
        finally:
            depth[0] -= 1
        if depth[0] == 0 and armed[0]:  # committed
            os.kill(os.getpid(), signal.SIGKILL)

    setattr(TrialStore, "set_meta_all", set_meta_all)  # noqa: B010 - a test's patch
    setattr(TrialStore, "atomic", atomic_then_kill)  # noqa: B010


if __name__ == "__main__":
    workdir, scheduler, kill_at, journal = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if kill_at > 0:
        _kill_after_answered_write(kill_at)
    print("ready", flush=True)
    with with_lockstep():
        experiment(workdir, journal, scheduler, resume=True).run()
    print("done", flush=True)
