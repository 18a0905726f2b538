"""A one-shot run of a NasExperiment, stored as every run is: ``nasx.db`` with the meta and rows.

Before the strategy trains, the workdir's store is opened by the same
:func:`~nasx.experiment.storage.identity.open_store` as a multi-trial run's: a new store gets the meta
(space, strategy, evaluator fingerprints, ``kind: 'one-shot'``, and under ``'oneshot'`` how to
rebuild the supernet from its checkpoint, so that a checkpoint written mid-run is loadable too);
a resume is checked against the stored meta and refused naming what differs. Settings a
one-shot search may change on resume (``max_epochs`` and the other
:data:`~nasx.strategy.oneshot.checkpoint.FREE_EVALUATOR_SETTINGS`, how often it checkpoints)
are left out of that meta: training longer is how a one-shot search goes on.

When the strategy has finished, the store holds one row per exported arch, best first (at most
:data:`EXPORTED_ARCHS`): ``succeeded``, no ``metric`` (the strategy ranks them; the row's id is
the rank), ``metrics`` what the strategy knows of each (``arch_probability`` for DARTS-like
strategies, ``supernet_score`` for RandomOneShot; see
:meth:`~nasx.strategy.oneshot.base.BaseOneShotStrategy.export_scores`), and the run's start and
end times. ``nasx show/export/model/plot/serve`` read these rows as they read trials.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from nasx.evaluator.hparams import evaluator_choices
from nasx.experiment.results.loading import supernet_record
from nasx.experiment.settings import RunSettings
from nasx.experiment.storage.identity import experiment_meta, open_store
from nasx.experiment.storage.migrate import is_legacy_one_shot, migrate_one_shot
from nasx.experiment.storage.store import ExperimentDirError, TrialStore, remove_experiment
from nasx.space import search_space
from nasx.strategy.oneshot.base import BaseOneShotStrategy
from nasx.trial import SUCCEEDED, Trial

_log = logging.getLogger("nasx.experiment")

#: How many exported archs a one-shot run stores (its ``top_k`` best, best first).
EXPORTED_ARCHS = 10


def run_one_shot(
    settings: RunSettings, fresh: bool, on_open: Callable[[], None] = lambda: None
) -> str:
    """Run the one-shot strategy of ``settings`` (a run's RunSettings) and store what it exported;
    the stop reason. ``fresh``: the first run of this object (``overwrite`` deletes the stored
    experiment, ``resume`` is needed to continue one); ``on_open`` is called once the store is
    open (a later run of the object continues it, even if this one is interrupted)."""
    _refuse_evaluator_choices(settings)
    store = _open(settings, one_shot_meta(settings), fresh)
    on_open()
    if isinstance(settings.strategy, BaseOneShotStrategy):
        # the store has accepted (and logged) other settings; the checkpoint's check follows it
        settings.strategy.resume_other_settings = settings.resume == "force"
        settings.strategy.display_callback = _notebook_display(settings)
    try:
        started = time.time()
        settings.strategy.run(settings.model_space, settings.evaluator, settings.workdir)
        archs = settings.strategy.export_top_models(EXPORTED_ARCHS)
        store.replace_trials(exported_rows(settings.strategy, archs, started, time.time()))
    finally:
        store.close()
    return "the one-shot strategy finished"


def one_shot_meta(settings: RunSettings) -> dict[str, Any]:
    """What identifies a one-shot run: :func:`~nasx.experiment.storage.identity.experiment_meta` less
    the settings that may change on resume, plus ``kind`` and how to rebuild the supernet."""
    # imported here: checkpoint.py imports Lightning, which `import nasx.experiment` must not
    from nasx.strategy.oneshot.checkpoint import FREE_EVALUATOR_SETTINGS, FREE_STRATEGY_SETTINGS

    meta = experiment_meta(
        settings.model_space,
        settings.strategy,
        settings.evaluator,
        settings.direction,
        search_space(settings.model_space),
    )
    for key, free in (
        ("strategy_config", FREE_STRATEGY_SETTINGS),
        ("evaluator_config", FREE_EVALUATOR_SETTINGS),
    ):
        meta[key] = {k: v for k, v in meta[key].items() if k not in free}
    meta["kind"] = "one-shot"
    meta["oneshot"] = supernet_record(settings.model_space, settings.strategy)
    return meta


def exported_rows(
    strategy: Any, archs: list[dict[str, Any]], started: float, ended: float
) -> list[Trial]:
    """One ``succeeded`` row per exported arch, best first; ``metrics`` from the strategy's
    :meth:`~nasx.strategy.oneshot.base.BaseOneShotStrategy.export_scores` (none for a strategy
    that only has the two methods of the protocol)."""
    if isinstance(strategy, BaseOneShotStrategy):
        scores = strategy.export_scores(archs)
    else:
        scores = [{} for _ in archs]
    return [
        Trial(
            i,
            dict(arch),
            SUCCEEDED,
            metrics=dict(score),
            intermediates=[],
            start_time=started,
            end_time=ended,
            duration=ended - started,
        )
        for i, (arch, score) in enumerate(zip(archs, scores, strict=True))
    ]


def _open(settings: RunSettings, meta: dict[str, Any], fresh: bool) -> TrialStore:
    """The workdir's store for this run; an older release's one-shot workdir (a checkpoint, no
    ``nasx.db``) is upgraded first when the run resumes it, and refused otherwise."""
    continuing = not fresh
    if settings.overwrite and fresh:
        remove_experiment(settings.workdir)
    if is_legacy_one_shot(settings.workdir):
        if not (settings.resume or continuing):
            raise ExperimentDirError(
                f"{settings.workdir} holds a one-shot search (checkpoints/last.ckpt) written by an "
                "older nasx or by strategy.run alone; pass resume=True to continue it (its "
                "nasx.db is written first), overwrite=True to start afresh, or choose another "
                "workdir (nothing was changed)"
            )
        migrate_one_shot(settings.workdir, meta).close()
    store, _ = open_store(
        settings.workdir, meta, resume=settings.resume, overwrite=False, continuing=continuing
    )
    return store


def _notebook_display(settings: RunSettings) -> Any:
    """In a Jupyter kernel (with ``progress``): the refreshing HTML progress multi-trial runs
    show, as a Lightning callback; elsewhere None (Lightning's own bar, as configured)."""
    from nasx.experiment.display.notebook import in_notebook

    if not (settings.progress and in_notebook()):
        return None
    from nasx.experiment.display.one_shot import (
        NotebookSearchProgress,  # imports Lightning: only here
    )

    return NotebookSearchProgress(probs=settings.strategy.export_probs)


def _refuse_evaluator_choices(settings: RunSettings) -> None:
    hparam_labels = list(evaluator_choices(settings.evaluator))
    if hparam_labels:
        raise ValueError(
            f"the evaluator has choices among its arguments "
            f"({', '.join(map(repr, hparam_labels))}), which a one-shot "
            f"strategy ({type(settings.strategy).__name__}) cannot search: fix them with "
            "nasx.evaluator.hparams.freeze_evaluator(evaluator, {label: value, ...}), or "
            "search them with a multi-trial strategy"
        )
