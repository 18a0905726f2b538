"""Which progress display a run shows: the terminal's (:mod:`~nasx.experiment.display.progress`) or, in a
Jupyter kernel, refreshing HTML (:mod:`~nasx.experiment.display.notebook`).

The choice lives here, above both displays, so neither module imports the other's subclass.

    >>> import types
    >>> settings = types.SimpleNamespace(max_trials=3, direction='maximize', progress=False, workdir='.')
    >>> type(progress_for(settings, [])).__name__
    'Progress'
"""

from __future__ import annotations

from typing import IO, Any, cast

from nasx.experiment.display import notebook
from nasx.experiment.display.progress import BudgetCount, Discard, Progress, announce
from nasx.experiment.settings import RunSettings
from nasx.trial import FAILED, PAUSED, PRUNED, SUCCEEDED, Trial, best_trials


def progress_for(settings: RunSettings, stored: list[Trial]) -> Progress:
    """The progress display of a run with ``settings`` (its RunSettings; silent with
    ``progress=False``), starting from its stored trials."""
    # with a scheduler, a paused or pruned trial is a trial done (a promotion is not a new one)
    finished = [t for t in stored if t.status in (SUCCEEDED, FAILED, PAUSED, PRUNED)]
    ranked = best_trials(finished, settings.direction, 1)
    best = ranked[0].metric if ranked else None
    if finished and settings.progress:  # before the bar, which then owns the line
        announce(
            f"resuming the experiment in {settings.workdir}: {len(finished)} "
            f"{'trial' if len(finished) == 1 else 'trials'} already done"
            + (f" (best metric {best:.4f})" if best is not None else "")
        )
    # In Jupyter, an HTML display refreshed in place (stderr is no terminal there).
    cls = notebook.NotebookProgress if settings.progress and notebook.in_notebook() else Progress
    return cls(
        settings.max_trials,
        settings.direction,
        done=len(finished),
        best=best,
        budget=budget_count(getattr(settings, "scheduler", None), settings.max_trials, stored),
        # Silence discards the lines (a StringIO would keep one per trial for the whole run).
        stream=None if settings.progress else cast(IO[str], Discard()),
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
