"""The experiments a dashboard serves, read and kept per database version: the summary the page
polls, a trial's table row and log, and a memo of drawn charts.

Nothing here speaks HTTP (:mod:`nasx.dashboard.server` does); everything is read-only, through
:mod:`nasx.experiment.storage.readonly`.

    >>> import tempfile
    >>> from pathlib import Path
    >>> served = Experiments([Path(tempfile.mkdtemp())])
    >>> served.version(0)  # no database yet
    '0-0'
    >>> memo = ChartCache(size=2)
    >>> memo.get('a', lambda: 'drawn'), memo.get('a', lambda: 'not drawn again')
    ('drawn', 'drawn')
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from nasx.experiment.storage.readonly import ExperimentRecord, read_experiment
from nasx.trial import FAILED, PRUNED, REJECTED, SUCCEEDED

MAX_LOG_BYTES = 200_000


class Experiments:
    """The served experiments, each re-read only when its database changed.

    Reading 20,000 trials again is quick (SQLite), decoding their JSON is not: a finished trial
    whose row did not change keeps the object, and so the JSON, decoded for the last version.
    What the page asks for again and again (the summary, a sorted table) is kept per version.
    """

    def __init__(
        self, directories: list[Path], chart_interval: float = 5.0, quiet_after: float = 0.5
    ):
        self.directories = [Path(d) for d in directories]
        self.chart_interval = chart_interval
        self.quiet_after = quiet_after
        self._cache: dict[int, tuple[str, ExperimentRecord]] = {}
        self._charts: dict[int, tuple[str, float]] = {}
        self._derived: dict[tuple, Any] = {}
        self._rechecks: dict[int, threading.Timer] = {}
        self._lock = threading.Lock()
        # called (index, chart version) when the charts of an experiment move on: the server
        # draws the page's default charts then, before the page asks for them
        self.on_new_charts: Callable[[int, str], None] | None = None

    def chart_version(self, index: int, version: str) -> str:
        """``version``, but moving on at most every ``chart_interval`` seconds while the
        experiment keeps changing, and at once when it has been quiet for ``quiet_after`` s.

        A fast experiment changes its database many times a second; redrawing matplotlib charts
        for each change would take CPU from it. The page redraws charts when this changes, so
        they lag by at most ``chart_interval`` plus one poll, and catch up with the final data
        as soon as the run ends (or pauses).
        """
        now = time.monotonic()
        quiet_for = self._quiet_for(index)
        with self._lock:
            current, since = self._charts.get(index, (None, 0.0))
            moved = current != version and (
                current is None
                or quiet_for >= self.quiet_after
                or now - since >= self.chart_interval
            )
            if moved:
                self._charts[index] = current, since = version, now
            # Not quiet yet: look again once it may be, so that the charts of a run that just
            # ended are drawn by the time the page next asks, not one poll after that.
            # (Only when that comes before the interval's end: then the next poll moves them.)
            quiet_in = self.quiet_after - quiet_for
            recheck = (
                current != version
                and index not in self._rechecks
                and quiet_in < self.chart_interval - (now - since)
            )
            if recheck:
                timer = threading.Timer(max(0.05, quiet_in + 0.05), self._recheck, (index, version))
                timer.daemon = True
                self._rechecks[index] = timer
        if recheck:
            timer.start()
        if moved and self.on_new_charts is not None:
            self.on_new_charts(index, version)
        return version if current is None else current  # (never None here: see `moved`)

    def _recheck(self, index: int, version: str) -> None:
        # the version the page saw, not a newer one: without a page asking, nothing is drawn
        with self._lock:
            self._rechecks.pop(index, None)
        self.chart_version(index, version)

    def _quiet_for(self, index: int) -> float:
        """Seconds since the experiment's database last changed (0 when unknown)."""
        newest = 0
        for name in ("nasx.db", "nasx.db-wal"):
            try:
                newest = max(newest, (self.directories[index] / name).stat().st_mtime_ns)
            except OSError:
                pass
        return max(0.0, time.time() - newest / 1e9) if newest else 0.0

    def version(self, index: int) -> str:
        """Changes whenever the experiment's database (or its WAL) changes."""
        d = self.directories[index]
        parts = []
        for name in ("nasx.db", "nasx.db-wal"):
            try:
                st = (d / name).stat()
            except OSError:
                parts.append("0")
                continue
            # An empty WAL (what a reader opening a finished experiment may create) is no change.
            parts.append(f"{st.st_mtime_ns}.{st.st_size}" if st.st_size else "0")
        ckpt = d / "checkpoints" / "last.ckpt"
        if ckpt.exists():
            parts.append(str(ckpt.stat().st_mtime_ns))
        return "-".join(parts)

    def get(self, index: int) -> tuple[str, ExperimentRecord]:
        if not 0 <= index < len(self.directories):
            raise KeyError(index)
        version = self.version(index)
        with self._lock:
            cached = self._cache.get(index)
            if cached and cached[0] == version:
                return cached
        record = read_experiment(self.directories[index])
        if cached:
            record.trials[:] = _keep_decoded(cached[1].trials, record.trials)
        with self._lock:
            self._cache[index] = (version, record)
        return version, record

    def derived(self, index: int, what: Any, make: Callable[[str, ExperimentRecord], Any]) -> Any:
        """``make(version, record)`` for the experiment's current version, kept until it changes
        (the summary, a sorted table: ``what`` names it)."""
        version, exp = self.get(index)
        key = (index, version, what)
        with self._lock:
            if key in self._derived:
                return self._derived[key]
        value = make(version, exp)
        with self._lock:
            for old in [k for k in self._derived if k[0] == index and k[1] != version]:
                del self._derived[old]  # an older version's: never asked again
            while len(self._derived) >= 64:
                self._derived.pop(next(iter(self._derived)))
            self._derived[key] = value
        return value


