"""A one-shot run of a NasExperiment: the strategy trains its supernet in the workdir and exports.

The workdir gets ``oneshot.json`` (how to rebuild the supernet, :func:`~nasx.experiment.weights.
record_oneshot`) before training, so that a checkpoint written mid-run is loadable too, and again
with the exported arch once the strategy has finished.
"""

from __future__ import annotations

import logging
from typing import Any

from nasx.evaluator.hparams import evaluator_choices

from .storage import remove_experiment

_log = logging.getLogger("nasx.experiment")


def run_one_shot(exp: Any, fresh: bool) -> str:
    """Run ``exp``'s one-shot strategy (``exp``: a NasExperiment); the stop reason.
    ``fresh``: the first run of this object (``overwrite`` deletes the stored experiment)."""
    hparam_labels = list(evaluator_choices(exp.evaluator))
    if hparam_labels:
        raise ValueError(
            f"the evaluator has choices among its arguments "
            f"({', '.join(map(repr, hparam_labels))}), which a one-shot "
            f"strategy ({type(exp.strategy).__name__}) cannot search: fix them with "
            "nasx.evaluator.hparams.freeze_evaluator(evaluator, {label: value, ...}), or "
            "search them with a multi-trial strategy"
        )
    if exp.overwrite and fresh:
        remove_experiment(exp.workdir)
    exp.workdir.mkdir(parents=True, exist_ok=True)
    _record(exp, exported=False)  # a checkpoint mid-run is loadable too
    exp.strategy.run(exp.model_space, exp.evaluator, exp.workdir)
    _record(exp, exported=True)
    return "the one-shot strategy finished"


def _record(exp: Any, exported: bool) -> None:
    from .weights import record_oneshot

    archs = None
    if exported:
        try:
            archs = exp.strategy.export_top_models(1)
        except Exception as e:  # noqa: BLE001 - the record is a convenience; the run succeeded
            _log.warning("could not record the exported arch in oneshot.json: %s", e)
    try:
        record_oneshot(exp.workdir, exp.model_space, exp.strategy, archs)
    except (TypeError, OSError) as e:
        _log.warning("could not write oneshot.json (load_model needs model_space=): %s", e)
