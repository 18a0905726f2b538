"""Multi-trial experiments: ``NasExperiment``, trial storage and execution (sequential, process pool, Ray).

Names load lazily so ``import nasx.experiment`` stays cheap.

    >>> from nasx.experiment import NasExperiment
    >>> NasExperiment.__name__
    'NasExperiment'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasx._lazy import lazy_attributes

_LAZY_NAMES = {
    "NasExperiment": "nasx.experiment.experiment",
    "parse_duration": "nasx.experiment.experiment",
    "ExperimentDirError": "nasx.experiment.storage",
    "NoResultError": "nasx.experiment.summary",
    "TrialStore": "nasx.experiment.storage",
    "load_trials": "nasx.experiment.storage",
    "TrialTable": "nasx.experiment.table",
    "Filter": "nasx.experiment.filters",
    "ParamCountFilter": "nasx.experiment.filters",
    "NasExperimentConfig": "nasx.experiment.nni_config",  # NNI 3.0's name
    "CostFilter": "nasx.experiment.filters",
    "pareto_front": "nasx.experiment.pareto",
    "export_front": "nasx.experiment.pareto",
    "stage2": "nasx.experiment.second_stage",
    "load_model": "nasx.experiment.loading",
    "load_supernet": "nasx.experiment.loading",
    "load_subnet": "nasx.experiment.loading",
    "kept_weights": "nasx.experiment.weights",
    # the types users meet in the signatures and results of the names above
    "StoredTrial": "nasx.experiment.stored",
    "KeptWeights": "nasx.experiment.weights",
    "NniControls": "nasx.experiment.nni_config",
    "TrialStopped": "nasx.experiment.runner",
    "WeightsError": "nasx.experiment.weights",
    "WeightsNotKeptError": "nasx.experiment.weights",
    "NoSuchTrialError": "nasx.experiment.weights",
    "CorruptWeightsError": "nasx.experiment.weights",
}

__all__ = list(_LAZY_NAMES)


# What type checkers and IDEs see: the names of _LAZY_NAMES, imported eagerly
# by them only (tests/test_typing.py checks that the lists agree).
if TYPE_CHECKING:
    from nasx.experiment.experiment import NasExperiment as NasExperiment
    from nasx.experiment.experiment import parse_duration as parse_duration
    from nasx.experiment.filters import CostFilter as CostFilter
    from nasx.experiment.filters import Filter as Filter
    from nasx.experiment.filters import ParamCountFilter as ParamCountFilter
    from nasx.experiment.loading import load_model as load_model
    from nasx.experiment.loading import load_subnet as load_subnet
    from nasx.experiment.loading import load_supernet as load_supernet
    from nasx.experiment.nni_config import NasExperimentConfig as NasExperimentConfig
    from nasx.experiment.nni_config import NniControls as NniControls
    from nasx.experiment.pareto import export_front as export_front
    from nasx.experiment.pareto import pareto_front as pareto_front
    from nasx.experiment.runner import TrialStopped as TrialStopped
    from nasx.experiment.second_stage import stage2 as stage2
    from nasx.experiment.storage import ExperimentDirError as ExperimentDirError
    from nasx.experiment.storage import TrialStore as TrialStore
    from nasx.experiment.storage import load_trials as load_trials
    from nasx.experiment.stored import StoredTrial as StoredTrial
    from nasx.experiment.summary import NoResultError as NoResultError
    from nasx.experiment.table import TrialTable as TrialTable
    from nasx.experiment.weights import CorruptWeightsError as CorruptWeightsError
    from nasx.experiment.weights import KeptWeights as KeptWeights
    from nasx.experiment.weights import NoSuchTrialError as NoSuchTrialError
    from nasx.experiment.weights import WeightsError as WeightsError
    from nasx.experiment.weights import WeightsNotKeptError as WeightsNotKeptError
    from nasx.experiment.weights import kept_weights as kept_weights

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())
