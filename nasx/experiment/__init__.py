"""Multi-trial experiments: ``NasExperiment``, trial storage and execution (sequential, process pool, Ray).

Names load lazily so ``import nasx.experiment`` stays cheap.

    >>> from nasx.experiment import NasExperiment
    >>> NasExperiment.__name__
    'NasExperiment'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasx._lazy import lazy_attributes
from nasx.experiment import _moved

_LAZY_NAMES = {
    "NasExperiment": "nasx.experiment.experiment",
    "parse_duration": "nasx.experiment.experiment",
    "ExperimentDirError": "nasx.experiment.storage.store",
    "NoResultError": "nasx.experiment.results.summary",
    "TrialStore": "nasx.experiment.storage.store",
    "load_trials": "nasx.experiment.storage.store",
    "TrialTable": "nasx.experiment.results.table",
    "Filter": "nasx.experiment.filters",
    "ParamCountFilter": "nasx.experiment.filters",
    "NasExperimentConfig": "nasx.experiment.nni.config",  # NNI 3.0's name
    "CostFilter": "nasx.experiment.filters",
    "pareto_front": "nasx.experiment.results.pareto",
    "export_front": "nasx.experiment.results.pareto",
    "stage2": "nasx.experiment.results.second_stage",
    "load_model": "nasx.experiment.results.loading",
    "load_supernet": "nasx.experiment.results.loading",
    "load_subnet": "nasx.experiment.results.loading",
    "kept_weights": "nasx.experiment.storage.weights",
    # the types users meet in the signatures and results of the names above
    "StoredTrial": "nasx.experiment.storage.stored",
    "KeptWeights": "nasx.experiment.storage.weights",
    "NniControls": "nasx.experiment.nni.config",
    "TrialStopped": "nasx.experiment.execution.runner",
    "WeightsError": "nasx.experiment.storage.weights",
    "WeightsNotKeptError": "nasx.experiment.storage.weights",
    "NoSuchTrialError": "nasx.experiment.storage.weights",
    "CorruptWeightsError": "nasx.experiment.storage.weights",
}

__all__ = list(_LAZY_NAMES)


# What type checkers and IDEs see: the names of _LAZY_NAMES, imported eagerly
# by them only (tests/test_typing.py checks that the lists agree).
if TYPE_CHECKING:
    from nasx.experiment.execution.runner import TrialStopped as TrialStopped
    from nasx.experiment.experiment import NasExperiment as NasExperiment
    from nasx.experiment.experiment import parse_duration as parse_duration
    from nasx.experiment.filters import CostFilter as CostFilter
    from nasx.experiment.filters import Filter as Filter
    from nasx.experiment.filters import ParamCountFilter as ParamCountFilter
    from nasx.experiment.nni.config import NasExperimentConfig as NasExperimentConfig
    from nasx.experiment.nni.config import NniControls as NniControls
    from nasx.experiment.results.loading import load_model as load_model
    from nasx.experiment.results.loading import load_subnet as load_subnet
    from nasx.experiment.results.loading import load_supernet as load_supernet
    from nasx.experiment.results.pareto import export_front as export_front
    from nasx.experiment.results.pareto import pareto_front as pareto_front
    from nasx.experiment.results.second_stage import stage2 as stage2
    from nasx.experiment.results.summary import NoResultError as NoResultError
    from nasx.experiment.results.table import TrialTable as TrialTable
    from nasx.experiment.storage.store import ExperimentDirError as ExperimentDirError
    from nasx.experiment.storage.store import TrialStore as TrialStore
    from nasx.experiment.storage.store import load_trials as load_trials
    from nasx.experiment.storage.stored import StoredTrial as StoredTrial
    from nasx.experiment.storage.weights import CorruptWeightsError as CorruptWeightsError
    from nasx.experiment.storage.weights import KeptWeights as KeptWeights
    from nasx.experiment.storage.weights import NoSuchTrialError as NoSuchTrialError
    from nasx.experiment.storage.weights import WeightsError as WeightsError
    from nasx.experiment.storage.weights import WeightsNotKeptError as WeightsNotKeptError
    from nasx.experiment.storage.weights import kept_weights as kept_weights

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())

# the module paths before the sub-packages (nasx.experiment.storage, ...) still import
_moved.install()
