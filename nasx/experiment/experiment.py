"""NasExperiment: run a strategy's trials on a space with an evaluator, store them, resume, export.

This is the only module that brings space, strategy, evaluator, storage and execution together::

    strategy.propose() -> arch -> validate -> [filter] -> store (running) -> executor
    executor result -> store (succeeded | failed) -> strategy.tell(trial)

Example (sequential, in a temporary directory):

    >>> import tempfile, torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace, choice
    >>> from nasx.strategy import GridSearch
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(4, choice('width', [8, 16, 32]))
    >>> exp = NasExperiment(Net(), lambda model: model.fc.out_features / 32, GridSearch(shuffle=False),
    ...                     workdir=tempfile.mkdtemp())
    >>> exp.run()
    >>> exp.export_top_models(top_k=2)
    [{'width': 32}, {'width': 16}]
    >>> exp.stop_reason
    'the strategy has no more archs to propose'
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import io
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Literal, Union, cast, overload

from torch import nn

from nasx._checks import check_int
from nasx._config import describe
from nasx._contracts import missing_members
from nasx.evaluator.base import DIRECTIONS, Direction, Metric, ModelEvaluator, direction_of
from nasx.evaluator.hparams import evaluator_choices
from nasx.space import (
    InvalidArchError,
    LabelConflictError,
    ModelSpace,
    SearchSpace,
    fingerprint_differences,
    search_space,
    space_fingerprint,
)
from nasx.strategy.base import MultiTrialStrategy
from nasx.strategy.oneshot.base import OneShotStrategy
from nasx.trial import (
    FAILED,
    REJECTED,
    RUNNING,
    SUCCEEDED,
    WAITING,
    Trial,
    best_trials,
    failure,
)

from .execution import ProcessPoolExecutor, SequentialExecutor
from .progress import Progress, announce
from .runner import ModelBuilder, no_model, run_trial
from .storage import ExperimentDirError, TrialStore, remove_experiment
from .table import TrialTable

_log = logging.getLogger("nasx.experiment")

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

# What NasExperiment accepts (see the Protocols' docstrings for the contracts).
AnyStrategy = Union[MultiTrialStrategy, OneShotStrategy]  # noqa: UP007 - a runtime alias on 3.10
AnyEvaluator = Union[ModelEvaluator, Callable[..., Metric]]  # noqa: UP007


class NasExperiment:
    """A multi-trial (or one-shot) architecture search, stored in ``workdir``.

    Args:
        model_space: a :class:`~nasx.space.ModelSpace` instance.
        evaluator: a :class:`~nasx.evaluator.base.ModelEvaluator` (``evaluate(model, report=None)``)
            or a plain function ``fn(model) -> metric``; the metric is a finite float or a dict
            with a ``'default'``. One that declares an ``arch`` parameter also receives the
            trial's arch dict. One-shot strategies need a Lightning evaluator
            (:class:`~nasx.strategy.oneshot.base.OneShotEvaluator`).
        strategy: a :class:`~nasx.strategy.base.MultiTrialStrategy` (``setup``/``propose``/``tell``)
            or a :class:`~nasx.strategy.oneshot.base.OneShotStrategy` (``run``/``export_top_models``).
        config: NNI 3.0's :class:`~nasx.experiment.nni_config.NasExperimentConfig`; its fields
            (``max_trial_number``, ...) set the matching arguments (after them, as in NNI).
        workdir: the experiment directory (default ``nasx_experiments/<timestamp>``).
        max_trials: stop proposing after this many trials (rejected archs do not count).
        max_duration: stop proposing after this long in one ``run()`` (seconds or ``'30m'``,
            ``'2h'``, ``'1d'``); trials in flight are waited for.
        max_concurrent_trials: trials run at once; above 1 a local process pool is used.
        max_failed_trials: stop once more than this many trials failed.
        trial_timeout: seconds (or ``'10m'``) after which a trial is stopped and recorded as failed;
            it needs a worker, so one concurrent trial then runs on a 1-process pool.
        execution: ``'sequential'``, ``'process'`` or ``'ray'``; default sequential for one
            concurrent trial without ``trial_timeout``, else process.
        filter: a :class:`~nasx.experiment.filters.Filter` (or ``f(arch) -> bool``) run before training.
        resume: continue the experiment already in ``workdir``; without it such a directory is an
            error. A resume is refused when the space (labels, candidates and their order), the
            strategy's or the evaluator's settings differ from the stored experiment's.
        overwrite: delete an experiment already in ``workdir`` (its database, trials and one-shot
            checkpoints) and start afresh.
        rerun_interrupted: on resume, re-run trials that were in flight when the last run stopped
            (True) or record them as failed (False).
        max_trial_crashes: a trial that ran in the experiment's process (sequential execution)
            when that process died counts one crash; on resume, a
            trial with this many crashes is recorded as failed ("crashed the process") instead of
            re-run, so a trial that kills the process (a segfault in native code) cannot stop the
            experiment from ever finishing. None: re-run it however often. To keep such a trial
            from taking the experiment down at all, run it in a child process:
            ``execution='process'`` (with ``max_concurrent_trials=1`` it is isolation without
            concurrency; the trial is then recorded as failed with ``WorkerDied``).
        direction: ``'maximize'`` or ``'minimize'``; default the evaluator's ``direction``.
        seed: seed torch, numpy and random with ``seed + trial id`` before each trial builds its
            model, so a trial's numbers do not depend on the trials that ran before it in the same
            process (a rerun or a resumed run gives the same metrics). None: leave the RNGs alone.
        progress: show a progress bar over trials in a terminal (one line per trial when output
            is not a terminal; a refreshing HTML display in Jupyter); ``False`` for silence.
        tensorboard: log each finished trial (curve, final metrics, arch as hparams) under
            ``workdir/tensorboard`` for ``tensorboard --logdir <workdir>``.
        ray_address, trial_resources: for ``execution='ray'``, the default when either is given:
            ``ray.init(address=...)`` (``'auto'``: the cluster this machine belongs to), and what
            one trial needs, Ray's task options (default ``{'num_cpus': 1}``; ``{'num_cpus': 4,
            'num_gpus': 1}``: four CPUs and a GPU of its own; ``{'resources': {'big': 1}}``: a
            node with a custom resource). Ray places each trial on a node that has them;
            ``max_concurrent_trials`` caps the trials in flight. See docs/scaling.md.
        build_model: build each trial's model before evaluating it; ``False`` passes
            ``model=None`` (for evaluators that look the arch up, such as a benchmark table).
            Default: the evaluator's ``needs_model`` (True when it has none).
        keep_weights: keep each trial's trained model in ``workdir/weights`` (written atomically,
            with a checksum) for :func:`nasx.experiment.load_model` after the process has exited:
            ``'none'`` (default), ``'all'``, ``'best'``, or the ``k`` best (``k`` or ``'top-k'``:
            the others are deleted as better trials finish). What is kept is the model the
            evaluator was given, after it returned (nasx's evaluators train it in place). See
            :mod:`nasx.experiment.weights`.
    """

    def __init__(
        self,
        model_space: ModelSpace,
        evaluator: AnyEvaluator,
        strategy: AnyStrategy,
        config: Any = None,  # NNI 3.0's NasExperimentConfig (its fields set on exp.config)
        *,
        workdir: str | Path | None = None,
        max_trials: int | None = None,
        max_duration: float | str | None = None,
        max_concurrent_trials: int = 1,
        max_failed_trials: int | None = None,
        trial_timeout: float | str | None = None,
        execution: str | None = None,
        filter: Any = None,  # noqa: A002 - the natural name, as in NNI's model_filter
        resume: bool = False,
        overwrite: bool = False,
        rerun_interrupted: bool = True,
        max_trial_crashes: int | None = 2,
        direction: str | None = None,
        ray_address: str | None = None,
        trial_resources: dict[str, Any] | None = None,
        seed: int | None = None,
        progress: bool = True,
        tensorboard: bool = False,
        build_model: bool | None = None,
        keep_weights: str | int | None = "none",
    ):
        if execution not in (None, "sequential", "process", "ray"):
            raise ValueError(
                f"execution must be 'sequential', 'process' or 'ray', got {execution!r}"
            )
        self._one_shot = _is_one_shot(strategy)
        _check_evaluator(evaluator)
        self.model_space = model_space
        self.evaluator = evaluator
        # Checked against both Protocols above; the code below dispatches on self.is_one_shot.
        self.strategy: Any = strategy
        self.workdir = Path(workdir) if workdir is not None else _default_workdir()
        self.max_trials = max_trials
        self.max_duration = parse_duration(max_duration)
        self.max_concurrent_trials = max_concurrent_trials
        self.max_failed_trials = max_failed_trials
        self.trial_timeout = parse_duration(trial_timeout, "trial_timeout")
        if execution == "sequential" and self.trial_timeout is not None:
            raise ValueError(
                "trial_timeout needs trials in worker processes: use execution='process' (or 'ray')"
            )
        self.ray_address = ray_address
        self.trial_resources = trial_resources
        self.execution = execution or self._default_execution()
        self.filter = _as_filter(filter)
        self.resume = resume
        self.overwrite = overwrite
        if resume and overwrite:
            raise ValueError(
                "resume=True continues the stored experiment, overwrite=True deletes it: pass one"
            )
        self.rerun_interrupted = rerun_interrupted
        self.max_trial_crashes = max_trial_crashes
        direction = direction or direction_of(evaluator)
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
        self.direction: Direction = direction  # narrowed by the check above
        if trial_resources is not None:
            from .ray_execution import check_resources  # imports no Ray

            trial_resources = check_resources(trial_resources)
            if self.execution != "ray":
                raise ValueError(
                    f"trial_resources are Ray's placement of each trial; execution is "
                    f"{self.execution!r}: pass execution='ray' (or leave it out)"
                )
            self.trial_resources = trial_resources
        self.progress = progress
        self.tensorboard = tensorboard
        self._tb = None
        self.seed = seed
        self.build_model = (
            bool(getattr(evaluator, "needs_model", True)) if build_model is None else build_model
        )
        from .weights import KeepWeights

        self.keep_weights = KeepWeights.parse(keep_weights)
        if self.keep_weights.enabled and not self.build_model:
            raise ValueError(
                f"keep_weights={str(self.keep_weights)!r} keeps the trained model of trials, but "
                "build_model=False builds none: drop one of them"
            )
        self._keeper: Any = None  # the WeightKeeper of a run() in flight
        self.stop_reason: str | None = None
        #: with constraints on the space: how many archs satisfy them (set by run(); a
        #: nasx.space.ValidCount, exact or estimated, ``str()`` says which)
        self.valid_count: Any = None
        self._progress: Any = None  # the Progress of a run() in flight (typed Any: _loop calls it)
        # The trials not finished yet (in flight, or interrupted and waiting to re-run): a
        # finished one lives in the database only (and in the strategy, if it keeps it), so the
        # memory of a run does not grow with its trials.
        self._trials: dict[int, Trial] = {}
        self._model_labels: frozenset[str] = frozenset()  # set by run(), read by _split
        self._hparam_labels: frozenset[str] = frozenset()
        # Trials per status, kept up to date as trials change (_add_trial, _set_status), so the
        # limits are checked in constant time per step rather than by recounting every trial.
        self._counts: collections.Counter[str] = collections.Counter()
        self._opened = False  # a second run() of this object continues its experiment
        self._config = None
        self._execution_given = execution is not None
        if config is not None:
            config.apply_to(self)
        self._check_limits()

    # ----------------------------------------------------------------- public
    @property
    def is_one_shot(self) -> bool:
        """Whether the strategy is a one-shot one (decided once, from its methods)."""
        return self._one_shot

    @property
    def config(self):
        """NNI 3.0's ``exp.config`` (``max_trial_number``, ``trial_concurrency``, ``max_experiment_duration``)."""
        if self._config is None:
            from .nni_config import NniConfig

            self._config = NniConfig(self)
        return self._config

    def run(self, port: int | None = None, **nni_options: Any) -> None:
        """Run until a limit is reached or the strategy is exhausted; call again to go on.

        ``port`` and NNI's other ``run`` options (``config``, ``wait_completion``, ``debug``) are
        accepted for NNI scripts and ignored: nasx starts no web server of its own; run
        ``nasx serve <workdir>`` in another terminal to follow the experiment in a browser. Any
        other keyword is refused, naming the known ones.
        """
        _check_nni_run_options(nni_options)
        self._check_limits()  # exp.config (NNI) may have set them after construction
        if not self._execution_given:  # max_concurrent_trials may have changed (exp.config)
            self.execution = self._default_execution()
        if self.is_one_shot:
            hparam_labels = list(evaluator_choices(self.evaluator))
            if hparam_labels:
                raise ValueError(
                    f"the evaluator has choices among its arguments "
                    f"({', '.join(map(repr, hparam_labels))}), which a one-shot "
                    f"strategy ({type(self.strategy).__name__}) cannot search: fix them with "
                    "nasx.evaluator.hparams.freeze_evaluator(evaluator, {label: value, ...}), or "
                    "search them with a multi-trial strategy"
                )
            if self.overwrite and not self._opened:
                remove_experiment(self.workdir)
            self._opened = True
            self.workdir.mkdir(parents=True, exist_ok=True)
            self._record_oneshot(exported=False)  # a checkpoint mid-run is loadable too
            self.strategy.run(self.model_space, self.evaluator, self.workdir)
            self._record_oneshot(exported=True)
            self.stop_reason = "the one-shot strategy finished"
            return
        space = search_space(self.model_space)
        if space.constraints:
            # how many archs the constraints leave (exact on small spaces, else an estimate)
            self.valid_count = space.count_valid(max_seconds=10.0)
            line = (
                f"{len(space.constraints)} constraint(s) on the space "
                f"({', '.join(c.label for c in space.constraints)}): {self.valid_count}"
            )
            _log.info("%s", line)
            if self.progress:
                announce(line)
        hparam_space = evaluator_choices(self.evaluator)
        store = self._open_store(space, hparam_space)
        executor = None
        try:
            stored = store.trials()
            interrupted = [t for t in stored if t.status in (WAITING, RUNNING)]
            interrupted = self._count_crashes(store, interrupted)
            if interrupted and not self.rerun_interrupted:
                for t in interrupted:
                    t.status, t.end_time = FAILED, time.time()
                    t.error = failure(
                        "Interrupted",
                        "the experiment stopped while this trial ran (rerun_interrupted=False)",
                    )
                    store.update(t)
                interrupted = []
            self._counts = collections.Counter(t.status for t in stored)
            self._trials = {t.id: t for t in interrupted}
            # The strategy sees one space, the model's and the evaluator's choices together, and
            # trials whose arch is that joint sample (trial.sample); storage keeps them apart.
            joint = joint_space(space, hparam_space)
            self._model_labels, self._hparam_labels = frozenset(space), frozenset(hparam_space)
            self.strategy.setup(joint, [_as_seen(t) for t in stored], direction=self.direction)
            builder = ModelBuilder.from_space(self.model_space)
            self._keeper = self._make_keeper(store, builder, stored)
            # The filter may still build models (on='model'); the trials skip it when asked to.
            executor = self._make_executor(builder if self.build_model else no_model, store)
            self._progress = self._make_progress(stored)
            del stored  # what the strategy keeps of them, it keeps
            self._loop(
                joint, store, executor, builder, queue=sorted(interrupted, key=lambda t: t.id)
            )
            self._progress.close(self.stop_reason)
            if self._keeper is not None:
                _log.info(self._keeper.summary())
        finally:
            self._keeper = None
            if executor is not None:
                executor.shutdown()
            if self._progress is not None:
                self._progress.close()  # Ctrl-C or an error: leave the terminal tidy
                self._progress = None
            store.close()

    def trials(self, status: str | None = None) -> list[Trial]:
        """Every trial (of this run or read from ``workdir``), optionally of one status."""
        trials = self._all_trials()
        return [t for t in trials if status is None or t.status == status]

    def trial_table(self) -> TrialTable:
        """The trials as rows (id, status, metric, duration, arch, error); ``print`` it for a table."""
        return TrialTable(self._all_trials())

    @overload
    def export_top_models(
        self, top_k: int = 1, formatter: Literal["dict"] = "dict"
    ) -> list[dict[str, Any]]: ...
    @overload
    def export_top_models(self, top_k: int, formatter: Literal["instance"]) -> list[nn.Module]: ...
    @overload
    def export_top_models(self, *, formatter: Literal["instance"]) -> list[nn.Module]: ...
    def export_top_models(
        self, top_k: int = 1, formatter: str = "dict"
    ) -> list[dict[str, Any]] | list[nn.Module]:
        """The ``top_k`` best archs (``formatter='dict'``) or fresh models built from them (``'instance'``)."""
        check_int("top_k", top_k, minimum=1, allow_none=False)
        if formatter not in ("dict", "instance"):
            raise ValueError(f"formatter must be 'dict' or 'instance', got {formatter!r}")
        if self.is_one_shot:
            archs = self.strategy.export_top_models(top_k)
        else:
            archs = [t.arch for t in self._best_trials(top_k)]
        if formatter == "instance":
            return [self.model_space.freeze(arch) for arch in archs]
        return archs

    def load_model(
        self, trial: int | str = "best", arch: dict[str, Any] | None = None
    ) -> nn.Module:
        """The trained model of a kept trial (``keep_weights``), or for a one-shot search the
        subnet of ``arch`` with its inherited weights: :func:`nasx.experiment.load_model`."""
        from .weights import load_model

        return load_model(self.workdir, trial, arch=arch, model_space=self.model_space)

    def kept_weights(self) -> list[Any]:
        """The trials whose weights are kept (:class:`~nasx.experiment.weights.KeptWeights`)."""
        from .weights import kept_weights

        return kept_weights(self.workdir)

    def export_top_trials(self, top_k: int = 1) -> list[dict[str, Any]]:
        """The ``top_k`` best trials as ``{'id', 'arch', 'hparams', 'metric', 'metrics'}`` dicts.

        ``arch`` holds the model's labels (``model_context(arch)`` / ``space.freeze(arch)``
        rebuild the model), ``hparams`` the evaluator's (``freeze_evaluator(evaluator,
        hparams)`` rebuilds the evaluator; empty when it has no choices): together they are
        what :meth:`rerun_trial` runs again. JSON-serialisable.
        """
        check_int("top_k", top_k, minimum=1, allow_none=False)
        if self.is_one_shot:
            raise ValueError(
                "export_top_trials reads the trials of a multi-trial experiment; a one-shot "
                "strategy has none: use export_top_models()"
            )
        return [
            {
                "id": t.id,
                "arch": t.arch,
                "hparams": t.hparams,
                "metric": t.metric,
                "metrics": t.metrics,
            }
            for t in self._best_trials(top_k)
        ]

    def rerun_trial(self, trial_id: int) -> dict[str, float]:
        """Run trial ``trial_id`` again in this process, as the experiment ran it; its metrics.

        The model is rebuilt from the trial's ``arch``, the evaluator made again with its
        ``hparams``, and the random generators seeded as the experiment seeded them (``seed +
        trial id`` when the experiment has a ``seed``), so a deterministic evaluation gives the
        stored metric again. Raises RuntimeError with the trial's error when it fails.
        """
        matches = [t for t in self._all_trials() if t.id == trial_id]
        if not matches:
            raise KeyError(f"no trial {trial_id} in {self.workdir}")
        trial = matches[0]
        builder = cast(
            Callable[[dict], nn.Module],
            ModelBuilder.from_space(self.model_space) if self.build_model else no_model,
        )
        job: dict[str, Any] = {"id": trial.id, "arch": trial.arch, "hparams": trial.hparams}
        if self.seed is not None:
            job["seed"] = self.seed + trial.id
        result = run_trial(builder, self.evaluator, job)
        if result["status"] != SUCCEEDED:
            raise RuntimeError(f"trial {trial_id} failed when run again: {result['error']}")
        return cast(dict[str, float], result["metrics"])

    def pareto_front(self, objectives: Any = ("default",)) -> list[Trial]:
        """The trials no other trial beats on every objective (``{'accuracy': 'maximize',
        'latency_ms': 'minimize'}`` or ``['accuracy', '-latency_ms']``); see
        :mod:`nasx.experiment.pareto` (``export_front`` writes it to CSV or JSON)."""
        from .pareto import pareto_front

        return pareto_front(self._all_trials(), objectives)

    # ----------------------------------------------------------------- the loop
    def _loop(self, space, store: TrialStore, executor, builder, queue: list[Trial]) -> None:
        started = time.monotonic()
        in_flight: set[int] = set()
        rejections_in_a_row = 0
        self.stop_reason = None
        while True:
            # Fill free slots: interrupted trials first, then new proposals.
            while self.stop_reason is None and len(in_flight) < executor.capacity:
                # Interrupted trials were counted already: only time and failures stop their rerun.
                limit = self._limit_reached(started, new_trial=not queue)
                if limit:
                    self.stop_reason = limit
                    break
                if queue:
                    trial = queue.pop(0)
                    _log.info("re-running interrupted trial %d", trial.id)
                    self._set_status(trial, RUNNING)
                    trial.start_time, trial.error = time.time(), None
                    store.update(trial)
                else:
                    arch = self.strategy.propose()
                    if arch is None:
                        self.stop_reason = "the strategy has no more archs to propose"
                        break
                    sample = self._validate(space, arch)
                    arch, hparams = self._split(sample)
                    trial = Trial(
                        store.next_id(), arch, RUNNING, start_time=time.time(), hparams=hparams
                    )
                    try:
                        reason = self._check_constraints(space, arch)
                        if reason is None:
                            reason = self._check_filter(arch, builder)
                    except (
                        Exception
                    ) as e:  # e.g. the model cannot be built: the trial fails, the search goes on
                        trial.status, trial.error = (
                            FAILED,
                            failure("FilterError", f"the filter raised {type(e).__name__}: {e}"),
                        )
                        trial.end_time, trial.duration = trial.start_time, 0.0
                        store.add(trial)
                        self._add_trial(trial)
                        self.strategy.tell(_as_seen(trial))
                        self._progress.trial_finished(trial)
                        continue
                    if reason is not None:
                        trial.status, trial.error = REJECTED, reason
                        trial.end_time, trial.duration = trial.start_time, 0.0
                        store.add(trial)
                        self._add_trial(trial)
                        self.strategy.tell(_as_seen(trial))
                        rejections_in_a_row += 1
                        patience = self.filter.patience if self.filter is not None else 100
                        if rejections_in_a_row >= patience:
                            self.stop_reason = (
                                f"the filter rejected {rejections_in_a_row} archs in a row "
                                f"(patience {patience}); last: {reason}"
                            )
                        continue
                    rejections_in_a_row = 0
                    store.add(trial)
                    self._add_trial(trial)
                in_flight.add(trial.id)
                job = {
                    "id": trial.id,
                    "arch": trial.arch,
                    "log_path": str(store.log_path(trial.id)),
                }
                if trial.hparams:
                    job["hparams"] = trial.hparams
                if self.seed is not None:
                    job["seed"] = self.seed + trial.id
                if self._keeper is not None:
                    job["weights"] = self._keeper.job_spec()
                executor.submit(job)
                self._progress.trial_started()
            if not in_flight:
                break
            for result in executor.wait(timeout=1.0):
                trial = self._finish(store, result)
                in_flight.discard(trial.id)
                self.strategy.tell(_as_seen(trial))
                self._progress.trial_finished(trial)
        _log.info("experiment stopped: %s", self.stop_reason)

    def _count_crashes(self, store: TrialStore, interrupted: list[Trial]) -> list[Trial]:
        """Count one crash for each trial the last process left running; record those that
        reached ``max_trial_crashes`` as failed. The rest, to re-run (or mark interrupted)."""
        meta = store.meta()
        # Trials of a process pool ran in workers: their crash killed a worker, not the process.
        in_process = meta.get("execution", "sequential") == "sequential"
        store.set_meta("execution", self.execution)
        if not interrupted:
            return interrupted
        crashes = {int(k): v for k, v in meta.get("crashes", {}).items()}
        for t in interrupted:
            if in_process and t.status == RUNNING:  # a WAITING trial never started
                crashes[t.id] = crashes.get(t.id, 0) + 1
        store.set_meta("crashes", {str(k): v for k, v in sorted(crashes.items())})
        limit = self.max_trial_crashes
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

    def _finish(self, store: TrialStore, result: dict[str, Any]) -> Trial:
        trial = self._trials.pop(result["id"])
        if result.get("log"):  # remote workers send their log back
            with open(store.log_path(trial.id), "a") as f:
                f.write(result["log"])
        self._set_status(trial, result["status"])
        for key in (
            "metric",
            "metrics",
            "intermediates",
            "end_time",
            "duration",
            "error",
        ):
            setattr(trial, key, result[key])
        trial.start_time = result["start_time"] or trial.start_time
        store.update(trial)
        if self._keeper is not None:  # after the row: pruning never outruns the stored result
            self._keeper.finished(trial, result)
        if self.tensorboard:
            self._tensorboard_writer().write(trial)
        if trial.status == FAILED:
            _log.warning("trial %d failed: %s", trial.id, (trial.error or "").splitlines()[0])
        return trial

    def _make_keeper(self, store: TrialStore, builder: ModelBuilder, stored: list[Trial]) -> Any:
        """The WeightKeeper of this run (None with keep_weights='none'); the policy is stored so
        that a load of a trial that kept nothing can say why."""
        store.set_meta("keep_weights", str(self.keep_weights))
        if not self.keep_weights.enabled:
            return None
        from .weights import WeightKeeper, space_reference

        succeeded = {t.id for t in stored if t.status == SUCCEEDED}
        space = space_reference(builder.space_cls, builder.args, builder.kwargs)
        return WeightKeeper(self.workdir, self.keep_weights, self.direction, space, succeeded)

    def _record_oneshot(self, exported: bool) -> None:
        from .weights import record_oneshot

        archs = None
        if exported:
            try:
                archs = self.strategy.export_top_models(1)
            except Exception as e:  # noqa: BLE001 - the record is a convenience; the run succeeded
                _log.warning("could not record the exported arch in oneshot.json: %s", e)
        try:
            record_oneshot(self.workdir, self.model_space, self.strategy, archs)
        except (TypeError, OSError) as e:
            _log.warning("could not write oneshot.json (load_model needs model_space=): %s", e)

    def _tensorboard_writer(self):
        if self._tb is None:
            from .tensorboard import TrialWriter

            self._tb = TrialWriter(self.workdir)
        return self._tb

    def _make_progress(self, stored: list[Trial]) -> Progress:
        """The progress display (silent with ``progress=False``), starting from stored trials."""
        finished = [t for t in stored if t.status in (SUCCEEDED, FAILED)]
        ranked = best_trials(finished, self.direction, 1)
        best = ranked[0].metric if ranked else None
        if finished and self.progress:  # before the bar, which then owns the line
            announce(
                f"resuming the experiment in {self.workdir}: {len(finished)} "
                f"{'trial' if len(finished) == 1 else 'trials'} already done"
                + (f" (best metric {best:.4f})" if best is not None else "")
            )
        from .notebook import NotebookProgress, in_notebook

        # In Jupyter, an HTML display refreshed in place (stderr is no terminal there).
        cls = NotebookProgress if self.progress and in_notebook() else Progress
        return cls(
            self.max_trials,
            self.direction,
            done=len(finished),
            best=best,
            # Silence discards the lines (a StringIO would keep one per trial for the whole run).
            stream=None if self.progress else cast(IO[str], _Discard()),
        )

    def _add_trial(self, trial: Trial) -> None:
        if not trial.finished:  # one rejected (or failed) before it ran is in the database only
            self._trials[trial.id] = trial
        self._counts[trial.status] += 1

    def _set_status(self, trial: Trial, status: Any) -> None:
        self._counts[trial.status] -= 1
        self._counts[status] += 1
        trial.status = status

    def _limit_reached(self, started: float, new_trial: bool = True) -> str | None:
        # Constant time: called before every trial, it must not walk the trials (100k of them).
        counted = sum(self._counts.values()) - self._counts[REJECTED]
        if new_trial and self.max_trials is not None and counted >= self.max_trials:
            return f"max_trials ({self.max_trials}) reached"
        failed = self._counts[FAILED]
        if self.max_failed_trials is not None and failed > self.max_failed_trials:
            return f"{failed} trials failed, more than max_failed_trials ({self.max_failed_trials})"
        if self.max_duration is not None and time.monotonic() - started >= self.max_duration:
            return f"max_duration ({self.max_duration:g} s) reached"
        return None

    def _split(self, sample: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """A joint sample as ``(arch, hparams)``: the model's labels, the evaluator's labels (a
        label both share on purpose goes to both)."""
        arch = {k: v for k, v in sample.items() if k in self._model_labels}
        hparams = {k: v for k, v in sample.items() if k in self._hparam_labels}
        return arch, hparams

    def _validate(self, space, arch: Any) -> dict[str, Any]:
        try:
            return space.validate(arch)
        except InvalidArchError as e:
            raise InvalidArchError(
                f"strategy {type(self.strategy).__name__} proposed an invalid arch {arch!r}: {e}"
            ) from None

    def _check_constraints(self, space, arch: dict[str, Any]) -> str | None:
        """nasx's strategies never propose an arch that breaks the space's constraints; one
        written from scratch may: its arch is rejected like a filtered one."""
        broken = space.violations(arch) if space.constraints else []
        return f"breaks the space's constraints: {'; '.join(broken)}" if broken else None

    def _check_filter(self, arch: dict[str, Any], builder) -> str | None:
        if self.filter is None:
            return None
        return self.filter.check(arch, lambda: builder(arch))

    # ----------------------------------------------------------------- setup helpers
    def _check_limits(self) -> None:
        check_int("max_trials", self.max_trials, minimum=1)
        check_int("max_concurrent_trials", self.max_concurrent_trials, minimum=1, allow_none=False)
        check_int("max_failed_trials", self.max_failed_trials, minimum=0)
        check_int("seed", self.seed, minimum=0)
        check_int("max_trial_crashes", self.max_trial_crashes, minimum=1)

    def _meta(self, space, hparam_space=None) -> dict[str, Any]:
        cls = type(self.model_space)
        meta = {
            "space": cls.__qualname__,  # not the module: a script's __main__ may be resumed from elsewhere
            "search_space": {label: repr(c) for label, c in space.items()},
            "fingerprint": space_fingerprint(self.model_space),
            "strategy": type(self.strategy).__name__,
            "strategy_seed": getattr(self.strategy, "seed", None),
            "strategy_config": describe(self.strategy),
            "evaluator_config": describe(self.evaluator),
            "direction": self.direction,
        }
        if space.constraints:
            meta["constraints"] = [c.label for c in space.constraints]
        if hparam_space:  # written only when there are any: older experiments compare as before
            meta["hparam_space"] = {label: repr(c) for label, c in hparam_space.items()}
        return json.loads(json.dumps(meta, default=repr))  # as it reads back (tuples as lists)

    def _differences(self, stored: dict[str, Any], meta: dict[str, Any]) -> list[str]:
        """What differs between the stored experiment and this one (keys an older nasx did not
        store are not compared)."""
        lines = []
        if stored.get("space") != meta["space"]:
            lines.append(f"space class: was {stored.get('space')}, now {meta['space']}")
        key = "fingerprint" if "fingerprint" in stored else "search_space"
        lines += fingerprint_differences(stored.get(key, {}), meta[key])
        lines += [
            f"evaluator {line}"
            for line in fingerprint_differences(
                stored.get("hparam_space", {}), meta.get("hparam_space", {})
            )
        ]
        for key, what in (("strategy_config", "strategy"), ("evaluator_config", "evaluator")):
            if key not in stored or stored[key] == meta[key]:
                continue
            if stored[key].get("type") != meta[key].get("type"):
                lines.append(f"{what}: was {stored[key].get('type')}, now {meta[key].get('type')}")
            else:
                lines += [
                    f"{what} {line}"
                    for line in fingerprint_differences(stored[key], meta[key], "setting")
                ]
        return lines

    def _open_store(self, space, hparam_space=None) -> TrialStore:
        meta = self._meta(space, hparam_space)
        if self.overwrite and not self._opened:
            remove_experiment(self.workdir)
        if not TrialStore.exists(self.workdir):
            store = TrialStore.create(
                self.workdir, {**meta, "created": time.time(), "launch": _launch_record()}
            )
            _log.info("new experiment in %s", self.workdir)
            self._opened = True
            return store
        store = TrialStore(self.workdir)
        try:
            stored = store.meta()
            differences = self._differences(stored, meta)
            if differences:
                shown = "; ".join(differences[:8]) + ("; ..." if len(differences) > 8 else "")
                raise ExperimentDirError(
                    f"{self.workdir} holds another experiment (space {stored.get('space')}, "
                    f"{len(stored.get('search_space', {}))} labels, strategy {stored.get('strategy')}) "
                    f"than this one: {shown}. Resuming would mix the two; to start fresh choose "
                    "another workdir, or pass overwrite=True to delete the stored experiment "
                    "(nothing was changed)"
                )
            if stored.get("direction") != meta["direction"]:
                raise ExperimentDirError(
                    f"{self.workdir} holds an experiment that {stored.get('direction')}s its metric, "
                    f"this one would {meta['direction']} it; choose another workdir (nothing was changed)"
                )
            if not (self.resume or self._opened):
                raise ExperimentDirError(
                    f"{self.workdir} already holds an experiment with {len(store.trials())} trials; "
                    "pass resume=True to continue it, or choose another workdir (nothing was changed)"
                )
        except BaseException:
            store.close()
            raise
        if (
            not getattr(self.strategy, "seed_given", True)
            and stored.get("strategy") == meta["strategy"]
            and stored.get("strategy_seed") is not None
        ):
            self.strategy.seed = stored[
                "strategy_seed"
            ]  # an unseeded strategy resumes its own sequence
        self._opened = True
        return store

    def _default_execution(self) -> str:
        if self.ray_address is not None or self.trial_resources is not None:
            return "ray"  # asked for a Ray cluster or for Ray's placement of each trial
        return (
            "sequential"
            if self.max_concurrent_trials == 1 and self.trial_timeout is None
            else "process"
        )

    def _make_executor(self, builder, store: TrialStore):
        if self.execution == "sequential":
            if self.max_concurrent_trials > 1:
                raise ValueError(
                    "execution='sequential' runs one trial at a time; set max_concurrent_trials=1"
                )
            return SequentialExecutor(builder, self.evaluator)
        if self.execution == "process":
            return ProcessPoolExecutor(
                builder,
                self.evaluator,
                self.max_concurrent_trials,
                store.directory / "workers",
                trial_timeout=self.trial_timeout,
            )
        from .ray_execution import RayExecutor

        return RayExecutor(
            builder,
            self.evaluator,
            self.max_concurrent_trials,
            address=self.ray_address,
            resources=self.trial_resources,
            trial_timeout=self.trial_timeout,
        )

    def _best_trials(self, top_k: int) -> list[Trial]:
        """The ``top_k`` best trials; from the database, SQLite ranks them without loading all."""
        if TrialStore.exists(self.workdir):
            store = TrialStore(self.workdir, read_only=True)
            try:
                return store.best(self.direction, top_k)
            finally:
                store.close()
        return best_trials(self._trials.values(), self.direction, top_k)

    def _all_trials(self) -> list[Trial]:
        if TrialStore.exists(self.workdir):
            from .storage import load_trials

            return load_trials(self.workdir)
        return sorted(self._trials.values(), key=lambda t: t.id)

    def _repr_html_(self) -> str:
        """The experiment in a notebook: space, strategy, workdir, status counts, best trial, trials."""
        from .html import summary_html

        fields = {
            "space": type(self.model_space).__name__,
            "strategy": type(self.strategy).__name__,
            "workdir": self.workdir,
            "direction": self.direction,
        }
        if self.stop_reason:
            fields["stopped"] = self.stop_reason
        if self.keep_weights.enabled:
            from .weights import describe_kept

            fields["weights"] = describe_kept(self.workdir, self.keep_weights)
        trials = [] if self.is_one_shot else self._all_trials()
        return summary_html("NasExperiment", fields, trials, self.direction)

    def __repr__(self) -> str:
        return f"NasExperiment({type(self.model_space).__name__}, strategy={self.strategy!r}, workdir='{self.workdir}')"


class _Discard(io.TextIOBase):
    """A text stream that drops what is written (``progress=False``)."""

    def write(self, text: str) -> int:
        return len(text)


def parse_duration(value: float | str | None, what: str = "max_duration") -> float | None:
    """Seconds from a number or a string like ``'90s'``, ``'30m'``, ``'2h'``, ``'1d'``.

    >>> parse_duration('30m'), parse_duration(5), parse_duration(None)
    (1800.0, 5.0, None)
    """
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"{what} must be positive, got {value}")
        return float(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", str(value))
    if not match:
        raise ValueError(
            f"{what} must be seconds or a string like '30s', '10m', '2h', '1d'; got {value!r}"
        )
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


# NNI 3.0's NasExperiment.run / Experiment.run options besides `port`: accepted, without effect.
NNI_RUN_OPTIONS = ("config", "wait_completion", "debug")


def _check_nni_run_options(options: dict[str, Any]) -> None:
    unknown = sorted(set(options) - set(NNI_RUN_OPTIONS))
    if unknown:
        raise TypeError(
            f"NasExperiment.run() got unknown option(s) {', '.join(map(repr, unknown))}; it takes "
            f"port and NNI's {', '.join(NNI_RUN_OPTIONS)} (all ignored: nasx has no web UI). "
            "Limits such as max_trials are NasExperiment(...) arguments"
        )


def _is_one_shot(strategy: Any) -> bool:
    """Which seam ``strategy`` implements; a TypeError naming the missing methods if neither."""
    multi = missing_members(strategy, MultiTrialStrategy)
    one_shot = missing_members(strategy, OneShotStrategy)
    if getattr(strategy, "is_one_shot", False) is True and one_shot:
        multi = ["(it declares is_one_shot = True)"]
    if not multi:
        return False
    if not one_shot:
        return True
    raise TypeError(
        f"the strategy must be a multi-trial strategy (setup, propose, tell: see "
        f"nasx.strategy.base.MultiTrialStrategy) or a one-shot strategy (run, export_top_models: "
        f"see nasx.strategy.oneshot.base.OneShotStrategy); {type(strategy).__name__} lacks "
        f"{', '.join(multi)} for the first and {', '.join(one_shot)} for the second"
    )


def joint_space(space: SearchSpace, hparam_space: SearchSpace) -> SearchSpace:
    """The model's choices, then the evaluator's: the one space a strategy searches.

    A label in both is one decision only if both choices are the same decision (its value then
    goes to the model and to the evaluator); otherwise it is refused, naming the label. The
    space's constraints stay on the joint space (they read the model's labels).
    """
    if not hparam_space:
        return space
    joint = space.with_constraints()  # a copy that keeps the space's constraints
    if space.model_fn is not None:  # constraints on the model see the model's labels only
        build, labels = space.model_fn, frozenset(space)
        joint.model_fn = lambda arch: build({k: v for k, v in arch.items() if k in labels})
    for label, c in hparam_space.items():
        other = joint.setdefault(label, c)
        if other is not c and not other.same_decision(c):
            raise LabelConflictError(
                f"label {label!r} names a model choice ({other!r}) and an evaluator choice "
                f"({c!r}); give the hyperparameter another label (or the same values to share "
                "one decision)"
            )
    return joint


def _as_seen(trial: Trial) -> Trial:
    """The trial as a strategy sees it: its arch is the joint sample (arch and hparams)."""
    if not trial.hparams:
        return trial
    return dataclasses.replace(trial, arch=trial.sample, hparams={})


def _check_evaluator(evaluator: Any) -> None:
    if isinstance(evaluator, ModelEvaluator):
        if not callable(evaluator.evaluate):
            raise TypeError(f"{type(evaluator).__name__}.evaluate must be a method")
        return
    if not callable(evaluator):
        raise TypeError(
            f"the evaluator must have an evaluate(model, report=None) method (see "
            f"nasx.evaluator.base.ModelEvaluator) or be a function fn(model) -> metric; "
            f"{type(evaluator).__name__} has no evaluate and is not callable"
        )


def _as_filter(f: Any):
    if f is None or hasattr(f, "check"):
        return f
    if callable(f):
        from .filters import Filter

        return Filter(f, on="arch")
    raise TypeError(
        f"filter must be a nasx.experiment.filters.Filter or a function f(arch) -> bool, got {type(f).__name__}"
    )


def _launch_record() -> dict[str, Any]:
    """How this process was started, so that ``nasx resume`` can start it again."""
    return {"argv": list(sys.argv), "cwd": os.getcwd(), "python": sys.executable}


def _default_workdir() -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return Path("nasx_experiments") / stamp
