"""Worker process of the local process pool: ``python -m nasx.experiment.execution.worker FD PARENT_PID``.

Receives one setup message (cloudpickled builder, evaluator, thread count) on the socket ``FD``,
then its options (``{'decides': bool}``), then runs jobs one at a time
(:class:`~nasx.experiment.execution.jobs.Job`): with a trial timeout (setup's ``announce_start``) it says
:class:`~nasx.experiment.execution.jobs.TrialStarted` as a job begins (timeouts count from there, not from
a worker start-up that can take seconds); with a multi-fidelity scheduler (``decides``) each
``report(value)`` of the trial sends a :class:`~nasx.experiment.execution.jobs.Report` and waits for the
scheduler's answer, so a pruned trial stops at that report; it sends each result back. While
a trial runs, the process's stdout and stderr (file descriptors 1 and 2, so C-level output too)
go to the trial's log file.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any


def _exit_when_orphaned(parent: int) -> None:
    """If the experiment process dies (even by SIGKILL), stop too instead of training on unseen."""
    while True:
        if os.getppid() != parent:
            os._exit(1)
        time.sleep(1.0)


def _asking(conn: Connection) -> Callable[[int, Any, float], str]:
    """A trial's ``decide``: ask the experiment's scheduler over ``conn`` and wait for its
    answer (the experiment answers while it waits for results)."""
    from nasx.experiment.execution.jobs import DecisionError, Report

    def decide(trial: int, budget: Any, value: float) -> str:
        conn.send(Report(trial, budget, value))
        try:
            answer = conn.recv()
        except EOFError:  # the experiment closed the pool while this trial ran: stop here
            raise SystemExit(0) from None
        if isinstance(answer, DecisionError):  # the scheduler raised: the trial fails with it
            raise answer
        return str(answer)

    return decide


def _run(conn: Connection, parent: int) -> None:
    # The parent's pid comes from the command line: if it died before we got here, getppid()
    # would already name the adopting process.
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    import cloudpickle

    from nasx.experiment.execution.jobs import TrialStarted, WorkerSetupFailed

    try:
        setup = cloudpickle.loads(conn.recv_bytes())
        import torch

        torch.set_num_threads(setup["threads"])
        from nasx.experiment.execution.runner import run_trial
    except Exception:
        conn.send(WorkerSetupFailed(traceback.format_exc()))
        return
    builder, evaluator = setup["builder"], setup["evaluator"]
    announce_start = setup.get("announce_start", True)
    decide = _asking(conn) if conn.recv().get("decides") else None
    saved = os.dup(1), os.dup(2)
    while True:
        try:
            job = conn.recv()
        except EOFError:  # the experiment closed the pool
            return
        log_path = job.log_path
        if log_path:
            sys.stdout.flush()
            sys.stderr.flush()
            fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
        if announce_start:
            conn.send(TrialStarted(job.id))  # the trial's own work (and its timeout) begin now
        try:
            result = run_trial(builder, evaluator, job, decide)
        finally:
            if log_path:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
        conn.send(result)


if __name__ == "__main__":
    _run(Connection(int(sys.argv[1])), int(sys.argv[2]))
