"""Where ``inherit_weights`` and ``subnet`` were before the supernet package: a re-export of
:mod:`nasx.strategy.oneshot.supernet.inherit`, kept so that existing imports keep working."""

from .supernet.inherit import fixed_state_keys, inherit_weights, subnet

__all__ = ["fixed_state_keys", "inherit_weights", "subnet"]
