"""Multi-trial experiments: ``NasExperiment``, trial storage and execution (sequential, process pool, Ray).

Names load lazily so ``import nasx.experiment`` stays cheap.

    >>> from nasx.experiment import NasExperiment
    >>> NasExperiment.__name__
    'NasExperiment'
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY_NAMES = {
    "NasExperiment": "nasx.experiment.experiment",
    "parse_duration": "nasx.experiment.experiment",
    "ExperimentDirError": "nasx.experiment.storage",
    "TrialStore": "nasx.experiment.storage",
    "load_trials": "nasx.experiment.storage",
    "TrialTable": "nasx.experiment.table",
}

__all__ = list(_LAZY_NAMES)


def __getattr__(name: str) -> Any:
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nasx.experiment' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
