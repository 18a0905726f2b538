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

from nasx._lazy import lazy_attributes

# Public name -> module that defines it (each branch adds its own strategies here).
_LAZY_NAMES = {
    "Strategy": "nasx.strategy.base",
    "MultiTrialStrategy": "nasx.strategy.base",
    "OneShotStrategy": "nasx.strategy.oneshot.base",
    "OneShotEvaluator": "nasx.strategy.oneshot.base",
    "Random": "nasx.strategy.random",
    "GridSearch": "nasx.strategy.grid",
    "RegularizedEvolution": "nasx.strategy.evolution",
    "PolicyGradient": "nasx.strategy.policy_gradient",
    "PolicyBasedRL": "nasx.strategy.policy_gradient",  # NNI 3.0 name
    "TPE": "nasx.strategy.tpe",
    "LocalSearch": "nasx.strategy.local_search",
    "Filter": "nasx.experiment.filters",  # re-exported: filters are experiment policy
    "ParamCountFilter": "nasx.experiment.filters",
    # one-shot
    "DARTS": "nasx.strategy.oneshot.darts",
    "GumbelDARTS": "nasx.strategy.oneshot.darts",
    "ENAS": "nasx.strategy.oneshot.enas",
    "RandomOneShot": "nasx.strategy.oneshot.random_oneshot",
    "Proxyless": "nasx.strategy.oneshot.proxyless",
}

__all__ = list(_LAZY_NAMES)


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())
