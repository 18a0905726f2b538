"""What a person sees while an experiment runs: a bar in a terminal, one line per trial elsewhere.

In a terminal (stderr is a TTY) a tqdm bar counts finished trials and shows the best metric so
far, running and failed trials, elapsed time and the time left; when output goes to a file or a
pipe (CI, ``nohup``, a notebook's captured log) each finished trial prints one plain line instead.
tqdm comes with pytorch-lightning, so this adds no dependency.

With a multi-fidelity scheduler a trial's first job is a small part of its cost (it may be
promoted later), so the display counts **budget** (epochs by default; :class:`BudgetCount`):
the bar fills towards the budget the scheduler plans for ``max_trials`` trials when it is known
(successive halving, Hyperband, BOHB, full budget), and counts without an end, saying the most it
can be, when it depends on the results (ASHA, median stopping); trials are counted beside it.
"""

from __future__ import annotations

import io
import sys
import time
from dataclasses import dataclass
from typing import IO, Any

from nasx.trial import FAILED, PAUSED, PRUNED, REJECTED, SUCCEEDED, Trial

__all__ = ["BudgetCount", "Progress", "announce", "format_seconds"]


class Discard(io.TextIOBase):
    """A text stream that drops what is written (``progress=False``); a :class:`Progress`
    writing to one formats nothing."""

    def write(self, text: str) -> int:
        return len(text)


def announce(text: str, stream: IO[str] | None = None) -> None:
    """One line for the person running the search (stderr), outside the bar: the only other
    output of an experiment besides the display itself (nasx's library code prints nothing)."""
    print(text, file=stream if stream is not None else sys.stderr, flush=True)


def format_seconds(seconds: float) -> str:
    """A duration for people: '0.4 s', '12 s', '3 min 05 s', '2 h 01 min'.

    Example:
        >>> [format_seconds(s) for s in (0.42, 12.3, 185, 7260)]
        ['0.4 s', '12 s', '3 min 05 s', '2 h 01 min']
    """
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@dataclass
class BudgetCount:
    """Budget reached so far (each trial's largest budget, summed) and where it ends.

    Args:
        done: reached so far (by earlier runs too, on resume).
        total: what the scheduler plans in all, when it is known; else None.
        at_most: when ``total`` is unknown, the most it can be (``max_trials * max_budget``).

    >>> BudgetCount(12, 81).text(), BudgetCount(12, at_most=243).text(), BudgetCount(12).text()
    ('budget 12/81', 'budget 12 (at most 243)', 'budget 12')
    """

    done: float = 0
    total: float | None = None
    at_most: float | None = None

    def text(self) -> str:
        if self.total is not None:
            return f"budget {self.done:g}/{self.total:g}"
        if self.at_most is not None:
            return f"budget {self.done:g} (at most {self.at_most:g})"
        return f"budget {self.done:g}"


