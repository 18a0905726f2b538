"""Where trials run: in the main process one at a time, or on a pool of local worker processes.

An executor has ``capacity`` (trials it runs at once), ``submit(job)``, ``wait(timeout) ->
[result, ...]`` (the results that finished) and ``shutdown()``. Jobs and results are the
dataclasses of :mod:`nasx.experiment.execution.jobs` (:class:`Job`, :class:`TrialResult`). The Ray
executor lives in ``ray_execution.py``.

The process pool starts its workers with ``python -m nasx.experiment.execution.worker`` rather than
``multiprocessing``: the user's script is never re-imported in the workers (no
``if __name__ == '__main__'`` guard needed), and the space's class and the evaluator are sent
once per worker with cloudpickle (by value when they live in ``__main__``). A worker that dies,
even by a segfault or ``SIGKILL``, fails only the trial it was running and is replaced.

With a multi-fidelity scheduler (``executor.decide``, set by the trial loop) each
``report(value)`` of a trial is a question to the experiment: in the sequential executor the
trial calls ``decide`` itself; a pool worker sends a :class:`~nasx.experiment.execution.jobs.Report` and
waits, and :meth:`ProcessPoolExecutor.wait` answers it with ``decide`` as it arrives, so the
trial stops at the report that prunes or pauses it, and the other workers never wait for it.

    >>> import torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace
    >>> from nasx.experiment.execution.runner import ModelBuilder
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label='act')
    >>> ex = SequentialExecutor(ModelBuilder.from_space(Net()), lambda model: 1.0)
    >>> ex.submit(Job(id=0, arch={'act': 0}))
    >>> [r.metric for r in ex.wait()]
    [1.0]
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from nasx.experiment.execution.jobs import (
    DecisionError,
    Job,
    Report,
    TrialResult,
    TrialStarted,
    WorkerSetupFailed,
)
from nasx.experiment.execution.runner import run_trial
from nasx.experiment.settings import RunSettings
from nasx.trial import failure

# Beside a trial's log while it evaluates in the experiment's own process: a death of the process
# counts as the trial's crash only when this file is there (not a kill between trials, before
# its restart or after its result). SIGKILL cannot remove it; the trial's normal end does.
EVALUATING_MARK = "evaluating"


def evaluating_mark(log_path: str | os.PathLike[str]) -> Path:
    """The file that says the trial whose log is ``log_path`` is evaluating in-process."""
    return Path(log_path).with_name(EVALUATING_MARK)


class SequentialExecutor:
    """Runs each trial in the calling process when :meth:`wait` is called (the default).

    While a trial's model is built and evaluated, its folder holds an ``evaluating`` mark
    (:func:`evaluating_mark`): if the process dies then (a segfault, the OOM killer), the resumed
    run counts a crash of that trial; a death at any other moment counts none.
    """

    capacity = 1

    def __init__(self, builder: Any, evaluator: Any):
        self.builder = builder
        self.evaluator = evaluator
        self._queue: list[Job] = []
        #: a multi-fidelity scheduler's answer to each report (:func:`run_trial`'s ``decide``),
        #: set by the trial loop; in this process, so the decision comes while the trial runs
        self.decide: Any = None

    @property
    def busy(self) -> int:
        return len(self._queue)

    def submit(self, job: Job) -> None:
        self._queue.append(job)

    def wait(self, timeout: float | None = None) -> list[TrialResult]:
        if not self._queue:
            return []
        job = self._queue.pop(0)
        if job.log_path is not None:  # the trial runs in this process: its crash is ours
            mark = os.path.join(os.path.dirname(job.log_path), EVALUATING_MARK)
            job = dataclasses.replace(job, evaluating_mark=mark)
        return [run_trial(self.builder, self.evaluator, job, self.decide)]

    def shutdown(self) -> None:
        self._queue.clear()


class _Worker:
    """One worker process and the socket to it."""

    def __init__(self, setup: bytes, log_path: Path, env: dict[str, str], decides: bool = False):
        parent, child = socket.socketpair()
        self.log = open(log_path, "ab")  # noqa: SIM115 - the worker's own stdout/stderr
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nasx.experiment.execution.worker",
                str(child.fileno()),
                str(os.getpid()),
            ],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # Ctrl-C in the terminal reaches the experiment only
        )
        child.close()
        self.conn = Connection(os.dup(parent.fileno()))
        parent.close()
        self.conn.send_bytes(setup)
        self.conn.send({"decides": decides})  # a scheduler answers the trials' reports
        self.job: Job | None = None  # the trial it runs; None while idle
        self.started: float | None = None  # monotonic time the trial's own work began

    def exit_description(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        if code < 0:
            try:
                return f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with code {code}"

    def stop(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


class ProcessPoolExecutor:
    """Runs trials on ``capacity`` local worker processes (started lazily, replaced when they die).

    Args:
        builder, evaluator: what every trial needs; sent once to each worker.
        capacity: number of worker processes (``max_concurrent_trials``).
        log_dir: where each worker writes its own output (``worker-<n>.log``).
        threads_per_worker: torch CPU threads per worker; default ``cpu_count // capacity``.
        trial_timeout: seconds after the trial's own work began (not counting a worker's start-up)
            after which its worker is killed and the trial failed.
    """

    def __init__(
        self,
        builder: Any,
        evaluator: Any,
        capacity: int,
        log_dir: str | os.PathLike[str],
        threads_per_worker: int | None = None,
        trial_timeout: float | None = None,
    ):
        import cloudpickle

        from nasx._platform import require_posix

        # Workers get their socket by fd inheritance (pass_fds) and are killed when stuck.
        require_posix(
            "running trials in local worker processes (execution='process', used for "
            "max_concurrent_trials > 1 and for trial_timeout, which kills a stuck worker)",
            instead="use execution='ray', or run trials in this process (max_concurrent_trials=1 "
            "and no trial_timeout)",
        )
        if capacity < 1:
            raise ValueError(f"a process pool needs at least 1 worker, got {capacity}")
        self.capacity = capacity
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        threads = threads_per_worker or max(1, (os.cpu_count() or 1) // capacity)
        # A worker says when a trial's own work began only where a timeout counts from then:
        # the message cost the experiment's process one more wake-up per trial.
        self._setup = cloudpickle.dumps(
            {
                "builder": builder,
                "evaluator": evaluator,
                "threads": threads,
                "announce_start": trial_timeout is not None,
            }
        )
        # Workers import what the main process can import (the script's folder, PYTHONPATH, ...).
        self._env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.trial_timeout = trial_timeout
        self._idle: list[_Worker] = []
        self._busy: list[_Worker] = []
        self._started = 0
        #: a multi-fidelity scheduler's answer to each report (:func:`run_trial`'s ``decide``),
        #: set by the trial loop before the first job; workers send each report here and wait
        self.decide: Any = None

    @property
    def busy(self) -> int:
        return len(self._busy)

    def submit(self, job: Job) -> None:
        if len(self._busy) >= self.capacity:
            raise RuntimeError(f"all {self.capacity} workers are busy; wait() for a result first")
        worker = self._idle.pop() if self._idle else self._start_worker()
        worker.job = job
        worker.started = None  # set when the worker says the trial's own work began
        try:
            worker.conn.send(job)
        except OSError:
            pass  # the worker already died; wait() reports the trial as failed
        self._busy.append(worker)

    def _start_worker(self) -> _Worker:
        self._started += 1
        log = self.log_dir / f"worker-{self._started}.log"
        return _Worker(self._setup, log, self._env, decides=self.decide is not None)

    def wait(self, timeout: float | None = None) -> list[TrialResult]:
        if not self._busy:
            return []
        started = [w.started for w in self._busy if w.started is not None]
        if self.trial_timeout is not None and started:  # wake up in time to stop the oldest
            due = min(started) + self.trial_timeout - time.monotonic()
            timeout = max(0.0, due if timeout is None else min(timeout, due))
        ready = wait([w.conn for w in self._busy], timeout)
        results = self._overdue(ready)
        for worker in [w for w in self._busy if w.conn in ready]:
            try:
                message = worker.conn.recv()
            except (EOFError, OSError):
                self._busy.remove(worker)
                results.append(self._died(worker))
                continue
            if isinstance(message, TrialStarted):
                worker.started = time.monotonic()
                continue
            if isinstance(message, Report):
                self._answer(worker, message)
                continue
            self._busy.remove(worker)
            if isinstance(message, WorkerSetupFailed):
                worker.stop()
                self.shutdown()
                raise RuntimeError(
                    "a worker process could not load the space or the evaluator (they must be "
                    f"picklable with cloudpickle):\n{message.traceback}"
                )
            worker.job = None
            self._idle.append(worker)
            results.append(message)
        return results

    def _answer(self, worker: _Worker, report: Report) -> None:
        """Send the scheduler's decision on ``report`` to the worker waiting for it."""
        try:  # the scheduler's error fails the trial, as it does in the sequential executor
            answer = self.decide(report.id, report.budget, report.value)
        except Exception as e:  # noqa: BLE001 - sent to the trial, which raises it
            answer = DecisionError(f"{type(e).__name__}: {e}")
        try:
            worker.conn.send(answer)
        except OSError:
            pass  # the worker died meanwhile; the next wait() reports its trial as failed

    def _overdue(self, ready: list[Any]) -> list[TrialResult]:
        """Kill the workers whose trial ran past ``trial_timeout``; their trials fail."""
        if self.trial_timeout is None:
            return []
        now = time.monotonic()
        results = []
        for worker in [
            w
            for w in self._busy
            if w.conn not in ready
            and w.started is not None
            and now - w.started >= self.trial_timeout
        ]:
            self._busy.remove(worker)
            worker.stop()
            job = worker.job
            assert job is not None, "a busy worker always holds its job"
            results.append(
                TrialResult.failed(
                    job,
                    failure(
                        "TrialTimeout",
                        f"trial {job.id} ran longer than "
                        f"trial_timeout ({self.trial_timeout:g} s); its worker was stopped",
                    ),
                )
            )
        return results

    def _died(self, worker: _Worker) -> TrialResult:
        how = worker.exit_description()
        worker.stop()
        job = worker.job
        assert job is not None, "a busy worker always holds its job"
        return TrialResult.failed(
            job,
            failure(
                "WorkerDied",
                f"the worker process running trial {job.id} {how} (output in {worker.log.name})",
            ),
        )

    def shutdown(self) -> None:
        for worker in self._idle + self._busy:
            worker.stop()
        self._idle.clear()
        self._busy.clear()


def make_executor(settings: RunSettings, builder: Any, store: Any) -> Any:
    """The executor of a run with ``settings`` (its RunSettings): its ``execution``, its
    ``max_concurrent_trials``, workers' files under the store's ``workers/``."""
    if settings.execution == "sequential":
        if settings.max_concurrent_trials > 1:
            raise ValueError(
                "execution='sequential' runs one trial at a time; set max_concurrent_trials=1"
            )
        return SequentialExecutor(builder, settings.evaluator)
    if settings.execution == "process":
        return ProcessPoolExecutor(
            builder,
            settings.evaluator,
            settings.max_concurrent_trials,
            store.directory / "workers",
            trial_timeout=settings.trial_timeout,
        )
    from nasx.experiment.execution.ray import RayExecutor

    return RayExecutor(
        builder,
        settings.evaluator,
        settings.max_concurrent_trials,
        address=settings.ray_address,
        resources=settings.trial_resources,
        trial_timeout=settings.trial_timeout,
    )
