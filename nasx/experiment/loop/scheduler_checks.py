"""Whether an experiment can drive a multi-fidelity scheduler: :func:`check_scheduler` refuses,
by name, a scheduler the experiment's strategy, evaluator or execution cannot serve, and
:func:`can_continue` says whether its evaluator continues a promoted trial from a checkpoint
(:class:`~nasx.experiment.loop.scheduled.ScheduledRun` then gives each job one) or is trained again
from scratch (:func:`warn_restarted` says so, once a run).
"""

from __future__ import annotations

import logging
from typing import Any

from nasx.evaluator.base import accepts_parameter
from nasx.experiment.schedulers.base import Scheduler
from nasx.experiment.settings import (
    EXECUTIONS,  # every execution sends reports and waits for the answer
)

_log = logging.getLogger("nasx.experiment")

__all__ = ["EXECUTIONS", "budget_taker", "can_continue", "check_scheduler", "warn_restarted"]


def check_scheduler(
    scheduler: Any, evaluator: Any, one_shot: bool, execution: str
) -> Scheduler | None:
    """``scheduler``, refused by name when the experiment cannot drive it (None passes).

    >>> check_scheduler(None, lambda model: 1.0, False, 'sequential')
    >>> from nasx.experiment.schedulers import ASHA
    >>> check_scheduler(ASHA(), lambda model, budget: 1.0, False, 'sequential')
    ASHA(min_budget=1, max_budget=27, eta=3, mode='promotion')
    >>> check_scheduler(ASHA(), lambda model: 1.0, False, 'sequential')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: scheduler=ASHA(...) gives each trial a budget, but the evaluator <lambda> declares...
    """
    if scheduler is None:
        return None
    if not isinstance(scheduler, Scheduler):
        raise TypeError(
            "scheduler must be a nasx.experiment.schedulers.Scheduler (ASHA, Hyperband, BOHB, "
            f"MedianStopping, ...), got {type(scheduler).__name__}"
        )
    if one_shot:
        raise ValueError(
            f"scheduler={scheduler!r} needs a multi-trial strategy: a one-shot strategy trains "
            "one supernet, there are no trials to stop early or promote"
        )
    fn = budget_taker(evaluator)
    if not accepts_parameter(fn, "budget"):
        name = getattr(fn, "__qualname__", type(evaluator).__name__)
        raise TypeError(
            f"scheduler={scheduler!r} gives each trial a budget, but the evaluator {name} "
            "declares no `budget` parameter: write evaluate(model, report=None, budget=None) "
            "(nasx's Lightning, Classification and Regression train `budget` epochs) or "
            "fn(model, budget, report)"
        )
    if len(scheduler.directions) > 1 and scheduler.goal.objectives is None:
        raise ValueError(
            f"scheduler={scheduler!r} ranks {len(scheduler.directions)} objectives "
            f"(directions={list(scheduler.directions)}) but does not say which metrics: an "
            "evaluator reports a metrics dict, so name them with objectives=['accuracy', "
            "'-latency_ms'] (or {'accuracy': 'maximize', 'latency_ms': 'minimize'}) instead"
        )
    if execution not in EXECUTIONS:
        raise NotImplementedError(
            f"scheduler= runs with execution in {EXECUTIONS}, not {execution!r}: its workers "
            "must send each report to the scheduler and wait for the answer "
            "(docs/multi_fidelity.md)"
        )
    return scheduler


def can_continue(evaluator: Any) -> bool:
    """Whether ``evaluator`` continues a promoted trial from its checkpoint: it (or the function
    a wrapper calls) declares a ``checkpoint`` parameter.

    >>> can_continue(lambda model, budget, checkpoint: 1.0), can_continue(lambda model, budget: 1.0)
    (True, False)
    """
    return accepts_parameter(budget_taker(evaluator), "checkpoint")


def budget_taker(evaluator: Any) -> Any:
    """The function that must declare ``budget``: a wrapper's inner one (FunctionalEvaluator's
    ``fn``, CostEvaluator's ``evaluator``) passes ``budget`` on only when that one declares it."""
    from nasx.evaluator.base import CostEvaluator
    from nasx.evaluator.functional import FunctionalEvaluator

    if isinstance(evaluator, FunctionalEvaluator):
        return evaluator.fn
    if isinstance(evaluator, CostEvaluator):
        return budget_taker(evaluator.evaluator)
    return getattr(evaluator, "evaluate", evaluator)


def warn_restarted(evaluator: Any, trial: int, start: Any, budget: Any) -> None:
    """Log that promoted trials are trained again from scratch (``trial``: from 0, not from
    ``start``, up to ``budget``), naming ``evaluator`` (None: unknown), which cannot continue."""
    name = _name(budget_taker(evaluator)) if evaluator is not None else "?"
    _log.warning(
        "promoted trials are trained again from scratch up to their new budget (trial %d: "
        "0 -> %s, not %s -> %s): the evaluator %s cannot continue from a checkpoint (it "
        "declares no `checkpoint` parameter, docs/multi_fidelity.md)",
        trial,
        budget,
        start,
        budget,
        name,
    )


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__name__)
