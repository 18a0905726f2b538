"""One-shot NAS: a weight-sharing supernet built from any model space, and the strategies that
train it (DARTS, GumbelDARTS, ENAS, RandomOneShot, Proxyless)."""
from .inherit import fixed_state_keys, inherit_weights, subnet
from .supernet import Supernet

__all__ = ["Supernet", "fixed_state_keys", "inherit_weights", "subnet"]
