"""What a person sees while an experiment runs: a bar in a terminal, one line per trial elsewhere.

In a terminal (stderr is a TTY) a tqdm bar counts finished trials and shows the best metric so
far, running and failed trials, elapsed time and the time left; when output goes to a file or a
pipe (CI, ``nohup``, a notebook's captured log) each finished trial prints one plain line instead.
tqdm comes with pytorch-lightning, so this adds no dependency.
"""

from __future__ import annotations

import io
import sys
import time
from typing import IO, Any

from nasx.trial import FAILED, REJECTED, SUCCEEDED, Trial

__all__ = ["Progress", "announce", "format_seconds"]


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


class Progress:
    """Reports an experiment's trials as they finish (see the module docstring).

    Args:
        total: trials this experiment will run in all (``max_trials``), or None when unknown.
        direction: ``'maximize'`` or ``'minimize'``: which metric is the best so far.
        done: trials that finished in earlier runs (a resumed experiment starts the bar there).
        best: the best metric among them.
        stream: where to write (default ``sys.stderr``); ``bar`` forces the bar on or off.

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
    ):
        self.total = total
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
            self._bar.update(1)
            self._refresh()
        elif not self._silent:
            self._line(trial)

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
            print(f"search stopped after {elapsed}: {reason}{best}", file=self.stream, flush=True)

    # ------------------------------------------------------------------ helpers
    def _better(self, metric: float) -> bool:
        if self.best is None:
            return True
        return metric > self.best if self.direction == "maximize" else metric < self.best

    def time_left(self) -> float | None:
        """Seconds until ``total`` trials are done, from this run's pace (None: unknown yet, or
        the search has stopped: nothing is left then, whatever ``total`` said)."""
        finished_now = self.done - self.done_at_start
        if self.total is None or finished_now == 0 or self.stopped:
            return None
        pace = (time.monotonic() - self.started) / finished_now
        return max(0, self.total - self.done) * pace

    def _line(self, trial: Trial) -> None:
        what = f"trial {trial.id} {trial.status}"
        if trial.status == SUCCEEDED and trial.metric is not None:
            best = f" (best {self.best:.4f})" if self.best is not None else ""
            what += f": metric {trial.metric:.4f}{best}"
        elif trial.error:
            what += f": {trial.error.splitlines()[0][:120]}"
        if trial.duration is not None:
            what += f" in {format_seconds(trial.duration)}"
        count = f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"
        left = self.time_left()
        eta = f", about {format_seconds(left)} left" if left else ""
        print(f"{what} | {count} done{eta}", file=self.stream, flush=True)

    def _make_bar(self) -> Any:
        from tqdm.auto import tqdm

        return tqdm(
            total=self.total,
            initial=self.done,
            desc="trials",
            unit="trial",
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
        self._bar.set_postfix_str(
            f"best {best}, running {self.running}, failed {self.failed}", refresh=True
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
