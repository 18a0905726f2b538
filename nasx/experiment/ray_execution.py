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

from nasx.trial import FAILED

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
    """

    def __init__(self, builder: Any, evaluator: Any, capacity: int, address: str | None = None,
                 resources: dict[str, float] | None = None):
        try:
            import ray
        except ImportError:
            raise ImportError(
                "execution='ray' needs Ray: pip install 'nasx[ray]' (or pip install 'ray>=2.9')"
            ) from None
        self._ray = ray
        self._started_ray = False
        if not ray.is_initialized():
            # Local workers import what this process imports (the script's folder, PYTHONPATH...).
            env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}}
            ray.init(address=address, runtime_env=env, include_dashboard=False, log_to_driver=False)
            self._started_ray = True
        self.capacity = capacity
        options = {"num_cpus": 1, **(resources or {}), "max_retries": 0}
        self._task = ray.remote(_run_remote).options(**options)
        self._builder = ray.put(builder)
        self._evaluator = ray.put(evaluator)
        self._pending: dict[Any, dict[str, Any]] = {}  # object ref -> job

    @property
    def busy(self) -> int:
        return len(self._pending)

    def submit(self, job: dict[str, Any]) -> None:
        # Remote machines cannot reach our log file: the log comes back in the result instead.
        remote_job = {k: v for k, v in job.items() if k != "log_path"}
        ref = self._task.remote(self._builder, self._evaluator, remote_job)
        self._pending[ref] = job

    def wait(self, timeout: float | None = None) -> list[dict[str, Any]]:
        if not self._pending:
            return []
        ready, rest = self._ray.wait(list(self._pending), num_returns=1, timeout=timeout)
        if ready and rest:  # collect whatever else is done, without waiting
            more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        results = []
        for ref in ready:
            job = self._pending.pop(ref)
            try:
                results.append(self._ray.get(ref))
            except Exception as e:  # the task's process died, or Ray lost it
                results.append({
                    "id": job["id"], "status": FAILED, "metric": None, "metrics": {}, "intermediates": [],
                    "start_time": None, "end_time": time.time(), "duration": None,
                    "error": f"WorkerDied: Ray could not run trial {job['id']}: {type(e).__name__}: {e}",
                })
        return results

    def shutdown(self) -> None:
        for ref in self._pending:
            self._ray.cancel(ref, force=True)
        self._pending.clear()
        if self._started_ray:
            self._ray.shutdown()
