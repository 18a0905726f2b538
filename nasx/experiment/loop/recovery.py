"""What a resumed run does with the trials the last run left unfinished (killed, interrupted).

Each such trial is re-run, unless ``rerun_interrupted=False`` (it is then stored as failed,
``Interrupted``) or it has crashed the experiment's own process ``max_trial_crashes`` times
(stored as failed, ``Crashed``), so a trial that segfaults cannot keep the experiment from ever
finishing. A crash is counted only for a death while the trial was evaluating in the process (its
``evaluating`` mark, :func:`~nasx.experiment.execution.local.evaluating_mark`, was left behind): a kill
between trials, before a trial restarted or after its result came back costs it nothing. (A
mark is a hard link to the workdir's ``nasx.evaluating``, :func:`~nasx.experiment.execution.runner.put_mark`:
only its name matters here.)
"""

from __future__ import annotations

import logging
import time
from typing import Any

from nasx.experiment.execution.local import evaluating_mark
from nasx.trial import FAILED, RUNNING, WAITING, Trial, failure

_log = logging.getLogger("nasx.experiment")

__all__ = ["trials_to_rerun"]


def trials_to_rerun(
    store: Any,
    stored: list[Trial],
    execution: str,
    max_trial_crashes: int | None,
    rerun_interrupted: bool,
) -> list[Trial]:
    """The unfinished trials of ``stored`` to run again; the others are stored as failed.

    ``store``: the :class:`~nasx.experiment.storage.store.TrialStore` (its meta keeps the crash
    counts and how the last run executed its trials); ``execution``: how this run executes them.
    """
    interrupted = [t for t in stored if t.status in (WAITING, RUNNING)]
    interrupted = _count_crashes(store, interrupted, execution, max_trial_crashes)
    if interrupted and not rerun_interrupted:
        for t in interrupted:
            t.status, t.end_time = FAILED, time.time()
            t.error = failure(
                "Interrupted",
                "the experiment stopped while this trial ran (rerun_interrupted=False)",
            )
            store.update(t)
        return []
    return interrupted


def _count_crashes(
    store: Any, interrupted: list[Trial], execution: str, limit: int | None
) -> list[Trial]:
    """Count one crash for each trial the last process left running; store those that reached
    ``limit`` as failed. The rest, to re-run (or mark interrupted)."""
    meta = store.meta()
    # Trials of a process pool ran in workers: their crash killed a worker, not the process.
    in_process = meta.get("execution", "sequential") == "sequential"
    store.set_meta("execution", execution)
    if not interrupted:
        return interrupted
    crashes = {int(k): v for k, v in meta.get("crashes", {}).items()}
    marks = [evaluating_mark(store.log_path(t.id)) for t in interrupted]
    died_evaluating = [t for t, mark in zip(interrupted, marks, strict=True) if mark.exists()]
    # The marks go before the counts are written: a kill in between loses a count (the trial
    # then gets one more try) instead of counting one death twice.
    for mark in marks:
        mark.unlink(missing_ok=True)
    for t in died_evaluating:
        if in_process and t.status == RUNNING:  # a WAITING trial never started
            crashes[t.id] = crashes.get(t.id, 0) + 1
    if died_evaluating and in_process:
        store.set_meta("crashes", {str(k): v for k, v in sorted(crashes.items())})
    rerun = []
    for t in interrupted:
        n = crashes.get(t.id, 0)
        if limit is None or n < limit:
            rerun.append(t)
            continue
        t.status, t.end_time = FAILED, time.time()
        t.error = failure(
            "Crashed",
            f"crashed the process: the experiment's process died {n} time(s) while this "
            f"trial ran (max_trial_crashes={limit}); run trials in a child process with "
            "execution='process' to keep such a crash from stopping the experiment",
        )
        store.update(t)
        _log.warning("trial %d crashed the process %d time(s): marked failed", t.id, n)
    return rerun
