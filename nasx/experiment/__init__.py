"""Multi-trial experiments: ``NasExperiment``, trial storage and execution (sequential, process pool, Ray).

Names load lazily so ``import nasx.experiment`` stays cheap.

    >>> from nasx.experiment import NasExperiment
    >>> NasExperiment.__name__
    'NasExperiment'
"""

from __future__ import annotations

from nasx._lazy import lazy_attributes

_LAZY_NAMES = {
    "NasExperiment": "nasx.experiment.experiment",
    "parse_duration": "nasx.experiment.experiment",
    "ExperimentDirError": "nasx.experiment.storage",
    "TrialStore": "nasx.experiment.storage",
    "load_trials": "nasx.experiment.storage",
    "TrialTable": "nasx.experiment.table",
    "Filter": "nasx.experiment.filters",
    "ParamCountFilter": "nasx.experiment.filters",
}

__all__ = list(_LAZY_NAMES)


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())
