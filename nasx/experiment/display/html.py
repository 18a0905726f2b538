"""HTML for notebooks: the trial table and an experiment's summary, every user string escaped.

Jupyter calls ``_repr_html_`` on the last value of a cell; :class:`~nasx.experiment.results.table.TrialTable`
and :class:`~nasx.experiment.NasExperiment` delegate to these functions.

    >>> from nasx.trial import Trial
    >>> html = trials_html([Trial(0, {'<b>': 1}, 'failed', error='<script>x</script>')])
    >>> '<script>' in html, '&lt;script&gt;x&lt;/script&gt;' in html
    (False, True)
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from nasx.trial import Trial, best_trials, status_counts

MAX_ROWS = 60
_STATUS_COLORS = {
    "succeeded": "#1e8449",
    "failed": "#c0392b",
    "running": "#1f77b4",
    "rejected": "#7f7f7f",
    "pruned": "#b9770e",
    "paused": "#aab7b8",
}
_STYLE = "font-size:12px;border-collapse:collapse"
_CELL = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;white-space:nowrap"


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.6g}"


def trials_html(trials: Sequence[Trial], max_rows: int = MAX_ROWS) -> str:
    """An HTML table of trials (id, status, metric, other metrics, duration, arch, error)."""
    extra = sorted({k for t in trials for k in (t.metrics or {}) if k != "default"})
    head = ["id", "status", "metric", *extra, "duration (s)", "arch", "error"]
    rows = []
    for t in list(trials)[:max_rows]:
        color = _STATUS_COLORS.get(t.status, "inherit")
        arch = json.dumps(t.arch)
        error = (t.error or "").splitlines()[0] if t.error else ""
        cells = [
            _e(t.id),
            f'<span style="color:{color}">{_e(t.status)}</span>',
            _e(_num(t.metric)),
            *(_e(_num((t.metrics or {}).get(k))) for k in extra),
            _e(_num(t.duration)),
            f'<code title="{_e(arch)}">{_e(arch if len(arch) <= 90 else arch[:87] + "...")}</code>',
            f'<span title="{_e(t.error)}">{_e(error[:100])}</span>',
        ]
        rows.append("<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in cells) + "</tr>")
    more = len(trials) - max_rows
    if more > 0:
        rows.append(
            f'<tr><td colspan="{len(head)}" style="{_CELL}">... {more} more trials</td></tr>'
        )
    header = "".join(f'<th style="{_CELL}">{_e(h)}</th>' for h in head)
    return f'<table style="{_STYLE}"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def summary_html(
    title: str, fields: dict[str, Any], trials: Sequence[Trial], direction: str
) -> str:
    """A heading, a few ``name: value`` fields, status counts, the best trial and the table."""
    counts = status_counts(trials)
    ranked = best_trials(trials, direction, 1)
    best = ranked[0] if ranked else None
    parts = [f"<div><b>{_e(title)}</b></div>"]
    parts.append(
        '<div style="font-size:12px">'
        + " &middot; ".join(f"{_e(k)}: {_e(v)}" for k, v in fields.items())
        + "</div>"
    )
    chips = ", ".join(
        f'<span style="color:{_STATUS_COLORS.get(s, "inherit")}">{n} {_e(s)}</span>'
        for s, n in counts.items()
        if n
    )
    parts.append(f'<div style="font-size:12px">trials: {chips or "none yet"}</div>')
    if best is not None:
        parts.append(
            f'<div style="font-size:12px">best: {_e(_num(best.metric))} (trial {best.id}) '
            f"<code>{_e(json.dumps(best.arch))}</code></div>"
        )
    if trials:
        parts.append(trials_html(trials))
    return "\n".join(parts)


def progress_html(
    done: int,
    total: int | None,
    running: int,
    failed: int,
    best: float | None,
    elapsed: str,
    left: str | None,
    budget: tuple[float, float | None, str] | None = None,
) -> str:
    """The notebook progress display: an HTML ``<progress>`` bar and one line of numbers.

    ``budget`` (with a scheduler): ``(reached, planned total or None, its text)``; the bar then
    fills with budget, and the line starts with it.

    >>> html = progress_html(3, 9, 1, 0, 0.5, '2.0 s', None, budget=(7, 21, 'budget 7/21'))
    >>> 'value="7" max="21"' in html, 'budget 7/21 &middot; trials 3/9' in html
    (True, True)
    """
    bar_done, bar_total = (budget[0], budget[1]) if budget is not None else (done, total)
    value = f'value="{bar_done:g}" max="{bar_total:g}"' if bar_total else ""
    count = f"{done}/{total}" if total else f"{done}"
    best_s = f"{best:.4f}" if best is not None else "-"
    eta = f" &middot; about {_e(left)} left" if left else ""
    spent = f"{_e(budget[2])} &middot; " if budget is not None else ""
    return (
        f'<div style="font-size:13px"><progress {value} style="width:240px;vertical-align:middle"></progress> '
        f"{spent}trials {count} &middot; best {best_s} &middot; running {running} &middot; "
        f"failed {failed} &middot; {_e(elapsed)}{eta}</div>"
    )


def experiment_html(exp: Any, trials: Sequence[Trial]) -> str:
    """A NasExperiment in a notebook: space, strategy, workdir, status counts, best trial, trials."""
    fields: dict[str, Any] = {
        "space": type(exp.model_space).__name__,
        "strategy": type(exp.strategy).__name__,
        "workdir": exp.workdir,
        "direction": exp.direction,
    }
    if exp.stop_reason:
        fields["stopped"] = exp.stop_reason
    if exp.keep_weights.enabled:
        from nasx.experiment.storage.weights import describe_kept

        fields["weights"] = describe_kept(exp.workdir, exp.keep_weights)
    return summary_html("NasExperiment", fields, trials, exp.direction)
