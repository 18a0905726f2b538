"""Old home of the filters, kept so ``from nasx.strategy.filters import Filter`` still works.

Filters are experiment policy (the experiment runs them before training and decides when to stop),
so they live in :mod:`nasx.experiment.filters`; this module re-exports them lazily, so importing
``nasx.strategy`` never loads the experiment package.

    >>> from nasx.strategy.filters import ParamCountFilter
    >>> ParamCountFilter.__module__
    'nasx.experiment.filters'
"""

from __future__ import annotations

from nasx._lazy import lazy_attributes

_LAZY_NAMES = {
    "Filter": "nasx.experiment.filters",
    "ParamCountFilter": "nasx.experiment.filters",
    "CostFilter": "nasx.experiment.filters",
}

__all__ = list(_LAZY_NAMES)

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())
