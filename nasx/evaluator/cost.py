"""Score a model on accuracy and cost together: a metrics dict with params, FLOPs and latency.

:class:`CostEvaluator` wraps any evaluator (``Classification``, a ``Lightning`` evaluator, a
function) and returns ``{'default': objective, 'accuracy': ..., 'params': ..., 'macs': ...,
'flops': ..., 'latency_ms': ...}``, what Vega's ModelStatistics callback adds to a trial. Trials
then keep every metric side by side (``trial.metrics``), a Pareto front can be taken over them
(:func:`nasx.experiment.results.pareto.pareto_front`), and ``objective=`` picks what the search ranks by,
such as the MnasNet reward (:class:`~nasx.hardware.reward.MnasNetReward`). Any evaluator's
``with_cost(input_shape, ...)`` builds one around it: ``Classification(...).with_cost((3, 32, 32),
latency=table)``.

Why a wrapper rather than a cost inside ``Lightning.evaluate``: the cost is a property of the
model, not of its training, so one wrapper gives it to every kind of evaluator (a function,
``Lightning``, ``Classification``, a benchmark lookup) alike; it needs an input shape and a latency
model (a table for this device, or a measurement) that a training loop has no reason to know; it
is computed before training, so a trial whose training fails still records what the model
cost; and ``Lightning.evaluate`` keeps returning the one metric it was asked for, as NNI's does,
so code written against it is unchanged.

    >>> import torch.nn as nn
    >>> from nasx.hardware import MnasNetReward
    >>> ev = CostEvaluator(lambda model: 0.8, input_shape=(10,),
    ...                    latency=lambda model, shape: 20.0,
    ...                    objective=MnasNetReward(target=10.0, constraint='hard'))
    >>> ev.evaluate(nn.Linear(10, 5))
    {'default': 0.4, 'accuracy': 0.8, 'params': 55, 'macs': 50, 'flops': 100, 'latency_ms': 20.0}
"""

from __future__ import annotations

# The class is defined in base.py, beside Evaluator.with_cost that builds it (one module, so the
# two do not import each other); this is its documented home.
from .base import CostEvaluator as CostEvaluator

__all__ = ["CostEvaluator"]
