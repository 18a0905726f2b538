"""Hardware-aware search: what an architecture costs and what that is worth.

- :mod:`~nasx.hardware.latency`: measured latency on the current device (median and spread).
- :mod:`~nasx.hardware.predictor`: :class:`LatencyTable`, per-block latencies measured once per
  device and summed.
- :mod:`~nasx.hardware.cost`: parameters, MACs and latency of an arch without training it, and
  per-candidate cost tables for one-shot penalties.
- :mod:`~nasx.hardware.reward`: the MnasNet reward and cost ranges.

    >>> from nasx.hardware import mnasnet_reward
    >>> round(mnasnet_reward(0.75, latency=80.0, target=80.0), 4)
    0.75
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasx._lazy import lazy_attributes

_LAZY_NAMES = {
    "LatencyResult": "nasx.hardware.latency",
    "measure_latency": "nasx.hardware.latency",
    "device_name": "nasx.hardware.latency",
    "LatencyTable": "nasx.hardware.predictor",
    "MissingEntryError": "nasx.hardware.predictor",
    "ArchCost": "nasx.hardware.cost",
    "arch_cost": "nasx.hardware.cost",
    "model_cost": "nasx.hardware.cost",
    "candidate_costs": "nasx.hardware.cost",
    "ShapeTrace": "nasx.hardware.shapes",  # the memo arch_cost and model_cost may share
    "mnasnet_reward": "nasx.hardware.reward",
    "MnasNetReward": "nasx.hardware.reward",
    "CostRange": "nasx.hardware.reward",
}

__all__ = list(_LAZY_NAMES)

# What type checkers and IDEs see (tests/test_typing.py checks the lists agree).
if TYPE_CHECKING:
    from nasx.hardware.cost import ArchCost as ArchCost
    from nasx.hardware.cost import arch_cost as arch_cost
    from nasx.hardware.cost import candidate_costs as candidate_costs
    from nasx.hardware.cost import model_cost as model_cost
    from nasx.hardware.latency import LatencyResult as LatencyResult
    from nasx.hardware.latency import device_name as device_name
    from nasx.hardware.latency import measure_latency as measure_latency
    from nasx.hardware.predictor import LatencyTable as LatencyTable
    from nasx.hardware.predictor import MissingEntryError as MissingEntryError
    from nasx.hardware.reward import CostRange as CostRange
    from nasx.hardware.reward import MnasNetReward as MnasNetReward
    from nasx.hardware.reward import mnasnet_reward as mnasnet_reward
    from nasx.hardware.shapes import ShapeTrace as ShapeTrace

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals())
