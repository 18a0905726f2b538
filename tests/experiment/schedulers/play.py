"""A scheduler driven by hand, one job at a time: what its resume tests replay."""

from __future__ import annotations

from collections.abc import Callable


def play(s, start: int, stop: int, value: Callable[[int, int], float], every_budget=False):
    """Run jobs ``start``..``stop - 1`` of scheduler ``s`` (new trials get id ``100 + step``),
    each reporting ``value(trial, budget)`` at the job's budget, or at every budget it trains
    (``every_budget``); returns ``(assignment, budget, decision)`` for each report."""
    out = []
    for step in range(start, stop):
        job = s.assign()
        trial = job.trial if job.trial is not None else 100 + step
        if job.trial is None:
            s.started(trial, job)
        budgets = range(job.from_budget + 1, job.budget + 1) if every_budget else [job.budget]
        for budget in budgets:
            out.append((job, budget, s.report(trial, budget, value(trial, budget))))
    return out
