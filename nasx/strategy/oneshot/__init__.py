"""One-shot NAS: a weight-sharing supernet built from any model space, and the strategies that
train it (DARTS, GumbelDARTS, ENAS, RandomOneShot, Proxyless)."""

from .base import BaseOneShotStrategy
from .darts import DARTS, GumbelDARTS, second_order_arch_grad
from .enas import ENAS
from .proxyless import Proxyless
from .random_oneshot import RandomOneShot
from .supernet import Supernet, fixed_state_keys, inherit_weights, subnet

__all__ = [
    "BaseOneShotStrategy",
    "DARTS",
    "ENAS",
    "GumbelDARTS",
    "Proxyless",
    "RandomOneShot",
    "Supernet",
    "second_order_arch_grad",
    "fixed_state_keys",
    "inherit_weights",
    "subnet",
]
