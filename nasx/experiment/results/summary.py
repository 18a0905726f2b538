"""What a person is told when a run ends: trials by outcome, the best, the most common failure.

A run that ends (a limit, the strategy done) prints a few lines after the progress display's
last one (not with ``progress=False``): how many trials ended how, the best trial (id, metric,
arch), and for failures the most common error with a hint on what to do. A run in which no
trial succeeded says so as a ``WARNING`` (logged on ``nasx.experiment`` as well, even when
quiet), naming that error and its hint; and ``export_top_models`` on it raises
:class:`NoResultError` saying the same, instead of returning an empty list.

The hint comes from the stored error text: nasx's own messages carry their question
(``...; did the evaluation function forget `return`?``), nasx's failure kinds
(``TrialTimeout``, ``WorkerDied``, ...) and a few common errors have a known remedy, and any
other failure is pointed at :meth:`~nasx.experiment.NasExperiment.rerun_trial` and its log.

    >>> from nasx.trial import Trial
    >>> error = ("ValueError: trial 0: the evaluator returned None: it must return the metric; "
    ...          "did the evaluation function forget `return`? (NNI's `nni.report_final_result(x)` "
    ...          "becomes `return x`)")
    >>> failed = [Trial(i, {'w': i}, 'failed', error=error.replace('0', str(i))) for i in range(3)]
    >>> print(no_success_note(failed, 'runs/a'))  # doctest: +NORMALIZE_WHITESPACE
    no trial succeeded in runs/a (3 failed); most common error (3 of 3 failed):
    ValueError: the evaluator returned None: it must return the metric; hint: did the
    evaluation function forget `return`? (NNI's `nni.report_final_result(x)` becomes `return x`)
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nasx._errors import NasxError
from nasx.experiment.display.progress import announce
from nasx.experiment.results.partial import no_full_budget
from nasx.trial import FAILED, Trial, status_counts

__all__ = [
    "CommonFailure",
    "NoResultError",
    "common_failure",
    "failure_hint",
    "no_success_note",
    "nothing_to_export",
    "report_end_of_run",
    "run_summary",
    "warn_if_nothing_to_search",
]

_log = logging.getLogger("nasx.experiment")

# The longest error text and arch a summary line shows (the rest is in `nasx show`).
_ERROR_CHARS = 160
_ARCH_CHARS = 200


class NoResultError(NasxError, LookupError):
    """``export_top_models`` / ``export_top_trials`` found no result to export: no trial ran
    yet, or none succeeded (the message says how many failed, their most common error and a
    hint), or with a scheduler none reached the full budget."""


# A remedy for errors whose text contains the key (nasx's failure kinds start with theirs).
_HINTS: tuple[tuple[str, str], ...] = (
    (
        "must be finite",
        "the training diverged (a NaN or infinite metric): lower the learning rate, or clip "
        "the gradients",
    ),
    ("must be a real number", "return a float, or a dict like {'default': 0.93, 'loss': 0.2}"),
    ("a metric dict needs a 'default' key", "put the metric to optimize under 'default'"),
    (
        "TrialTimeout:",
        "the trials ran longer than trial_timeout: raise it, or train less per trial",
    ),
    (
        "WorkerDied:",
        "a worker process died (out of memory? a crash in native code?): its output is in the "
        "file the error names; execution='sequential' runs trials in this process",
    ),
    (
        "Crashed:",
        "run trials in child processes (execution='process'): a crash then fails one trial, "
        "not the run",
    ),
    (
        "Interrupted:",
        "the run was stopped while these trials ran: NasExperiment(..., resume=True) runs "
        "them again",
    ),
    ("FilterError:", "the filter itself raised: call it on one arch by hand to see why"),
    (
        "out of memory",
        "the model did not fit in memory: lower the batch size, or leave out the largest "
        "archs with filter=ParamCountFilter(...)",
    ),
)
_TRIAL_ID = re.compile(r"\btrial \d+\b")
_TRIAL_PREFIX = re.compile(r"^(\w+: )trial \d+: ")  # 'ValueError: trial 3: ...' (runner's own)
_QUESTION = "; did "  # nasx's messages end with their question to the user: the hint


def _first_line(error: str) -> str:
    lines = error.strip().splitlines()
    return lines[0] if lines else ""


def failure_hint(error: str | None, trial_id: int | None = None, workdir: Any = None) -> str:
    """What to do about a failed trial's ``error`` (its stored text; see the module docstring).

    >>> failure_hint('TrialTimeout: trial 4 ran longer than trial_timeout (3 s)')
    'the trials ran longer than trial_timeout: raise it, or train less per trial'
    >>> print(failure_hint('KeyError: x', trial_id=2, workdir='runs/a'))
    exp.rerun_trial(2) runs it again in this process with its traceback; its log: runs/a/trials/2/trial.log
    """
    text = error or ""
    line = _first_line(text)
    for key, hint in _HINTS:
        if key in line:
            return hint
    if _QUESTION in line:
        return line[line.index(_QUESTION) + 2 :]
    if trial_id is None:
        return "exp.rerun_trial(<id>) runs a failed trial again in this process with its traceback"
    where = (
        f"; its log: {Path(workdir) / 'trials' / str(trial_id) / 'trial.log'}" if workdir else ""
    )
    return f"exp.rerun_trial({trial_id}) runs it again in this process with its traceback{where}"


@dataclass
class CommonFailure:
    """The most common error among failed trials: its text (first line, the trial's number
    and the hint left out), how many trials failed with it out of how many failed, the
    first of them, and the hint."""

    error: str
    count: int
    failed: int
    trial_id: int
    hint: str

    def text(self) -> str:
        """``most common error (3 of 4 failed): ValueError: ...; hint: ...``"""
        return (
            f"most common error ({self.count} of {self.failed} failed): {self.error}; "
            f"hint: {self.hint}"
        )


def common_failure(trials: Sequence[Trial], workdir: Any = None) -> CommonFailure | None:
    """The most common error of the failed ``trials`` (grouped by their first line, trial
    numbers aside); None when none failed.

    >>> from nasx.trial import Trial
    >>> ts = [Trial(0, {}, 'failed', error='KeyError: a'), Trial(1, {}, 'failed', error='OSError: b'),
    ...       Trial(2, {}, 'failed', error='OSError: b'), Trial(3, {}, 'succeeded', metric=1.0)]
    >>> f = common_failure(ts)
    >>> f.error, f.count, f.failed, f.trial_id
    ('OSError: b', 2, 3, 1)
    """
    failed = [t for t in trials if t.status == FAILED]
    if not failed:
        return None
    groups: dict[str, list[Trial]] = {}
    for t in failed:
        groups.setdefault(_TRIAL_ID.sub("trial #", _first_line(t.error or "")), []).append(t)
    members = max(groups.values(), key=len)  # the first group of the largest size
    first = members[0]
    line = _TRIAL_PREFIX.sub(r"\1", _first_line(first.error or "")) or "(no error stored)"
    if _QUESTION in line:  # the question is the hint, shown on its own
        line = line[: line.index(_QUESTION)]
    if len(line) > _ERROR_CHARS:
        line = line[: _ERROR_CHARS - 3] + "..."
    hint = failure_hint(first.error, first.id, workdir)
    return CommonFailure(line, len(members), len(failed), first.id, hint)


def _outcomes(trials: Sequence[Trial]) -> str:
    """``6 succeeded, 2 failed`` (statuses in their usual order, those with no trial left out)."""
    return ", ".join(f"{n} {status}" for status, n in status_counts(trials).items() if n)


def no_success_note(trials: Sequence[Trial], workdir: Any) -> str:
    """The warning of a run in which no trial succeeded: the counts, the most common error and
    its hint (see the module docstring)."""
    if not trials:
        return f"no trial ran in {workdir}"
    note = f"no trial succeeded in {workdir} ({_outcomes(trials)})"
    failure = common_failure(trials, workdir)
    return note + (f"; {failure.text()}" if failure is not None else "")


def _metric_text(metric: float) -> str:
    """As the progress display writes a metric (``0.9130``); tiny or huge ones in ``e`` form."""
    return f"{metric:.4f}" if metric == 0 or 1e-3 <= abs(metric) < 1e6 else f"{metric:.4g}"


def _arch_text(trial: Trial) -> str:
    text = f"arch {trial.arch!r}"
    if trial.hparams:
        text += f", hparams {trial.hparams!r}"
    return text if len(text) <= _ARCH_CHARS else text[: _ARCH_CHARS - 4] + " ..."


def run_summary(
    trials: Sequence[Trial], best: Trial | None, workdir: Any, direction: str = "maximize"
) -> str:
    """The lines shown when a run ends: the trials by outcome, the ``best`` trial (None: none
    succeeded, a WARNING line says so), the most common failure with its hint, where to look.

    >>> from nasx.trial import Trial
    >>> ts = [Trial(0, {'w': 8}, 'succeeded', metric=0.5), Trial(1, {'w': 4}, 'failed', error='KeyError: x')]
    >>> print(run_summary(ts, ts[0], 'runs/a'))
    2 trials in runs/a: 1 succeeded, 1 failed
    best: trial 0, metric 0.5000 (maximize), arch {'w': 8}
    most common error (1 of 1 failed): KeyError: x
      hint: exp.rerun_trial(1) runs it again in this process with its traceback; its log: runs/a/trials/1/trial.log
    every trial: nasx show runs/a
    """
    if not trials:
        return f"no trial ran in {workdir}"
    n = len(trials)
    lines = [f"{n} trial{'' if n == 1 else 's'} in {workdir}: {_outcomes(trials)}"]
    if best is not None:
        metric = "-" if best.metric is None else _metric_text(best.metric)
        lines.append(f"best: trial {best.id}, metric {metric} ({direction}), {_arch_text(best)}")
    elif no_full_budget(trials, direction) is not None:  # partial.end_of_run said what to do
        lines.append(
            "best: no trial reached the full budget; export_top_models(include_partial=True) "
            "ranks the others by the budget they reached"
        )
    else:
        lines.append("WARNING: no trial succeeded: export_top_models() has nothing to export")
    failure = common_failure(trials, workdir)
    if failure is not None:
        lines.append(
            f"most common error ({failure.count} of {failure.failed} failed): {failure.error}"
        )
        lines.append(f"  hint: {failure.hint}")
    lines.append(f"every trial: nasx show {workdir}")
    return "\n".join(lines)


def report_end_of_run(store: Any, direction: str, workdir: Any, show: bool) -> None:
    """At the end of a multi-trial run on ``store`` (a
    :class:`~nasx.experiment.storage.store.TrialStore`): a WARNING logged when no trial succeeded
    (unless none reached a scheduler's full budget: :func:`~nasx.experiment.results.partial.end_of_run`
    warned of that), and, with ``show``, the summary (:func:`run_summary`) shown. A quiet run
    that has a succeeded trial reads nothing more than that one row. It never turns a finished
    run into a failed one: its trials are stored already."""
    try:
        ranked = store.best(direction, 1)
        if ranked and not show:
            return
        trials = store.trials(lazy=True)
        if not ranked and no_full_budget(trials, direction) is None:
            _log.warning("%s", no_success_note(trials, workdir))
        if show:
            announce(run_summary(trials, ranked[0] if ranked else None, workdir, direction))
    except Exception:  # a damaged row, say: `nasx show` will name it
        _log.exception("could not summarise the run")


def warn_if_nothing_to_search(
    model_space: Any, spaces: Sequence[Mapping[str, Any]], show: bool
) -> None:
    """A space whose search ``spaces`` (its own, its evaluator's) are all empty has one arch,
    ``{}``: said before a run opens its store (logged, and shown with ``show``)."""
    if any(spaces):
        return
    note = (
        f"the space {type(model_space).__name__} has no choices (no LayerChoice, InputChoice, "
        "Repeat or nasx.space.choice(...) in its constructor; or they were built under "
        "model_context): there is nothing to search, every arch is {}"
    )
    _log.warning("%s", note)
    if show:
        announce(f"WARNING: {note}")


def nothing_to_export(trials: Sequence[Trial], workdir: Any, direction: str, scheduler: Any) -> str:
    """Why ``export_top_models`` has nothing to export from ``trials`` (those stored in
    ``workdir``): none ran yet, none reached the full budget, or none succeeded (how many
    failed, their most common error and its hint).

    >>> nothing_to_export([], 'runs/a', 'maximize', None)
    'nothing to export: no trial has run in runs/a yet: call exp.run() first'
    """
    if not trials:
        return f"nothing to export: no trial has run in {workdir} yet: call exp.run() first"
    partial = no_full_budget(trials, direction, scheduler=scheduler)
    if partial is not None:
        return partial
    return "nothing to export: " + no_success_note(trials, workdir)