class Progress:
    """Reports an experiment's trials as they finish (see the module docstring).

    Args:
        total: trials this experiment will run in all (``max_trials``), or None when unknown.
        direction: ``'maximize'`` or ``'minimize'``: which metric is the best so far.
        done: trials that finished in earlier runs (a resumed experiment starts the bar there).
        best: the best metric among them.
        stream: where to write (default ``sys.stderr``); ``bar`` forces the bar on or off.
        budget: with a scheduler, the budget to count (:class:`BudgetCount`): the bar and the
            time left follow it, trials are counted beside it.

    Example (plain lines, as in a log file):
        >>> import io
        >>> from nasx.trial import Trial
        >>> out = io.StringIO()
        >>> p = Progress(total=None, direction='maximize', stream=out, bar=False)
        >>> p.trial_finished(Trial(0, {'w': 8}, 'succeeded', metric=0.5, duration=1.5))
        >>> p.trial_finished(Trial(1, {'w': 4}, 'succeeded', metric=0.25, duration=12.0))
        >>> print(out.getvalue().strip())
        trial 0 succeeded: metric 0.5000 (best 0.5000) in 1.5 s | 1 done
        trial 1 succeeded: metric 0.2500 (best 0.5000) in 12 s | 2 done

    With a scheduler, each line ends with the budget reached so far:
        >>> out = io.StringIO()
        >>> p = Progress(2, stream=out, bar=False, budget=BudgetCount(0, total=5))
        >>> p.budget_reached(1)
        >>> p.trial_finished(Trial(0, {'w': 8}, 'paused', metric=0.5, budget=1))
        >>> print(out.getvalue().strip())  # doctest: +ELLIPSIS
        trial 0 paused: metric 0.5000 at budget 1 | 1/2 done, about ... left | budget 1/5
    """

    def __init__(
        self,
        total: int | None,
        direction: str = "maximize",
        *,
        done: int = 0,
        best: float | None = None,
        running: int = 0,
        stream: IO[str] | None = None,
        bar: bool | None = None,
        budget: BudgetCount | None = None,
    ):
        self.total = total
        self.budget = budget
        self.budget_at_start = budget.done if budget is not None else 0
        self.direction = direction
        self.done = done
        self.done_at_start = done
        self.stopped = False  # set by close(reason): no time is left after the end
        self.best = best
        self.running = running
        self.failed = 0
        self.stream = stream if stream is not None else sys.stderr
        # progress=False: the counts are kept, nothing is formatted (a line per trial cost as
        # much as a trivial trial's SQLite writes, for a stream that drops it).
        self._silent = isinstance(self.stream, Discard)
        is_tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self._drawn = float("-inf")  # when the bar was last redrawn (monotonic)
        self._bar = self._make_bar() if (is_tty if bar is None else bar) else None

    # ------------------------------------------------------------------ events
    def trial_started(self) -> None:
        self.running += 1
        self._refresh()

    def trial_finished(self, trial: Trial) -> None:
        self.running = max(0, self.running - 1)
        if trial.status == REJECTED:
            return  # rejected archs are not trials the user waits for
        self.done += 1
        if trial.status == FAILED:
            self.failed += 1
        if trial.status == SUCCEEDED and trial.metric is not None and self._better(trial.metric):
            self.best = trial.metric
        if self._bar is not None:
            if self.budget is None:  # with a scheduler the bar counts budget_reached instead
                self._bar.update(1)
            self._refresh()
        elif not self._silent:
            self._line(trial)

    def budget_reached(self, units: float) -> None:
        """A job of a scheduled trial ended having taken it ``units`` further (epochs)."""
        if self.budget is None or not units:
            return
        self.budget.done += units
        if self._bar is not None:
            self._bar.update(units)
            self._refresh()

    def close(self, reason: str | None = None) -> None:
        """End the display; ``reason``: why the search stopped (said on one last line). A search
        that stopped before ``total`` trials ends its bar there, with no time left shown."""
        if reason:
            self.stopped = True
        if self._bar is not None:
            if reason and self._bar.total is not None and self._bar.n < self._bar.total:
                self._bar.total = self._bar.n  # no "remaining" after the end
            self._refresh(force=True)
            self._bar.close()
            self._bar = None
        if reason:
            elapsed = format_seconds(time.monotonic() - self.started)
            best = f"; best metric {self.best:.4f}" if self.best is not None else ""
            spent = f"; {self.budget.text()}" if self.budget is not None else ""
            print(
                f"search stopped after {elapsed}: {reason}{best}{spent}",
                file=self.stream,
                flush=True,
            )

    # ------------------------------------------------------------------ helpers
    def _better(self, metric: float) -> bool:
        if self.best is None:
            return True
        return metric > self.best if self.direction == "maximize" else metric < self.best

    def time_left(self) -> float | None:
        """Seconds until ``total`` trials are done (with a scheduler: until the planned budget
        is reached), from this run's pace (None: unknown yet, or the search has stopped: nothing
        is left then, whatever ``total`` said)."""
        if self.budget is not None:
            done, total, start = self.budget.done, self.budget.total, self.budget_at_start
        else:
            done, total, start = self.done, self.total, self.done_at_start
        if total is None or done == start or self.stopped:
            return None
        pace = (time.monotonic() - self.started) / (done - start)
        return max(0, total - done) * pace

    def _line(self, trial: Trial) -> None:
        what = f"trial {trial.id} {trial.status}"
        if trial.status == SUCCEEDED and trial.metric is not None:
            best = f" (best {self.best:.4f})" if self.best is not None else ""
            what += f": metric {trial.metric:.4f}{best}"
        elif trial.status in (PAUSED, PRUNED) and trial.metric is not None:  # a scheduler's
            what += f": metric {trial.metric:.4f} at budget {trial.budget}"
            if trial.error:  # why it was pruned (a broken constraint, a rung that promoted others)
                what += f" ({trial.error.splitlines()[0][:120]})"
        elif trial.error:
            what += f": {trial.error.splitlines()[0][:120]}"
        if trial.duration is not None:
            what += f" in {format_seconds(trial.duration)}"
        count = f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"
        left = self.time_left()
        eta = f", about {format_seconds(left)} left" if left else ""
        spent = f" | {self.budget.text()}" if self.budget is not None else ""
        print(f"{what} | {count} done{eta}{spent}", file=self.stream, flush=True)

    def _make_bar(self) -> Any:
        from tqdm.auto import tqdm

        if self.budget is not None:  # a scheduler runs: the bar counts budget (epochs)
            total, initial, desc = self.budget.total, self.budget.done, "budget"
        else:
            total, initial, desc = self.total, self.done, "trials"
        return tqdm(
            total=total,
            initial=initial,
            desc=desc,
            unit=desc.rstrip("s"),
            file=self.stream,
            dynamic_ncols=True,
            mininterval=self.REDRAW_INTERVAL,
            bar_format="{desc}: {n_fmt}/{total_fmt} |{bar}| [{elapsed}<{remaining}{postfix}]",
        )

    # Redraws of the bar at most this often: a redraw (tqdm formats and writes the whole line)
    # per trial start and end cost more than a fast trial's own bookkeeping, and the eye does
    # not see more than ~10 per second. The last state is drawn by close().
    REDRAW_INTERVAL = 0.1

    def _refresh(self, force: bool = False) -> None:
        if self._bar is None:
            return
        now = time.monotonic()
        if not force and now - self._drawn < self.REDRAW_INTERVAL:
            return
        self._drawn = now
        best = f"{self.best:.4f}" if self.best is not None else "-"
        trials = ""
        if self.budget is not None:  # the bar counts budget; trials (and the bound) beside it
            bound = self.budget.at_most if self.budget.total is None else None
            trials = f"at most {bound:g}, " if bound is not None else ""
            trials += f"trials {self.done}" + (f"/{self.total}" if self.total else "") + ", "
        self._bar.set_postfix_str(
            f"{trials}best {best}, running {self.running}, failed {self.failed}", refresh=True
        )


def announce_constraints(space: Any, show: bool) -> Any:
    """How many archs the constraints of ``space`` leave (exact on small spaces, else an
    estimate: a :class:`~nasx.space.ValidCount`), logged and shown; None without constraints."""
    import logging

    if not space.constraints:
        return None
    valid = space.count_valid(max_seconds=10.0)
    labels = ", ".join(c.label for c in space.constraints)
    line = f"{len(space.constraints)} constraint(s) on the space ({labels}): {valid}"
    logging.getLogger("nasx.experiment").info("%s", line)
    if show:
        announce(line)
    return valid