# final statuses: these rows no longer change (paused ones may: a promotion runs them again)
_FINISHED = (SUCCEEDED, FAILED, REJECTED, PRUNED)
_ROW = ("status", "metric", "start_time", "end_time", "duration", "error")


def _keep_decoded(old: list, new: list) -> list:
    """``new``, with each finished trial whose row is unchanged replaced by its ``old`` object
    (whose JSON fields are decoded already)."""
    before = {t.id: t for t in old if t.status in _FINISHED}
    out = []
    for t in new:
        o = before.get(t.id)
        same = o is not None and all(getattr(o, f) == getattr(t, f) for f in _ROW)
        out.append(o if same else t)
    return out


def summary(
    index: int, version: str, exp: ExperimentRecord, chart_version: str = ""
) -> dict[str, Any]:
    from nasx.plot.charts import has_arch_weights, metric_names

    best = exp.best(1)
    running = [t for t in exp.trials if t.status == "running"]
    ends = [t.end_time for t in exp.trials if t.end_time]
    return {
        "index": index,
        "name": exp.name,
        "path": str(exp.directory),
        "kind": exp.kind,
        "version": version,
        "chart_version": chart_version or version,
        "space": exp.meta.get("space"),
        "strategy": exp.meta.get("strategy"),
        "direction": exp.direction,
        "labels": list(exp.meta.get("search_space", {})),
        "counts": exp.counts(),
        "n_trials": len(exp.trials),
        "best": {"id": best[0].id, "metric": best[0].metric} if best else None,
        "running": [t.id for t in running],
        "metrics": metric_names(exp.trials),
        "created": exp.meta.get("created"),
        "updated": max(ends) if ends else None,
        "now": time.time(),
        "has_curves": any(t.intermediates for t in exp.trials),
        "has_budget": any(t.budget is not None for t in exp.trials),  # a scheduler's run
        "has_arch_weights": has_arch_weights(exp.directory),
    }


def trial_row(t) -> dict[str, Any]:
    return {
        "id": t.id,
        "status": t.status,
        "metric": t.metric,
        "metrics": t.metrics,
        "budget": t.budget,
        "duration": t.duration,
        "start_time": t.start_time,
        "arch": t.arch,
        "error": (t.error or "").splitlines()[0] if t.error else None,
    }


def _read_log(exp: ExperimentRecord, trial_id: int) -> str:
    path = exp.log_path(trial_id)
    try:
        resolved = path.resolve(strict=True)
    except OSError:
        return ""
    if not resolved.is_relative_to(exp.directory.resolve()):
        return f"(log refused: {path.name} points outside the experiment directory)"
    size = resolved.stat().st_size
    with open(resolved, "rb") as f:
        if size > MAX_LOG_BYTES:
            f.seek(size - MAX_LOG_BYTES)
        text = f.read().decode("utf-8", errors="replace")
    return (f"... (last {MAX_LOG_BYTES} bytes of {size})\n" if size > MAX_LOG_BYTES else "") + text


def _finite(x: Any) -> Any:
    """NaN and infinities as null: browsers' JSON.parse refuses them (a user metric may be NaN)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


class ChartCache:
    """A small memo of rendered charts (keyed by the experiment's chart version). A chart being
    drawn is drawn once: a second request for it waits for the first (the page and the
    server's own drawing ahead ask for the same charts)."""

    def __init__(self, size: int = 64):
        self.size, self._lock = size, threading.Lock()
        self._data: dict[Any, Future] = {}

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        with self._lock:
            drawing = self._data.get(key)
            if drawing is None:
                if len(self._data) >= self.size:
                    self._data.pop(next(iter(self._data)))
                future: Future = Future()
                self._data[key] = future
        if drawing is not None:
            return drawing.result()  # drawn, or being drawn by another thread: wait for it
        try:
            future.set_result(make())
        except BaseException as e:
            with self._lock:
                self._data.pop(key, None)  # asked again, it is drawn again (and fails again)
            future.set_exception(e)
        return future.result()
