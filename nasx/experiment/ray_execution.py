"""Run trials as Ray tasks, on a local Ray instance or a multi-machine cluster (``pip install nasx[ray]``).

Each trial is one task (``max_retries=0``: a failed trial is recorded, not silently retried). The
model builder and the evaluator are put in Ray's object store once. Workers on other machines
cannot write to the experiment directory, so a trial's log travels back with its result and the
experiment writes it. A task whose worker process dies (segfault, OOM kill, lost node) becomes a
failed trial naming Ray's error.

    >>> RayExecutor.__name__
    'RayExecutor'
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from nasx.trial import failure

from .execution import failed_result
from .runner import run_trial


def _run_remote(builder: Any, evaluator: Any, job: dict[str, Any]) -> dict[str, Any]:
    return run_trial(builder, evaluator, job)


class RayExecutor:
    """Up to ``capacity`` trials at once as Ray tasks.

    Args:
        builder, evaluator: what each trial needs (sent through the object store once).
        capacity: trials in flight (``max_concurrent_trials``).
        address: ``ray.init(address=...)`` (``'auto'`` joins a running cluster); without one, a
            Ray already initialised in this process is used, else a local instance is started.
        resources: of one trial, e.g. ``{'num_cpus': 2, 'num_gpus': 1}`` (default 1 CPU).
        trial_timeout: seconds after which a trial's task is cancelled (forcefully) and the trial failed.
    """

    def __init__(
        self,
        builder: Any,
        evaluator: Any,
        capacity: int,
        address: str | None = None,
        resources: dict[str, float] | None = None,
        trial_timeout: float | None = None,
    ):
        from nasx._optional import optional_import

        ray = optional_import("ray", "ray", "execution='ray'")
        self._ray = ray
        self._started_ray = False
        if not ray.is_initialized():
            # Local workers import what this process imports (the script's folder, PYTHONPATH...).
            env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}}
            ray.init(address=address, runtime_env=env, include_dashboard=False, log_to_driver=False)
            self._started_ray = True
        self.capacity = capacity
        self.trial_timeout = trial_timeout
        options = {"num_cpus": 1, **(resources or {}), "max_retries": 0}
        self._task = ray.remote(_run_remote).options(**options)
        self._builder = ray.put(builder)
        self._evaluator = ray.put(evaluator)
        self._pending: dict[Any, dict[str, Any]] = {}  # object ref -> job
        self._submitted: dict[Any, float] = {}  # object ref -> time.monotonic() at submission

    @property
    def busy(self) -> int:
        return len(self._pending)

    def submit(self, job: dict[str, Any]) -> None:
        # Remote machines cannot reach our log file: the log comes back in the result instead.
        remote_job = {k: v for k, v in job.items() if k != "log_path"}
        ref = self._task.remote(self._builder, self._evaluator, remote_job)
        self._pending[ref] = job
        self._submitted[ref] = time.monotonic()

    def wait(self, timeout: float | None = None) -> list[dict[str, Any]]:
        if not self._pending:
            return []
        if self.trial_timeout is not None:  # wake up in time to cancel the oldest trial
            due = min(self._submitted.values()) + self.trial_timeout - time.monotonic()
            timeout = max(0.0, due if timeout is None else min(timeout, due))
        ready, rest = self._ray.wait(list(self._pending), num_returns=1, timeout=timeout)
        if ready and rest:  # collect whatever else is done, without waiting
            more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        results = []
        for ref in ready:
            job = self._pending.pop(ref)
            del self._submitted[ref]
            try:
                results.append(self._ray.get(ref))
            except Exception as e:  # the task's process died, or Ray lost it
                results.append(
                    failed_result(
                        job,
                        failure(
                            "WorkerDied",
                            f"Ray could not run trial {job['id']}: {type(e).__name__}: {e}",
                        ),
                    )
                )
        if self.trial_timeout is not None:
            now = time.monotonic()
            for ref in [r for r, t in self._submitted.items() if now - t >= self.trial_timeout]:
                self._ray.cancel(ref, force=True)
                job = self._pending.pop(ref)
                del self._submitted[ref]
                results.append(
                    failed_result(
                        job,
                        failure(
                            "TrialTimeout",
                            f"trial {job['id']} ran longer than trial_timeout "
                            f"({self.trial_timeout:g} s); its Ray task was cancelled",
                        ),
                    )
                )
        return results

    def shutdown(self) -> None:
        for ref in self._pending:
            self._ray.cancel(ref, force=True)
        self._pending.clear()
        self._submitted.clear()
        if self._started_ray:
            self._ray.shutdown()
