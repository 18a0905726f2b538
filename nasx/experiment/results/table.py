"""TrialTable: the trials of an experiment as rows, printable as a text table or saved as CSV.

>>> from nasx.trial import Trial
>>> table = TrialTable([Trial(0, {'k': 3}, 'succeeded', metric=0.5, duration=1.25),
...                     Trial(1, {'k': 5}, 'failed', error='ValueError: bad\\ntraceback...')])
>>> print(table)
id  status     metric  duration (s)  arch      error
 0  succeeded  0.5     1.25          {"k": 3}
 1  failed                           {"k": 5}  ValueError: bad
"""

from __future__ import annotations

import csv
import os
from typing import Any

from nasx.experiment.storage.stored import decode, gc_paused, has_value, json_text
from nasx.trial import Trial

COLUMNS = ("id", "status", "metric", "duration", "arch", "error")
HEADERS = (
    "id",
    "status",
    "metric",
    "duration (s)",
    "arch",
    "error",
)  # the text table's, with units


class TrialTable(list[Trial]):
    """A list of :class:`~nasx.trial.Trial` with a text rendering and CSV export."""

    def has_hparams(self) -> bool:
        """Whether any trial has hyperparameters (the evaluator's choices): the text table, CSV
        and DataFrame then show an ``hparams`` column beside ``arch``."""
        return any(has_value(t, "hparams") for t in self)

    def has_budgets(self) -> bool:
        """Whether any trial has a budget (a multi-fidelity scheduler ran it): the text table
        and DataFrame then show a ``budget`` column beside ``status``."""
        return any(t.budget is not None for t in self)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per trial: id, status, budget, metric, metrics, duration, arch, hparams,
        error (first line)."""
        return [
            {
                "id": t.id,
                "status": t.status,
                "budget": t.budget,
                "metric": t.metric,
                "metrics": t.metrics,
                "duration": t.duration,
                "arch": t.arch,
                "hparams": t.hparams,
                "error": (t.error or "").splitlines()[0] if t.error else None,
            }
            for t in self
        ]

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write every trial (full error text, JSON arch and metrics) to a CSV file."""
        with open(path, "w", newline="") as f, gc_paused():
            writer = csv.writer(f)
            writer.writerow(
                [
                    "id",
                    "status",
                    "metric",
                    "metrics",
                    "duration",
                    "start_time",
                    "end_time",
                    "arch",
                    "error",
                    "hparams",
                ]
            )
            # JSON fields a stored trial never decoded are written from their stored text
            writer.writerows(
                [
                    t.id,
                    t.status,
                    t.metric,
                    json_text(t, "metrics"),
                    t.duration,
                    t.start_time,
                    t.end_time,
                    json_text(t, "arch"),
                    t.error or "",
                    json_text(t, "hparams"),
                ]
                for t in self
            )

    def _repr_html_(self) -> str:
        """The table in a notebook (escaped HTML; the first rows of a long table)."""
        from nasx.experiment.display.html import trials_html

        return trials_html(self)

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame``, one row per trial, one column per field and per final metric.

        Columns: id, status, metric, duration, start_time, end_time, arch (a dict), error, and
        ``metric_<name>`` for every other final metric. Needs pandas (``pip install "nasx[pandas]"``).
        """
        from nasx._optional import optional_import

        pd = optional_import("pandas", "pandas", "TrialTable.to_pandas()")
        decode(self, ("arch", "metrics", "hparams"))  # every row's, in one pass per field
        extra = sorted({k for t in self for k in (t.metrics or {}) if k != "default"})
        with gc_paused():  # one dict per row: many objects, no cycles
            records = []
            for t in self:
                row = {
                    "id": t.id,
                    "status": t.status,
                    "metric": t.metric,
                    "duration": t.duration,
                    "start_time": t.start_time,
                    "end_time": t.end_time,
                    "arch": t.arch,
                    "error": t.error,
                }
                row.update({f"metric_{k}": (t.metrics or {}).get(k) for k in extra})
                row["hparams"], row["budget"] = t.hparams, t.budget
                records.append(row)
        columns = ["id", "status", "metric", "duration", "start_time", "end_time", "arch", "error"]
        if self.has_hparams():
            columns.insert(columns.index("arch") + 1, "hparams")
        if self.has_budgets():
            columns.insert(columns.index("status") + 1, "budget")
        return pd.DataFrame.from_records(records, columns=columns + [f"metric_{k}" for k in extra])

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self, width: int | None = None) -> str:
        """The text table. With ``width``, the arch, hparams and error cells are cut with ``...``
        so that every line fits in ``width`` characters, where the other columns leave room for
        30 characters of arch; ``None`` keeps them whole (``str(table)``).

            >>> from nasx.trial import Trial
            >>> arch = {f"block{i}/type": "bottleneck" for i in range(4)}
            >>> print(TrialTable([Trial(0, arch, 'succeeded', metric=0.5)]).to_text(width=80))
            id  status     metric  duration (s)  arch                             error
             0  succeeded  0.5                   {"block0/type": "bottleneck", ...
        """
        return self.fitted(width)[0]

    def fitted(self, width: int | None) -> tuple[str, bool]:
        """The text table for ``width`` characters per line (``None``: no limit), and whether a
        cell was cut to fit, so that a caller can say how to see it whole.

            >>> from nasx.trial import Trial
            >>> table = TrialTable([Trial(0, {"op": "conv3x3"}, 'succeeded', metric=0.5)])
            >>> table.fitted(80)[1], table.fitted(40)[1]
            (False, True)
        """
        with gc_paused():
            return self._text(width)

    def _text(self, width: int | None = None) -> tuple[str, bool]:
        # Built column by column (100k rows in a fraction of a second); archs a stored trial never
        # decoded are shown from their stored text, which is what json.dumps would write.
        trials: list[Trial] = list(self)
        columns: list[list[str]] = [
            [str(t.id) for t in trials],
            [str(t.status) for t in trials],
            [_num(t.metric) for t in trials],
            [_num(t.duration) for t in trials],
            [json_text(t, "arch") for t in trials],
        ]
        headers = list(HEADERS[:5])
        if self.has_budgets():  # beside the status: how far each trial got
            columns.insert(2, [_num(t.budget) for t in trials])
            headers.insert(2, "budget")
        if self.has_hparams():
            columns.append([json_text(t, "hparams") for t in trials])
            headers.append("hparams")
        columns.append([_clip(t.error.splitlines()[0], 60) if t.error else "" for t in trials])
        headers.append(HEADERS[5])
        widths = [max(len(h), max(map(len, c), default=0)) for h, c in zip(headers, columns)]
        cut = width is not None and sum(widths) + 2 * (len(widths) - 1) > width
        if cut and width is not None:
            columns, widths = _fit(headers, columns, widths, width)
        head = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
        padded = [[c.rjust(widths[0]) for c in columns[0]]] + [
            [c.ljust(w) for c in column] for column, w in zip(columns[1:], widths[1:], strict=True)
        ]
        text = "\n".join([head, *("  ".join(cells).rstrip() for cells in zip(*padded))])
        return text, cut


def _fit(
    headers: list[str], columns: list[list[str]], widths: list[int], width: int
) -> tuple[list[list[str]], list[int]]:
    """Cut the hparams, error and arch columns so that a line fits ``width``: of the room the
    other columns leave, hparams gets at most a third (at least 30 characters), the error at
    most a quarter (at least 10), and arch the rest (at least 30)."""
    cut = {h: headers.index(h) for h in ("error", "hparams", "arch") if h in headers}
    others = sum(w for i, w in enumerate(widths) if i not in cut.values())
    room = width - others - 2 * (len(widths) - 1)
    limits = {}
    if "hparams" in cut:
        limits["hparams"] = min(widths[cut["hparams"]], max(30, room // 3))
    if "error" in cut:  # what is left after 30 of arch, up to a quarter, at least 10
        spare = room - 30 - limits.get("hparams", 0)
        limits["error"] = min(widths[cut["error"]], max(10, min(room // 4, spare)))
    limits["arch"] = max(30, room - sum(limits.values()))
    columns, widths = list(columns), list(widths)
    for name, i in cut.items():
        columns[i] = [_clip(c, limits[name]) for c in columns[i]]
        widths[i] = max(len(headers[i]), max(map(len, columns[i]), default=0))
    return columns, widths


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.6g}"


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."
