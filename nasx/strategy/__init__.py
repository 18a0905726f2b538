"""Search strategies: multi-trial (Random, GridSearch, RegularizedEvolution, PolicyGradient, TPE,
LocalSearch)
and one-shot (DARTS, GumbelDARTS, ENAS, RandomOneShot, Proxyless).

Every name loads lazily on first use (``from nasx.strategy import Random``), so importing one
strategy never imports another's dependencies (Optuna, Lightning).

    >>> from nasx.strategy import Random
    >>> Random(seed=0).seed
    0
    >>> from nasx.strategy import DARTS
    >>> DARTS.is_one_shot
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasx._lazy import lazy_attributes

# Public name -> module that defines it (each branch adds its own strategies here).
_LAZY_NAMES = {
    "Strategy": "nasx.strategy.base",
    "MultiTrialStrategy": "nasx.strategy.base",
    "Direction": "nasx.strategy.base",  # the type of setup()'s direction
    "OneShotStrategy": "nasx.strategy.oneshot.base",
    "OneShotEvaluator": "nasx.strategy.oneshot.base",
    "TrainerSpec": "nasx.strategy.oneshot.base",  # what OneShotEvaluator's trainer is
    "OneShotModule": "nasx.strategy.oneshot.lightning",  # the LightningModule the hooks receive
    "SearchHooks": "nasx.strategy.oneshot.lightning",  # what OneShotModule reads from a strategy
    "GraphedSearchStep": "nasx.strategy.oneshot.graphed_step",  # its CUDA-graph replay
    "SearchStepModule": "nasx.strategy.oneshot.graphed_step",
    "Random": "nasx.strategy.random",
    "GridSearch": "nasx.strategy.grid",
    "RegularizedEvolution": "nasx.strategy.evolution",
    "PolicyGradient": "nasx.strategy.policy_gradient",
    "PolicyBasedRL": "nasx.strategy.policy_gradient",  # NNI 3.0 name
    "TPE": "nasx.strategy.tpe",
    "LocalSearch": "nasx.strategy.local_search",
    "Filter": "nasx.experiment.filters",  # re-exported: filters are experiment policy
    "ParamCountFilter": "nasx.experiment.filters",
    "CostFilter": "nasx.experiment.filters",
    # one-shot
    "DARTS": "nasx.strategy.oneshot.darts",
    "GumbelDARTS": "nasx.strategy.oneshot.darts",
    "ENAS": "nasx.strategy.oneshot.enas",
    "RandomOneShot": "nasx.strategy.oneshot.random_oneshot",
    "Proxyless": "nasx.strategy.oneshot.proxyless",
    "LinearTemperature": "nasx.strategy.oneshot.nni_args",  # GumbelDARTS's linear schedule
    # hardware-aware one-shot search: DARTS's cost_penalty, RandomOneShot's filter
    "CostPenalty": "nasx.strategy.oneshot.cost",
    "ArchCostRange": "nasx.strategy.oneshot.cost",
    # write your own one-shot algorithm (NNI's mutators)
    "Mutator": "nasx.strategy.oneshot.mutator",
    "RandomMutator": "nasx.strategy.oneshot.mutator",
    "Mutable": "nasx.strategy.oneshot.mutator",
}

__all__ = list(_LAZY_NAMES)


# What type checkers and IDEs see: the names of _LAZY_NAMES, imported eagerly
# by them only (tests/test_typing.py checks that the lists agree).
if TYPE_CHECKING:
    from nasx.experiment.filters import CostFilter as CostFilter
    from nasx.experiment.filters import Filter as Filter
    from nasx.experiment.filters import ParamCountFilter as ParamCountFilter
    from nasx.strategy.base import Direction as Direction
    from nasx.strategy.base import MultiTrialStrategy as MultiTrialStrategy
    from nasx.strategy.base import Strategy as Strategy
    from nasx.strategy.evolution import RegularizedEvolution as RegularizedEvolution
    from nasx.strategy.grid import GridSearch as GridSearch
    from nasx.strategy.local_search import LocalSearch as LocalSearch
    from nasx.strategy.oneshot.base import OneShotEvaluator as OneShotEvaluator
    from nasx.strategy.oneshot.base import OneShotStrategy as OneShotStrategy
    from nasx.strategy.oneshot.base import TrainerSpec as TrainerSpec
    from nasx.strategy.oneshot.cost import ArchCostRange as ArchCostRange
    from nasx.strategy.oneshot.cost import CostPenalty as CostPenalty
    from nasx.strategy.oneshot.darts import DARTS as DARTS
    from nasx.strategy.oneshot.darts import GumbelDARTS as GumbelDARTS
    from nasx.strategy.oneshot.enas import ENAS as ENAS
    from nasx.strategy.oneshot.graphed_step import GraphedSearchStep as GraphedSearchStep
    from nasx.strategy.oneshot.graphed_step import SearchStepModule as SearchStepModule
    from nasx.strategy.oneshot.lightning import OneShotModule as OneShotModule
    from nasx.strategy.oneshot.lightning import SearchHooks as SearchHooks
    from nasx.strategy.oneshot.mutator import Mutable as Mutable
    from nasx.strategy.oneshot.mutator import Mutator as Mutator
    from nasx.strategy.oneshot.mutator import RandomMutator as RandomMutator
    from nasx.strategy.oneshot.nni_args import LinearTemperature as LinearTemperature
    from nasx.strategy.oneshot.proxyless import Proxyless as Proxyless
    from nasx.strategy.oneshot.random_oneshot import RandomOneShot as RandomOneShot
    from nasx.strategy.policy_gradient import PolicyBasedRL as PolicyBasedRL
    from nasx.strategy.policy_gradient import PolicyGradient as PolicyGradient
    from nasx.strategy.random import Random as Random
    from nasx.strategy.tpe import TPE as TPE

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())
