"""Trials below the full budget: ranking them, and saying so when no trial reached it.

With a multi-fidelity scheduler only the trials that reached ``max_budget`` are ``succeeded``,
and only they are ranked by ``export_top_models`` (as Optuna's ``best_trial`` ranks complete
trials only): a paused or pruned trial's metric was measured after fewer epochs, so it is not
comparable with a complete one. A run can end with none (ASHA with fewer trials than its rungs
need, a run stopped early); then :func:`no_full_budget` says why, once at the end of the run and
in the error ``export_top_models`` raises when it has nothing to export, and
``include_partial=True`` ranks the trials by the budget they reached (:func:`rank_by_budget`):
the best at the highest budget first, the rule of Hyperband's and BOHB's own pick (and of
:func:`~nasx.experiment.schedulers.simulate`).

    >>> from nasx.trial import Trial
    >>> trials = [Trial(0, {'w': 1}, 'paused', metric=0.5, budget=1),
    ...           Trial(1, {'w': 2}, 'paused', metric=0.6, budget=3),
    ...           Trial(2, {'w': 3}, 'paused', metric=0.9, budget=1)]
    >>> [t.id for t in rank_by_budget(trials, 'maximize')]
    [1, 2, 0]
    >>> print(no_full_budget(trials, 'maximize', max_budget=9))  # doctest: +NORMALIZE_WHITESPACE
    no trial reached the full budget (9): the highest reached was 3 (trial 1, metric 0.6), so
    export_top_models() ranks none; run more trials (or resume a stopped run), or rank the
    trials by the budget they reached with export_top_models(include_partial=True)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import Any

from nasx.experiment.loop.scheduled import CONSTRAINT_BROKEN
from nasx.experiment.settings import RunSettings
from nasx.experiment.storage.store import TrialStore, best_stored, load_trials
from nasx.trial import PAUSED, PRUNED, SUCCEEDED, Trial, best_trials

__all__ = ["end_of_run", "no_full_budget", "rank_by_budget", "top_trials"]

_log = logging.getLogger("nasx.experiment")


def _partial(trial: Trial) -> bool:
    """A result below the full budget worth ranking: paused, or pruned for its rank (not for a
    broken constraint: that arch is out of bounds), with a metric."""
    return (
        trial.status in (PAUSED, PRUNED)
        and trial.metric is not None
        and not (trial.error or "").startswith(CONSTRAINT_BROKEN)
    )


def rank_by_budget(
    trials: Iterable[Trial], direction: str, top_k: int | None = None
) -> list[Trial]:
    """The succeeded trials and those stopped below the full budget (paused, or pruned for
    their rank), the highest budget first and, at each budget, best first (as
    :func:`~nasx.trial.best_trials` ranks them); a trial without a budget (a run without a
    scheduler: its evaluator's whole training) counts as the highest. Trials a constraint
    pruned, failed and rejected ones are left out. The first ``top_k`` when given.

        >>> from nasx.trial import Trial
        >>> ts = [Trial(0, {}, 'succeeded', metric=0.4, budget=9),
        ...       Trial(1, {}, 'pruned', metric=0.8, budget=3, error='constraint broken ...'),
        ...       Trial(2, {}, 'pruned', metric=0.7, budget=3), Trial(3, {}, 'failed')]
        >>> [t.id for t in rank_by_budget(ts, 'maximize')]
        [0, 2]
    """
    pool = [t for t in trials if t.status == SUCCEEDED or _partial(t)]
    by_budget: dict[float, list[Trial]] = {}
    for t in pool:
        by_budget.setdefault(math.inf if t.budget is None else t.budget, []).append(t)
    ranked: list[Trial] = []
    for budget in sorted(by_budget, reverse=True):
        # best_trials ranks succeeded trials: the others are ranked as if they were
        group = {t.id: t for t in by_budget[budget]}
        seen = [Trial(t.id, {}, SUCCEEDED, metric=t.metric) for t in group.values()]
        ranked += [group[t.id] for t in best_trials(seen, direction)]
    return ranked if top_k is None else ranked[:top_k]


def no_full_budget(
    trials: Iterable[Trial], direction: str, max_budget: Any = None, scheduler: Any = None
) -> str | None:
    """Why ``export_top_models`` ranks no trial although trials ran: none reached the full
    budget ``max_budget`` (the scheduler's, when known), and what to change. None when a trial
    succeeded, or when no trial stopped below the full budget (nothing was ranked because
    nothing succeeded at all: failures say why themselves).

        >>> from nasx.experiment.schedulers import ASHA
        >>> from nasx.trial import Trial
        >>> print(no_full_budget([Trial(0, {}, 'paused', metric=0.5, budget=1)], 'maximize',
        ...                      scheduler=ASHA(1, 9, eta=3)))  # doctest: +NORMALIZE_WHITESPACE
        no trial reached the full budget (9): the highest reached was 1 (trial 0, metric 0.5), so
        export_top_models() ranks none; run more trials (or resume a stopped run: ASHA(eta=3)
        promotes the best 1/3 of a rung, so one trial reaches 9 once at least 9 trials ran), or
        rank the trials by the budget they reached with export_top_models(include_partial=True)
    """
    trials = list(trials)
    if any(t.status == SUCCEEDED for t in trials):
        return None
    partial = rank_by_budget([t for t in trials if _partial(t) and t.budget is not None], direction)
    if not partial:
        return None
    if max_budget is None and scheduler is not None:
        max_budget = scheduler.max_budget
    top = partial[0]
    full = "the full budget" if max_budget is None else f"the full budget ({max_budget})"
    more = "run more trials (or resume a stopped run"
    budgets, eta = getattr(scheduler, "budgets", None), getattr(scheduler, "eta", None)
    if isinstance(eta, int) and budgets:
        more += (
            f": {type(scheduler).__name__}(eta={eta}) promotes the best 1/{eta} of a rung, so one "
            f"trial reaches {budgets[-1]} once at least {eta ** (len(budgets) - 1)} trials ran"
        )
    return (
        f"no trial reached {full}: the highest reached was {top.budget} (trial {top.id}, metric "
        f"{top.metric:.4g}), so export_top_models() ranks none; {more}), or rank the trials by "
        "the budget they reached with export_top_models(include_partial=True)"
    )


def end_of_run(reason: str | None, store: Any, scheduler: Any, direction: str) -> str | None:
    """The stop ``reason`` a scheduled run on ``store`` (a
    :class:`~nasx.experiment.storage.store.TrialStore`) shows on its last line, with
    :func:`no_full_budget`'s warning after it (and logged) when no trial reached the full
    budget. A trial that succeeded is found by SQLite without reading the others.

        >>> end_of_run('max_trials (4) reached', None, None, 'maximize')  # no scheduler
        'max_trials (4) reached'
    """
    if scheduler is None or store.best(direction, 1):
        return reason
    note = no_full_budget(store.trials(), direction, scheduler=scheduler)
    if note is None:
        return reason
    _log.warning(note)
    return note if reason is None else f"{reason}; {note}"


def top_trials(settings: RunSettings, top_k: int, include_partial: bool = False) -> list[Trial]:
    """What ``NasExperiment.export_top_models`` and ``export_top_trials`` rank: the ``top_k``
    best succeeded trials stored in ``settings.workdir`` (SQLite ranks them without reading the
    others), or with ``include_partial`` every trial by the budget it reached
    (:func:`rank_by_budget`). None at all: ``export_top_models`` raises
    :class:`~nasx.experiment.results.summary.NoResultError` saying why (when trials stopped below the
    full budget, :func:`no_full_budget`'s note, with the budgets of ``settings.scheduler``)."""
    if not TrialStore.exists(settings.workdir):
        return []
    if include_partial:
        return rank_by_budget(load_trials(settings.workdir), settings.direction, top_k)
    return best_stored(settings.workdir, settings.direction, top_k)
