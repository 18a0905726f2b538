"""NasExperiment: run a strategy's trials on a space with an evaluator, store them, resume, export.

A facade: the trial loop is :mod:`~nasx.experiment.loop.trial_loop`, the resume identity
:mod:`~nasx.experiment.storage.identity`, the executors :mod:`~nasx.experiment.execution.local`; this is the
only module that brings space, strategy, evaluator, storage and execution together.

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

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Union, overload

from torch import nn

from nasx._checks import check_int
from nasx.evaluator.base import Direction, Metric, ModelEvaluator, direction_of
from nasx.evaluator.hparams import evaluator_choices
from nasx.experiment import settings
from nasx.experiment.display.choose import progress_for
from nasx.experiment.display.progress import announce_constraints
from nasx.experiment.display.tensorboard import TrialWriter
from nasx.experiment.execution.local import make_executor
from nasx.experiment.execution.runner import ModelBuilder, no_model, rerun
from nasx.experiment.filters import admission
from nasx.experiment.loop.interrupt import run_until_stopped
from nasx.experiment.loop.one_shot import run_one_shot
from nasx.experiment.loop.recovery import trials_to_rerun
from nasx.experiment.loop.scheduled import check_scheduler, scheduled_run
from nasx.experiment.loop.trial_loop import Limits, TrialBook, TrialLoop, as_seen, label_splitter
from nasx.experiment.nni.config import NniControls, accepts_nni_run_options
from nasx.experiment.results import loading
from nasx.experiment.results.partial import end_of_run, top_trials
from nasx.experiment.results.summary import (
    NoResultError,
    nothing_to_export,
    report_end_of_run,
    warn_if_nothing_to_search,
)
from nasx.experiment.results.table import TrialTable
from nasx.experiment.settings import RunSettings, joint_space, parse_duration
from nasx.experiment.storage import weights
from nasx.experiment.storage.identity import adopt_stored_seed, experiment_meta, open_store
from nasx.experiment.storage.store import TrialStore, load_trials
from nasx.experiment.storage.weights import keeper_for
from nasx.space import BaseModelSpace, SearchSpace, search_space
from nasx.strategy.base import MultiTrialStrategy
from nasx.strategy.oneshot.base import OneShotStrategy
from nasx.trial import Trial

_log = logging.getLogger("nasx.experiment")

__all__ = ["AnyEvaluator", "AnyStrategy", "NasExperiment", "joint_space", "parse_duration"]

# What NasExperiment accepts (see the Protocols' docstrings for the contracts).
AnyStrategy = Union[MultiTrialStrategy, OneShotStrategy]  # noqa: UP007 - a runtime alias on 3.10
AnyEvaluator = Union[ModelEvaluator, Callable[..., Metric]]  # noqa: UP007


class NasExperiment:
    """A multi-trial (or one-shot) architecture search, stored in ``workdir``.

    Args:
        model_space: a :class:`~nasx.space.ModelSpace` instance (or, as NNI writes custom spaces, a
            :class:`~nasx.space.BaseModelSpace` whose mutables are set by hand).
        evaluator: a :class:`~nasx.evaluator.base.ModelEvaluator` (``evaluate(model, report=None)``)
            or a plain function ``fn(model) -> metric``; the metric is a finite float or a dict
            with a ``'default'``. One that declares an ``arch`` parameter also receives the
            trial's arch dict. One-shot strategies need a Lightning evaluator
            (:class:`~nasx.strategy.oneshot.base.OneShotEvaluator`).
        strategy: a :class:`~nasx.strategy.base.MultiTrialStrategy` (``setup``/``propose``/``tell``)
            or a :class:`~nasx.strategy.oneshot.base.OneShotStrategy` (``run``/``export_top_models``).
        config: NNI 3.0's :class:`~nasx.experiment.nni.config.NasExperimentConfig`; its fields
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
            strategy's or the evaluator's settings (a built-in evaluator's every argument, e.g.
            ``learning_rate``, ``max_epochs``, the loaders' batch size; a user evaluator's
            ``resume_settings()``) differ from the stored experiment's, naming each.
            ``resume="force"`` continues with other strategy or evaluator settings on purpose
            (never another space).
        overwrite: delete an experiment already in ``workdir`` (its database, trials and one-shot
            checkpoints) and start afresh.
        rerun_interrupted: on resume, re-run trials that were in flight when the last run stopped
            (True) or record them as failed (False).
        max_trial_crashes: a trial evaluating in the experiment's process when it died counts a
            crash; on resume one with this many is recorded as failed ("crashed the process"),
            not re-run, so a trial that segfaults cannot keep the experiment from finishing (None:
            re-run it however often). ``execution='process'`` isolates trials (``WorkerDied``).
        direction: ``'maximize'`` or ``'minimize'``; default the evaluator's ``direction``.
        seed: seed torch, numpy and random with ``seed + trial id`` before each trial builds its
            model, so a trial's numbers do not depend on the trials that ran before it in the same
            process (a rerun or a resumed run gives the same metrics). None: leave the RNGs alone.
        progress: show a progress bar over trials in a terminal (one line per trial when output
            is not a terminal; a refreshing HTML display in Jupyter), and when the run ends a few
            lines: trials by outcome, the best trial, the most common error with a hint
            (:mod:`~nasx.experiment.results.summary`); ``False`` for silence (a run in which no trial
            succeeded still logs a WARNING on the ``nasx.experiment`` logger).
        tensorboard: log each finished trial (curve, final metrics, arch as hparams) under
            ``workdir/tensorboard`` for ``tensorboard --logdir <workdir>``.
        ray_address, trial_resources: for ``execution='ray'`` (the default when either is given):
            ``ray.init(address=...)`` (``'auto'``: this machine's cluster) and one trial's Ray task
            options (default ``{'num_cpus': 1}``; ``{'num_cpus': 4, 'num_gpus': 1}``, or
            ``{'resources': {'big': 1}}``: a node with a custom resource). See docs/scaling.md.
        build_model: build each trial's model before evaluating it; ``False`` passes
            ``model=None`` (for evaluators that look the arch up, such as a benchmark table).
            Default: the evaluator's ``needs_model`` (True when it has none).
        scheduler: a multi-fidelity scheduler (``ASHA(1, 27)``, :mod:`nasx.experiment.schedulers`)
            that gives trials budgets, stops poor ones, promotes good ones (docs/multi_fidelity.md).
        keep_weights: keep each trial's trained model in ``workdir/weights`` (written atomically,
            with a checksum) for :func:`nasx.experiment.load_model` after the process has exited:
            ``'none'`` (default), ``'all'``, ``'best'``, or the ``k`` best (``k`` or ``'top-k'``:
            the others are deleted as better trials finish). What is kept is the model the
            evaluator was given, after it returned (nasx's evaluators train it in place). See
            :mod:`nasx.experiment.storage.weights`.
    """

    def __init__(
        self,
        model_space: BaseModelSpace,
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
        resume: bool | Literal["force"] = False,
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
        scheduler: Any = None,
    ):
        self.trial_timeout = parse_duration(trial_timeout, "trial_timeout")
        settings.check_execution(execution, self.trial_timeout)
        self._one_shot = settings.is_one_shot(strategy)
        settings.check_evaluator(evaluator)
        if resume not in (True, False, "force"):
            raise ValueError(f"resume must be True, False or 'force', got {resume!r}")
        if resume and overwrite:
            raise ValueError(
                "resume=True continues the stored experiment, overwrite=True deletes it: pass one"
            )
        self.model_space, self.evaluator = model_space, evaluator
        self.strategy: Any = strategy  # checked against both Protocols above
        self.workdir = Path(workdir) if workdir is not None else settings.default_workdir()
        self.max_trials, self.max_failed_trials = max_trials, max_failed_trials
        self.max_duration = parse_duration(max_duration)
        self.max_concurrent_trials = max_concurrent_trials
        self.ray_address, self.trial_resources = ray_address, trial_resources
        self._execution_given = execution is not None
        self.execution = execution or self._default_execution()
        self.trial_resources = settings.check_trial_resources(trial_resources, self.execution)
        self.filter = settings.as_filter(filter)
        self.resume, self.overwrite, self.rerun_interrupted = resume, overwrite, rerun_interrupted
        self.max_trial_crashes = max_trial_crashes
        self.direction: Direction = settings.check_direction(direction or direction_of(evaluator))
        self.progress, self.tensorboard, self.seed = progress, tensorboard, seed
        self.build_model = (
            bool(getattr(evaluator, "needs_model", True)) if build_model is None else build_model
        )
        self.keep_weights = settings.keep_weights_policy(keep_weights, self.build_model)
        self.scheduler = check_scheduler(scheduler, evaluator, self._one_shot, self.execution)
        self.stop_reason: str | None = None
        #: How many archs satisfy the space's constraints, when it has some (set by ``run()``;
        #: a :class:`~nasx.space.ValidCount`, exact or estimated: ``str()`` says which).
        self.valid_count: Any = None
        # The trials not finished yet and the status counts, kept across run()s of this object.
        self._book = TrialBook()
        self._opened = False  # a second run() of this object continues its experiment
        # The one place the kind of search is decided; every later step reads the store.
        self._search = self._run_one_shot if self._one_shot else self._run_multi_trial
        self._config: Any = None
        #: NNI's controls, held at the edge (the stop flag, ``run(wait_completion=False)``'s thread)
        self.controls = NniControls(self)
        if config is not None:
            config.apply_to(self)
        settings.check_limits(self)

    # ----------------------------------------------------------------- public
    @property
    def is_one_shot(self) -> bool:
        """Whether the strategy is a one-shot one (decided once, from its methods)."""
        return self._one_shot

    @property
    def config(self) -> Any:
        """NNI 3.0's ``exp.config`` (``max_trial_number``, ``trial_concurrency``, ``max_experiment_duration``)."""
        if self._config is None:
            from nasx.experiment.nni.config import NniConfig

            self._config = NniConfig(self)
        return self._config

    @accepts_nni_run_options  # NNI's run(port, wait_completion=, ...): web UI, background
    def run(self) -> None:
        """Run until a limit is reached, the strategy is exhausted or :meth:`stop`
        is called; call again to go on. NNI's ``run(port, wait_completion=...)``: :mod:`.nni_config`."""
        settings.check_limits(self)  # exp.config (NNI) may have set them after construction
        if not self._execution_given:  # max_concurrent_trials may have changed (exp.config)
            self.execution = self._default_execution()
        self._search(fresh=not self._opened)

    def stop(self) -> None:
        """NNI's ``exp.stop()``: propose no more trials; the trials in flight finish and are
        stored, then ``run()`` returns (``stop_reason`` says so) and the web UI of
        ``run(port=...)`` stops. Call it from another thread, or after
        ``run(wait_completion=False)`` (it then waits for that run and re-raises its error). The
        experiment continues with ``run_or_resume()`` (or ``resume=True``).

            >>> import tempfile, torch.nn as nn
            >>> from nasx.space import ModelSpace, choice
            >>> from nasx.strategy import GridSearch
            >>> class Net(ModelSpace):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.fc = nn.Linear(2, choice('w', [1, 2, 3]))
            >>> exp = NasExperiment(Net(), lambda m: 0.5, GridSearch(), workdir=tempfile.mkdtemp(),
            ...                     progress=False)
            >>> exp.stop()  # before run(): the next run() runs all the same
            >>> exp.run(); len(exp.trials())
            3
        """
        self.controls.stop()

    def run_or_resume(
        self, port: int | None = None, wait_completion: bool = True, debug: bool = False
    ) -> None:
        """NNI's ``run_or_resume``: resume the experiment stored in ``workdir`` if there is one
        (checked as ``resume=True`` checks it), else start it.

            >>> import tempfile, torch.nn as nn
            >>> from nasx.space import ModelSpace, choice
            >>> from nasx.strategy import GridSearch
            >>> class Net(ModelSpace):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.fc = nn.Linear(2, choice('w', [1, 2, 3]))
            >>> def score(model):
            ...     return 0.5
            >>> workdir = tempfile.mkdtemp()
            >>> NasExperiment(Net(), score, GridSearch(), workdir=workdir, max_trials=2,
            ...               progress=False).run_or_resume()  # nothing stored: a new run
            >>> again = NasExperiment(Net(), score, GridSearch(), workdir=workdir, progress=False)
            >>> again.run_or_resume(); len(again.trials())  # resumed: the third arch only
            3
        """
        self.controls.run_or_resume(port, wait_completion, debug)

    def _run_one_shot(self, fresh: bool) -> None:
        """Train the one-shot strategy's supernet, storing its exported archs as rows."""
        warn_if_nothing_to_search(self.model_space, [search_space(self.model_space)], self.progress)
        self.stop_reason = run_one_shot(self._settings(), fresh, on_open=self._mark_opened)

    def _mark_opened(self) -> None:  # a second run() of this object continues its experiment
        self._opened = True

    def _run_multi_trial(self, fresh: bool) -> None:
        """Open the store, then run trials until a limit is reached or the strategy is done."""
        space = search_space(self.model_space)
        hparam_space = evaluator_choices(self.evaluator)
        warn_if_nothing_to_search(self.model_space, [space, hparam_space], self.progress)
        if space.constraints:
            self.valid_count = announce_constraints(space, self.progress)
        meta = experiment_meta(
            self.model_space, self.strategy, self.evaluator, self.direction, space, hparam_space
        )
        store, stored_meta = open_store(
            self.workdir, meta, resume=self.resume, overwrite=self.overwrite, continuing=not fresh
        )
        adopt_stored_seed(self.strategy, stored_meta, meta)
        self._mark_opened()
        try:
            self._run_trials(store, space, hparam_space)
        finally:
            store.close()

    def _run_trials(self, store: TrialStore, space: SearchSpace, hparam_space: SearchSpace) -> None:
        """Resume what is stored, then run the trial loop until it stops."""
        stored = store.trials()
        rerun = trials_to_rerun(
            store, stored, self.execution, self.max_trial_crashes, self.rerun_interrupted
        )
        self._book = TrialBook({t.id: t for t in rerun})
        self._book.counts.update(t.status for t in stored)
        # The strategy sees one space, the model's and the evaluator's choices together, and
        # trials whose arch is that joint sample (trial.sample); storage keeps them apart.
        joint = joint_space(space, hparam_space)
        self.strategy.setup(joint, [as_seen(t) for t in stored], direction=self.direction)
        builder = ModelBuilder.from_space(self.model_space)
        keeper = keeper_for(store, self.keep_weights, self.direction, builder, stored)
        run = self._settings()
        progress = progress_for(run, stored)
        del stored  # what the strategy keeps of them, it keeps
        # The filter may still build models (on='model'); the trials skip it when asked to.
        executor = make_executor(run, builder if self.build_model else no_model, store)
        loop = TrialLoop(
            store,
            executor,
            self.strategy,
            joint,
            Limits(
                self.max_trials,
                self.max_failed_trials,
                self.max_duration,
                self.controls.stop_requested,
            ),
            book=self._book,
            split=label_splitter(frozenset(space), frozenset(hparam_space)),
            admit=admission(joint, self.filter, builder),
            patience=self.filter.patience if self.filter is not None else 100,
            keeper=keeper,
            progress=progress,
            seed=self.seed,
            on_finished=TrialWriter(self.workdir).write if self.tensorboard else None,
            scheduler=scheduled_run(self.scheduler, store, self.evaluator, joint),
        )
        try:
            self.stop_reason = run_until_stopped(loop, rerun, self.workdir)
            progress.close(end_of_run(self.stop_reason, store, self.scheduler, self.direction))
            if keeper is not None:
                _log.info(keeper.summary())
            report_end_of_run(store, self.direction, self.workdir, self.progress)
        finally:
            executor.shutdown()
            progress.close()  # Ctrl-C or an error: leave the terminal tidy

    def trials(self, status: str | None = None) -> list[Trial]:
        """Every trial (of this run or read from ``workdir``), optionally of one status."""
        return [t for t in self._all_trials() if status is None or t.status == status]

    def trial_table(self) -> TrialTable:
        """The trials as rows (id, status, metric, duration, arch, error); ``print`` it for a table."""
        return TrialTable(self._all_trials())

    @overload
    def export_top_models(
        self, top_k: int = 1, formatter: Literal["dict"] = "dict", *, include_partial: bool = False
    ) -> list[dict[str, Any]]: ...
    @overload
    def export_top_models(
        self, top_k: int, formatter: Literal["instance"], *, include_partial: bool = False
    ) -> list[nn.Module]: ...
    @overload
    def export_top_models(
        self, *, formatter: Literal["instance"], include_partial: bool = False
    ) -> list[nn.Module]: ...
    def export_top_models(
        self, top_k: int = 1, formatter: str = "dict", *, include_partial: bool = False
    ) -> list[dict[str, Any]] | list[nn.Module]:
        """The ``top_k`` best archs (``formatter='dict'``) or fresh models built from them (``'instance'``).

        Read from the store: the best trials (with a scheduler, at its full budget; by the budget reached
        with ``include_partial``: :mod:`.partial`), or the archs a one-shot run exported, best first (its
        ``EXPORTED_ARCHS`` (10) best; ``strategy.export_top_models(k)`` has more).
        Nothing to export (no trial ran yet, none succeeded, none reached a scheduler's full budget):
        :class:`~nasx.experiment.results.summary.NoResultError` says why (with failures: how many, their most
        common error and a hint), so ``(best,) = exp.export_top_models()`` never unpacks an empty list."""
        check_int("top_k", top_k, minimum=1, allow_none=False)
        if formatter not in ("dict", "instance"):
            raise ValueError(f"formatter must be 'dict' or 'instance', got {formatter!r}")
        archs = [t.arch for t in self._top_trials(top_k, include_partial)]
        if formatter == "instance":
            return [self.model_space.freeze(arch) for arch in archs]
        return archs

    def load_model(
        self, trial: int | str = "best", arch: dict[str, Any] | None = None
    ) -> nn.Module:
        """The trained model of a kept trial (``keep_weights``), or for a one-shot search the
        subnet of ``arch`` with its inherited weights: :func:`nasx.experiment.load_model`."""
        return loading.load_model(self.workdir, trial, arch=arch, model_space=self.model_space)

    def kept_weights(self) -> list[Any]:
        """The trials whose weights are kept (:class:`~nasx.experiment.storage.weights.KeptWeights`)."""
        return weights.kept_weights(self.workdir)

    def export_top_trials(
        self, top_k: int = 1, *, include_partial: bool = False
    ) -> list[dict[str, Any]]:
        """The ``top_k`` best trials as ``{'id', 'arch', 'hparams', 'metric', 'metrics'}`` dicts.

        ``arch`` holds the model's labels (``model_context(arch)`` / ``space.freeze(arch)``
        rebuild the model), ``hparams`` the evaluator's (``freeze_evaluator(evaluator,
        hparams)`` rebuilds the evaluator; empty when it has no choices): together they are
        what :meth:`rerun_trial` runs again. JSON-serialisable. ``include_partial`` and
        :class:`~nasx.experiment.results.summary.NoResultError`: as above."""
        check_int("top_k", top_k, minimum=1, allow_none=False)
        keys = ("id", "arch", "hparams", "metric", "metrics")
        return [{k: getattr(t, k) for k in keys} for t in self._top_trials(top_k, include_partial)]

    def rerun_trial(self, trial_id: int) -> dict[str, float]:
        """Run trial ``trial_id`` again in this process, as the experiment ran it; its metrics.

        The model is rebuilt from the trial's ``arch``, the evaluator made again with its
        ``hparams``, and the random generators seeded as the experiment seeded them (``seed +
        trial id`` when the experiment has a ``seed``), so a deterministic evaluation gives the
        stored metric again. Raises RuntimeError with the trial's error when it fails.
        """
        trial = next((t for t in self._all_trials() if t.id == trial_id), None)
        if trial is None:
            raise KeyError(f"no trial {trial_id} in {self.workdir}")
        builder = ModelBuilder.from_space(self.model_space) if self.build_model else no_model
        return rerun(builder, self.evaluator, trial, self.seed)

    def pareto_front(self, objectives: Any = ("default",)) -> list[Trial]:
        """The trials no other trial beats on every objective (``{'accuracy': 'maximize',
        'latency_ms': 'minimize'}`` or ``['accuracy', '-latency_ms']``); see
        :mod:`nasx.experiment.results.pareto` (``export_front`` writes it to CSV or JSON)."""
        from nasx.experiment.results.pareto import pareto_front

        return pareto_front(self._all_trials(), objectives)

    # ----------------------------------------------------------------- helpers
    def _settings(self) -> RunSettings:
        """What the run's helpers read of this experiment, frozen (:class:`RunSettings`)."""
        return RunSettings.of(self)

    def _default_execution(self) -> str:
        wants_ray = self.ray_address is not None or self.trial_resources is not None
        return settings.default_execution(self.max_concurrent_trials, self.trial_timeout, wants_ray)

    def _top_trials(self, top_k: int, include_partial: bool) -> list[Trial]:
        """:func:`~nasx.experiment.results.partial.top_trials`, or :class:`NoResultError` saying why
        there is none (no trial ran, none succeeded, none reached the full budget)."""
        ranked = top_trials(self._settings(), top_k, include_partial)
        if not ranked:
            why = nothing_to_export(
                self._all_trials(), self.workdir, self.direction, self.scheduler
            )
            raise NoResultError(why)
        return ranked

    def _all_trials(self) -> list[Trial]:
        return load_trials(self.workdir) if TrialStore.exists(self.workdir) else []

    def _repr_html_(self) -> str:
        """The experiment in a notebook: space, strategy, workdir, status counts, best trial, trials."""
        from nasx.experiment.display.html import experiment_html

        return experiment_html(self, self._all_trials())

    def __repr__(self) -> str:
        return f"NasExperiment({type(self.model_space).__name__}, strategy={self.strategy!r}, workdir='{self.workdir}')"
