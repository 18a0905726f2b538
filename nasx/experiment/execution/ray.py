"""Run trials as Ray tasks, on a local Ray instance or a multi-machine cluster (``pip install nasx[ray]``).

Each trial is one task (``max_retries=0``: a failed trial is recorded, not silently retried). The
model builder and the evaluator are put in Ray's object store once. Workers on other machines
cannot write to the experiment directory, so a trial's log (and, with ``keep_weights``, its
trained weights) travels back with its result and the experiment writes it.

Failures follow the rules of the local process pool: a trial whose worker is lost (its process
crashed or was killed, its node died or was preempted, Ray's memory monitor killed it, Ray lost
its result) is recorded as failed with one ``WorkerDied`` error saying which
(:func:`ray_failure`), and the experiment goes on with the other trials. Trials in flight when
the experiment's own process dies are re-run when it is resumed, as with the process pool.

With a multi-fidelity scheduler (``executor.decide``, set by the trial loop) each
``report(value)`` of a trial asks the experiment through a small async actor on the
experiment's node (:class:`DecisionBox`) and waits for the answer; :meth:`RayExecutor.wait`
wakes on a question as it wakes on a result and answers it with ``decide``, so a pruned trial
stops at that report, as in the process pool.

Each trial asks Ray for ``resources`` (``{'num_cpus': 1}`` by default; ``{'num_gpus': 1}`` gives
a trial one GPU of its own, which Ray exposes through ``CUDA_VISIBLE_DEVICES``), so Ray places at
most as many trials on a node as its resources allow, and ``capacity`` caps the trials in flight.

    >>> check_resources({'num_cpus': 2, 'num_gpus': 1})
    {'num_cpus': 2, 'num_gpus': 1}
    >>> check_resources({'gpus': 1})
    Traceback (most recent call last):
    ...
    ValueError: trial_resources has an unknown key 'gpus'; allowed: num_cpus, num_gpus, ...
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nasx.experiment.execution.jobs import DecisionError, Job, TrialResult
from nasx.experiment.execution.runner import run_trial
from nasx.trial import failure

_log = logging.getLogger("nasx.experiment")

# How often `wait` looks for trials that began, while some have not (seconds).
CLOCK_POLL_S = 0.5

# Ray's task options that say what one trial needs (``ray.remote(...).options(**...)``).
RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory", "resources", "accelerator_type")


def _run_remote(
    builder: Any,
    evaluator: Any,
    job: Job,
    started: Any = None,
    box: Any = None,
    resume: bytes | None = None,
) -> TrialResult:
    if started is not None:  # trial_timeout counts from here: not the queueing, nor a cold start
        try:
            started.put_nowait(job.id)
        except Exception:  # noqa: BLE001 - the clock's actor is gone: submission time stands
            pass
    decide = None if box is None else asking(box)
    if job.checkpoint is None:
        return run_trial(builder, evaluator, job, decide)
    return run_with_local_checkpoint(builder, evaluator, job, decide, resume)


def run_with_local_checkpoint(
    builder: Any, evaluator: Any, job: Job, decide: Any, resume: bytes | None
) -> TrialResult:
    """Run ``job`` with a checkpoint folder of its own on this machine (the trial's folder in
    the workdir may be on another machine): the state at ``job.from_budget`` (``resume``, that
    file's bytes, read by the experiment) is put there first, and the state the evaluator
    saves at ``job.budget`` comes back as ``result.checkpoint_payload``, for the experiment to
    write into the trial's folder (:func:`_store_checkpoint`).

        >>> import io, torch
        >>> from nasx.evaluator.checkpoint import Checkpoint
        >>> from nasx.experiment.execution.runner import no_model
        >>> def train(model, budget, checkpoint):
        ...     state = checkpoint.load() or {'epoch': 0}
        ...     checkpoint.save({'epoch': budget, 'was': state['epoch']})
        ...     return float(budget)
        >>> job = Job(0, {}, budget=3, from_budget=1, checkpoint=Checkpoint('', 1, 3))
        >>> at_1 = io.BytesIO(); torch.save({'epoch': 1}, at_1)  # the file at budget 1
        >>> result = run_with_local_checkpoint(no_model, train, job, None, at_1.getvalue())
        >>> result.status, torch.load(io.BytesIO(result.checkpoint_payload))
        ('succeeded', {'epoch': 3, 'was': 1})
    """
    assert job.checkpoint is not None
    with tempfile.TemporaryDirectory(prefix=f"nasx-trial-{job.id}-") as folder:
        checkpoint = dataclasses.replace(job.checkpoint, directory=folder)
        if resume is not None and checkpoint.resume_path is not None:
            Path(checkpoint.resume_path).write_bytes(resume)
        local = dataclasses.replace(job, checkpoint=checkpoint)
        result = run_trial(builder, evaluator, local, decide)
        saved = checkpoint.save_path
        if saved is not None and os.path.exists(saved):
            result.checkpoint_payload = Path(saved).read_bytes()
        return result


def _resume_bytes(job: Job) -> bytes | None:
    """The checkpoint file a job continues from, read here to travel with it (None: a fresh
    start, or no file there: the worker then fails the trial as a local run would)."""
    path = None if job.checkpoint is None else job.checkpoint.resume_path
    if path is None or not os.path.exists(path):
        return None
    return Path(path).read_bytes()


def _store_checkpoint(job: Job, result: TrialResult) -> None:
    """Write the state a remote trial saved into its checkpoint folder here (atomically, as
    :meth:`~nasx.evaluator.checkpoint.Checkpoint.write` does), then drop it from ``result``."""
    payload, result.checkpoint_payload = result.checkpoint_payload, None
    if payload is None or job.checkpoint is None:
        return

    def write(path: str) -> None:
        Path(path).write_bytes(payload)

    job.checkpoint.write(write)


def asking(box: Any) -> Callable[[int, Any, float], str]:
    """A Ray task's ``decide``: ask the experiment through ``box`` (a :class:`DecisionBox`
    actor) and wait for its answer."""
    from nasx._optional import optional_import

    ray = optional_import("ray", "ray", "execution='ray'")

    def decide(trial: int, budget: Any, value: float) -> str:
        answer = ray.get(box.ask.remote(trial, budget, value))
        if isinstance(answer, DecisionError):  # the scheduler raised: the trial fails with it
            raise answer
        return str(answer)

    return decide


class DecisionBox:
    """Where the reports of Ray tasks wait for the experiment's answers (run as an async Ray
    actor, one per executor): a task's :meth:`ask` returns once the experiment has called
    :meth:`answer` for its trial; the experiment collects the questions with :meth:`questions`,
    which returns as soon as there is one (so its ``ray.wait`` wakes on a question).

        >>> import asyncio
        >>> async def one_round():
        ...     box = DecisionBox()
        ...     task = asyncio.ensure_future(box.ask(3, 1, 0.5))  # a trial's report
        ...     asked = await box.questions()
        ...     await box.answer(3, 'prune')
        ...     return asked, await task
        >>> asyncio.run(one_round())
        ([(3, 1, 0.5)], 'prune')
    """

    def __init__(self) -> None:
        self._asked: list[tuple[int, Any, float]] = []
        self._waiting: dict[int, asyncio.Future[Any]] = {}  # trial -> its answer, to come
        self._any = asyncio.Event()

    async def ask(self, trial: int, budget: Any, value: float) -> Any:
        """Trial ``trial`` reached ``budget`` with ``value``: the experiment's answer."""
        answer = asyncio.get_running_loop().create_future()
        self._waiting[trial] = answer
        self._asked.append((trial, budget, value))
        self._any.set()
        return await answer

    async def questions(self) -> list[tuple[int, Any, float]]:
        """The questions asked since the last call, once there is at least one."""
        await self._any.wait()
        asked, self._asked = self._asked, []
        self._any.clear()
        return asked

    async def answer(self, trial: int, decision: Any) -> None:
        """Answer ``trial``'s question (ignored when its task is gone: cancelled, timed out)."""
        waiting = self._waiting.pop(trial, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(decision)


def check_resources(resources: dict[str, Any] | None) -> dict[str, Any]:
    """The resources of one trial (``trial_resources``), checked: Ray's task options only,
    non-negative amounts. Default ``{'num_cpus': 1}``."""
    if resources is None:
        return {"num_cpus": 1}
    if not isinstance(resources, dict):
        raise TypeError(
            f"trial_resources must be a dict such as {{'num_cpus': 2, 'num_gpus': 1}}, "
            f"got {type(resources).__name__}"
        )
    for key, value in resources.items():
        if key not in RESOURCE_KEYS:
            raise ValueError(
                f"trial_resources has an unknown key {key!r}; allowed: {', '.join(RESOURCE_KEYS)} "
                "(Ray's task options)"
            )
        amounts = value.items() if key == "resources" else [(key, value)]
        if key == "accelerator_type":
            continue
        for name, amount in amounts:
            if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0:
                raise ValueError(
                    f"trial_resources: {name} must be a non-negative number, got {amount!r}"
                )
    return dict(resources)


def _demand(resources: dict[str, Any]) -> dict[str, float]:
    """Ray's resource names and amounts of one trial (as ``ray.nodes()`` reports them)."""
    demand = {"CPU": resources.get("num_cpus", 1), "GPU": resources.get("num_gpus", 0)}
    if "memory" in resources:
        demand["memory"] = resources["memory"]
    if "accelerator_type" in resources:
        demand[f"accelerator_type:{resources['accelerator_type']}"] = 0.001
    demand.update(resources.get("resources", {}))
    return {k: float(v) for k, v in demand.items() if v}


def fits_a_node(resources: dict[str, Any], nodes: list[dict[str, Any]]) -> bool:
    """Whether one alive node of ``nodes`` (``ray.nodes()``) has all that one trial asks for.

    >>> node = {'Alive': True, 'Resources': {'CPU': 4.0, 'GPU': 1.0}}
    >>> fits_a_node({'num_cpus': 2, 'num_gpus': 1}, [node]), fits_a_node({'num_gpus': 2}, [node])
    (True, False)
    """
    demand = _demand(resources)
    return any(
        node.get("Alive") and all(node["Resources"].get(k, 0) >= v for k, v in demand.items())
        for node in nodes
    )


def ray_failure(error: BaseException, trial_id: int) -> str:
    """The error of a trial whose Ray task failed with ``error``: one ``WorkerDied`` line that
    says what happened, then Ray's own first line.
    """
    from nasx._optional import optional_import

    rx = optional_import("ray.exceptions", "ray", "execution='ray'")

    what: str
    if isinstance(error, rx.OutOfMemoryError):
        what = "was killed by Ray's memory monitor: its node ran out of memory"
    elif isinstance(error, rx.NodeDiedError):
        what = (
            "lost its Ray node: the node running it died (preempted, crashed or removed from "
            "the cluster)"
        )
    elif isinstance(error, (rx.WorkerCrashedError, rx.LocalRayletDiedError)):
        what = "lost its Ray worker: the process running it died (crashed or killed)"
    elif isinstance(error, rx.RayActorError):
        what = "lost its Ray actor: the actor running it died"
    elif isinstance(error, rx.ObjectLostError):
        what = "lost its result: Ray lost the object holding it (its node died or it was evicted)"
    elif isinstance(error, rx.TaskCancelledError):
        what = "was cancelled in Ray"
    elif isinstance(error, rx.RayTaskError):
        cause = error.cause if error.cause is not None else error
        what = f"stopped its Ray task with {type(cause).__name__}: {_first_line(cause)}"
    else:
        what = "could not be run by Ray"
    return failure(
        "WorkerDied", f"trial {trial_id} {what}\n{type(error).__name__}: {_first_line(error)}"
    )


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "(no message)"


class RayExecutor:
    """Up to ``capacity`` trials at once as Ray tasks.

    Args:
        builder, evaluator: what each trial needs (sent through the object store once).
        capacity: trials in flight (``max_concurrent_trials``).
        address: ``ray.init(address=...)`` (``'auto'`` joins a running cluster); without one, a
            Ray already initialised in this process is used, else a local instance is started.
        resources: of one trial, Ray's task options (:data:`RESOURCE_KEYS`), e.g.
            ``{'num_cpus': 2, 'num_gpus': 1}`` or ``{'resources': {'big_node': 1}}`` (default
            1 CPU). When no node of the cluster has them, a warning is logged (an autoscaling
            cluster may still add one; otherwise the trials would wait forever).
        trial_timeout: seconds after a trial's task began its own work (not counting the wait
            for a free CPU or a new worker process's start) after which the task is cancelled
            (forcefully) and the trial failed.
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
        resources = check_resources(resources)
        self._ray = ray
        self._started_ray = False
        if not ray.is_initialized():
            # Local workers import what this process imports (the script's folder, PYTHONPATH...).
            env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}}
            ray.init(address=address, runtime_env=env, include_dashboard=False, log_to_driver=False)
            self._started_ray = True
        self.capacity = capacity
        self.trial_timeout = trial_timeout
        if not fits_a_node(resources, ray.nodes()):
            _log.warning(
                "no node of the Ray cluster has the resources one trial asks for (%s): trials "
                "will wait until one joins (an autoscaling cluster adds it; otherwise lower "
                "trial_resources)",
                resources,
            )
        options = {"num_cpus": 1, **resources, "max_retries": 0}
        self._task = ray.remote(_run_remote).options(**options)
        self._builder = ray.put(builder)
        self._evaluator = ray.put(evaluator)
        self._pending: dict[Any, Job] = {}  # object ref -> job
        self._submitted: dict[Any, float] = {}  # object ref -> time.monotonic() at submission
        # trial_timeout counts from when a trial's task begins its own work, as with the process
        # pool: a task may wait for a free CPU, and after a forced cancel Ray starts a new worker
        # process (importing torch takes seconds), neither of which is the trial's time. Tasks
        # say when they begin through a queue (a small Ray actor) that `wait` drains.
        self._began: dict[Any, float] = {}  # object ref -> time.monotonic() its start was seen
        self._clock: Any = None
        if trial_timeout is not None:
            queue = optional_import("ray.util.queue", "ray", "execution='ray'")
            self._clock = queue.Queue(actor_options={"num_cpus": 0})
        #: a multi-fidelity scheduler's answer to each report (:func:`run_trial`'s ``decide``),
        #: set by the trial loop; the trials ask it through the :class:`DecisionBox` actor
        self.decide: Any = None
        self._box: Any = None  # the DecisionBox actor, made at the first submission
        self._asked: Any = None  # the box's pending questions() call, while trials run

    @property
    def busy(self) -> int:
        return len(self._pending)

    def submit(self, job: Job) -> None:
        # Remote machines cannot reach our log file nor the workdir: the log, the weights and
        # the checkpoint come back in the result instead (the checkpoint to continue from goes
        # out with the job).
        if self.decide is not None and self._box is None:
            self._box = self._decision_box()
        ref = self._task.remote(
            self._builder, self._evaluator, job.remote(), self._clock, self._box, _resume_bytes(job)
        )
        self._pending[ref] = job
        self._submitted[ref] = time.monotonic()

    def wait(self, timeout: float | None = None) -> list[TrialResult]:
        if not self._pending:
            return []
        if self.trial_timeout is not None:  # wake up in time to cancel the oldest trial
            self._note_starts()
            began = self._began_times()
            due = min(began.values(), default=math.inf) + self.trial_timeout - time.monotonic()
            if len(began) < len(self._pending):
                due = min(due, CLOCK_POLL_S)  # look again for trials that begin meanwhile
            timeout = max(0.0, due if timeout is None else min(timeout, due))
        refs = list(self._pending)
        if self._box is not None:  # wake on a trial's question as on its result
            if self._asked is None:
                self._asked = self._box.questions.remote()
            refs.append(self._asked)
        ready, rest = self._ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:  # collect whatever else is done, without waiting
            more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        if self._asked is not None and self._asked in ready:
            ready.remove(self._asked)
            self._answer_questions()
        results = []
        for ref in ready:
            job = self._pending.pop(ref)
            del self._submitted[ref]
            self._began.pop(ref, None)
            try:
                result = self._ray.get(ref)
            except Exception as e:  # the task's process or node died, or Ray lost its result
                result = TrialResult.failed(job, ray_failure(e, job.id))
            _store_checkpoint(job, result)  # before the result is stored: a promotion needs it
            results.append(result)
        if self.trial_timeout is not None:  # starts seen by the drain above (at most a poll ago)
            now = time.monotonic()
            began = self._began_times()
            for ref in [r for r, t in began.items() if now - t >= self.trial_timeout]:
                self._ray.cancel(ref, force=True)
                job = self._pending.pop(ref)
                del self._submitted[ref]
                self._began.pop(ref, None)
                results.append(
                    TrialResult.failed(
                        job,
                        failure(
                            "TrialTimeout",
                            f"trial {job.id} ran longer than trial_timeout "
                            f"({self.trial_timeout:g} s); its Ray task was cancelled",
                        ),
                    )
                )
        return results

    def _decision_box(self) -> Any:
        """A :class:`DecisionBox` actor on this process's node (it lives as long as we do)."""
        from nasx._optional import optional_import

        strategies = optional_import("ray.util.scheduling_strategies", "ray", "execution='ray'")
        here = self._ray.get_runtime_context().get_node_id()
        return (
            self._ray.remote(DecisionBox)
            .options(
                num_cpus=0,
                max_concurrency=1000,  # every trial in flight waits in ask() at once
                scheduling_strategy=strategies.NodeAffinitySchedulingStrategy(here, soft=True),
            )
            .remote()
        )

    def _answer_questions(self) -> None:
        """Answer the questions the box collected with ``decide`` (those of trials still
        pending: a cancelled trial's question is dropped)."""
        asked, self._asked = self._asked, None
        try:
            questions = self._ray.get(asked)
        except Exception:  # noqa: BLE001 - its node died: its trials fail; start a new box
            _log.warning("the Ray actor answering trials' reports was lost; starting another")
            self._box = self._decision_box()
            return
        running = {job.id for job in self._pending.values()}
        for trial, budget, value in questions:
            if trial not in running:
                continue
            try:  # the scheduler's error fails the trial, as in the sequential executor
                answer: Any = self.decide(trial, budget, value)
            except Exception as e:  # noqa: BLE001 - sent to the trial, which raises it
                answer = DecisionError(f"{type(e).__name__}: {e}")
            self._box.answer.remote(trial, answer)

    def _note_starts(self) -> None:
        """Record when each trial that said it began was first seen to have begun."""
        if self._clock is None:
            return
        try:
            ids = self._clock.get_nowait_batch(self._clock.qsize())
        except Exception:  # noqa: BLE001 - the clock's actor died (its node): count from submission
            _log.warning("the Ray trial clock was lost: trial_timeout now counts from submission")
            self._clock = None
            return
        now, ref_of = time.monotonic(), {job.id: ref for ref, job in self._pending.items()}
        for trial_id in ids:
            if trial_id in ref_of:
                self._began.setdefault(ref_of[trial_id], now)

    def _began_times(self) -> dict[Any, float]:
        """When each pending trial's own work began (its submission, without a clock)."""
        if self._clock is None:
            return dict(self._submitted)
        return {ref: self._began[ref] for ref in self._pending if ref in self._began}

    def shutdown(self) -> None:
        for ref in self._pending:
            self._ray.cancel(ref, force=True)
        self._pending.clear()
        self._submitted.clear()
        self._began.clear()
        if self._box is not None:
            self._ray.kill(self._box)
            self._box = self._asked = None
        if self._clock is not None:
            try:
                self._clock.shutdown()
            except Exception:  # noqa: BLE001 - already gone with its node or with Ray
                pass
            self._clock = None
        if self._started_ray:
            self._ray.shutdown()
