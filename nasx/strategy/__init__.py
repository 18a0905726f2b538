"""Search strategies. Every name loads lazily, so ``import nasx.strategy`` stays light.

    >>> from nasx.strategy import DARTS
    >>> DARTS.is_one_shot
    True
"""
from __future__ import annotations

import importlib
from typing import Any

# name -> module defining it (each branch adds its own names).
_LAZY = {
    "DARTS": "nasx.strategy.oneshot.darts",
    "GumbelDARTS": "nasx.strategy.oneshot.darts",
    "ENAS": "nasx.strategy.oneshot.enas",
    "RandomOneShot": "nasx.strategy.oneshot.random_oneshot",
    "Proxyless": "nasx.strategy.oneshot.proxyless",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nasx.strategy' has no attribute {name!r}; known: {sorted(_LAZY)}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
