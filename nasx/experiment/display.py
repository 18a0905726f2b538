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

from nasx.trial import FAILED, SUCCEEDED, Trial, best_trials

from . import notebook
from .progress import Discard, Progress, announce


def progress_for(exp: Any, stored: list[Trial]) -> Progress:
    """The progress display of a run of ``exp`` (a NasExperiment; silent with
    ``progress=False``), starting from its stored trials."""
    finished = [t for t in stored if t.status in (SUCCEEDED, FAILED)]
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
        # Silence discards the lines (a StringIO would keep one per trial for the whole run).
        stream=None if exp.progress else cast(IO[str], Discard()),
    )
