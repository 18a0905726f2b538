"""Which progress display a run shows: the terminal's (:mod:`~nasx.experiment.progress`) or, in a
Jupyter kernel, refreshing HTML (:mod:`~nasx.experiment.notebook`).

The choice lives here, above both displays, so neither module imports the other's subclass.

    >>> import types
    >>> exp = types.SimpleNamespace(max_trials=3, direction='maximize', progress=False, workdir='.')
    >>> type(progress_for(exp, [])).__name__
    'Progress'
"""

from __future__ import annotations

from typing import IO, Any, cast

from nasx.trial import FAILED, PAUSED, PRUNED, SUCCEEDED, Trial, best_trials

from . import notebook
from .progress import BudgetCount, Discard, Progress, announce


def progress_for(exp: Any, stored: list[Trial]) -> Progress:
    """The progress display of a run of ``exp`` (a NasExperiment; silent with
    ``progress=False``), starting from its stored trials."""
    # with a scheduler, a paused or pruned trial is a trial done (a promotion is not a new one)
    finished = [t for t in stored if t.status in (SUCCEEDED, FAILED, PAUSED, PRUNED)]
    ranked = best_trials(finished, exp.direction, 1)
    best = ranked[0].metric if ranked else None
    if finished and exp.progress:  # before the bar, which then owns the line
        announce(
            f"resuming the experiment in {exp.workdir}: {len(finished)} "
            f"{'trial' if len(finished) == 1 else 'trials'} already done"
            + (f" (best metric {best:.4f})" if best is not None else "")
        )
    # In Jupyter, an HTML display refreshed in place (stderr is no terminal there).
    cls = notebook.NotebookProgress if exp.progress and notebook.in_notebook() else Progress
    return cls(
        exp.max_trials,
        exp.direction,
        done=len(finished),
        best=best,
        budget=budget_count(getattr(exp, "scheduler", None), exp.max_trials, stored),
        # Silence discards the lines (a StringIO would keep one per trial for the whole run).
        stream=None if exp.progress else cast(IO[str], Discard()),
    )


def budget_count(scheduler: Any, max_trials: int | None, stored: list[Trial]) -> BudgetCount | None:
    """What the display counts with ``scheduler`` (None without one): the budget the stored
    trials reached, towards what the scheduler plans for ``max_trials`` trials.

    >>> from nasx.experiment.schedulers import ASHA, SuccessiveHalving
    >>> budget_count(SuccessiveHalving(1, 4, eta=2), 4, [Trial(0, {}, 'paused', budget=1)])
    BudgetCount(done=1, total=8, at_most=None)
    >>> budget_count(ASHA(1, 4, eta=2), 4, [])
    BudgetCount(done=0, total=None, at_most=16)
    """
    if scheduler is None:
        return None
    done = sum(
        t.budget for t in stored if t.budget is not None and t.finished and t.status != FAILED
    )
    if max_trials is None:
        return BudgetCount(done)
    total = scheduler.planned_budget(max_trials)
    at_most = max_trials * scheduler.max_budget if total is None else None
    return BudgetCount(done, total, at_most)
