"""A progress display for Jupyter: one HTML block that refreshes in place as trials finish.

``NasExperiment.run()`` uses it instead of the terminal bar when it runs inside a Jupyter kernel
(stderr is not a terminal there, so the terminal reporter would print one line per trial). It
shows a progress bar, the best metric so far, running and failed trials, elapsed and remaining
time, and the last few trials.

    >>> from nasx.trial import Trial
    >>> shown = []
    >>> p = NotebookProgress(3, 'maximize', show=shown.append)
    >>> p.trial_started()
    >>> p.trial_finished(Trial(0, {'w': 8}, 'succeeded', metric=0.5, duration=1.0))
    >>> p.close('max_trials (3) reached')
    >>> 'trials 1/3' in shown[-1] and 'best 0.5000' in shown[-1] and 'max_trials (3) reached' in shown[-1]
    True
"""

from __future__ import annotations

import html
import io
import time
from collections.abc import Callable
from typing import Any

from nasx._notebook import in_notebook as in_notebook  # re-exported: display.py, oneshot_run.py
from nasx.experiment.display.html import progress_html
from nasx.experiment.display.progress import Progress, format_seconds
from nasx.trial import Trial

LAST_TRIALS = 5


def _ipython_display(first: str) -> Callable[[str], None]:
    from IPython import display as ipython_display

    shown: Any = ipython_display  # IPython's display functions carry no type hints
    handle = shown.display(shown.HTML(first), display_id=True)
    return lambda new: handle.update(shown.HTML(new))


class NotebookProgress(Progress):
    """:class:`~nasx.experiment.display.progress.Progress` drawn as refreshing HTML.

    ``show`` receives each new HTML string (default: an IPython display updated in place).
    """

    def __init__(
        self,
        total: int | None,
        direction: str = "maximize",
        *,
        show: Callable[[str], None] | None = None,
        **kwargs: Any,
    ):
        kwargs.pop("stream", None)
        kwargs.pop("bar", None)
        super().__init__(total, direction, stream=io.StringIO(), bar=False, **kwargs)
        self.reason: str | None = None
        self.last: list[str] = []
        self._last_draw = 0.0
        self._update: Callable[[str], None] = (
            show if show is not None else _ipython_display(self.html())
        )

    def html(self) -> str:
        left = self.time_left()
        out = progress_html(
            self.done,
            self.total,
            self.running,
            self.failed,
            self.best,
            format_seconds(time.monotonic() - self.started),
            format_seconds(left) if left is not None else None,
            budget=None if self.budget is None else self._budget_shown(),
        )
        if self.last:
            out += '<div style="font-size:12px;color:#555">' + "<br>".join(self.last) + "</div>"
        if self.reason:
            out += f'<div style="font-size:12px">stopped: {html.escape(self.reason)}</div>'
        return out

    def _budget_shown(self) -> tuple[float, float | None, str]:
        assert self.budget is not None
        return self.budget.done, self.budget.total, self.budget.text()

    def budget_reached(self, units: float) -> None:
        super().budget_reached(units)
        self._draw()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_draw > 0.2:  # many tiny trials: do not flood the front end
            self._last_draw = now
            self._update(self.html())

    def trial_started(self) -> None:
        super().trial_started()
        self._draw()

    def _line(self, trial: Trial) -> None:  # called by Progress.trial_finished
        what = f"trial {trial.id} {trial.status}"
        if trial.metric is not None:
            what += f": {trial.metric:.4f}"
            if trial.budget is not None:  # a scheduler's trial: the budget it reached
                what += f" at budget {trial.budget}"
            if trial.error:  # why a scheduler pruned it (a broken constraint, not promoted)
                what += f" ({trial.error.splitlines()[0][:100]})"
        elif trial.error:
            what += f": {trial.error.splitlines()[0][:100]}"
        self.last = (self.last + [html.escape(what)])[-LAST_TRIALS:]
        self._draw(force=True)

    def close(self, reason: str | None = None) -> None:
        if reason:
            self.reason, self.stopped = reason, True  # no time left is shown after the end
        self._draw(force=True)
