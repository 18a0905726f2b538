"""Run one trial where it executes (main process, worker process or Ray task): build, evaluate.

``run_trial`` never raises for a trial's own failure: errors in model construction or evaluation,
and metrics that are not finite numbers, become a ``'failed'`` result carrying the error text.

    >>> import torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label='act')
    >>> builder = ModelBuilder.from_space(Net())
    >>> result = run_trial(builder, lambda model: 0.5, Job(id=0, arch={'act': 1}))
    >>> result.status, result.metric
    ('succeeded', 0.5)
    >>> run_trial(builder, lambda model: float('nan'), Job(id=1, arch={'act': 0})).error
    'ValueError: trial 1: the metric must be finite, got nan: the training probably diverged'
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import threading
import time
import traceback
import types
import weakref
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch.nn as nn

from nasx._errors import NasxError
from nasx.evaluator.base import ModelEvaluator, accepts_parameter, normalize_metric
from nasx.evaluator.checkpoint import Checkpoint
from nasx.evaluator.hparams import freeze_evaluator
from nasx.evaluator.nni_report import reporting
from nasx.experiment.execution.builder import (
    ModelBuilder as ModelBuilder,  # re-exported: weights.py imports it from here
)
from nasx.experiment.execution.jobs import STATUS_AFTER, Decide, Job, TrialResult
from nasx.trial import FAILED, SUCCEEDED


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy and torch (CPU and CUDA) with ``seed``.

    Example:
        >>> import torch
        >>> seed_everything(3); a = torch.rand(2)
        >>> seed_everything(3); bool((torch.rand(2) == a).all())
        True
    """
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def checked_metric(value: Any, trial_id: int) -> tuple[float, dict[str, float]]:
    """:func:`nasx.evaluator.normalize_metric`, with the trial named in its error."""
    try:
        return normalize_metric(value)
    except ValueError as e:
        raise ValueError(f"trial {trial_id}: {e}") from None


def no_model(arch: dict[str, Any]) -> None:
    """The builder used when the evaluator needs no model (``needs_model = False``): builds nothing."""
    return None


def call_evaluator(
    evaluator: Any,
    model: nn.Module | None,
    report: Callable[[Any], None],
    arch: dict[str, Any] | None = None,
    budget: int | float | None = None,
    checkpoint: Checkpoint | None = None,
) -> Any:
    """``evaluator.evaluate(model, report=...)``, or ``evaluator(model[, report=...])`` for a function.

    ``arch=`` is passed too when the method or function declares an ``arch`` parameter,
    ``budget=`` (how much to train: epochs by default; None: the evaluator's own full training)
    when it declares a ``budget`` parameter, and ``checkpoint=`` (a
    :class:`~nasx.evaluator.checkpoint.Checkpoint`: continue from the state saved there, save
    the state at ``budget``) when it declares a ``checkpoint`` parameter. A budget given to an
    evaluator that declares none is an error: it would train its full length and the
    scheduler's decisions would be wrong; so is a checkpoint to continue from.

    >>> call_evaluator(lambda model, arch: len(arch), None, print, arch={'a': 1, 'b': 2})
    2
    >>> call_evaluator(lambda model, budget: budget * 10, None, print, budget=3)
    30
    """
    if is_model_evaluator(evaluator):
        fn, wants_report = evaluator.evaluate, True
    elif callable(evaluator):
        fn, wants_report = evaluator, _declares(evaluator, "report")
    else:
        raise TypeError(
            f"the evaluator must have an evaluate(model, report) method or be callable, got {type(evaluator).__name__}"
        )
    kwargs: dict[str, Any] = {"report": report} if wants_report else {}
    if _declares(fn, "arch"):
        kwargs["arch"] = arch
    if _declares(fn, "budget"):
        kwargs["budget"] = budget
    elif budget is not None:
        raise TypeError(
            f"the evaluator {evaluator!r} was given budget={budget!r} but declares no `budget` "
            "parameter; add one (evaluate(model, report=None, budget=None), or fn(model, budget)) "
            "to train that much"
        )
    if _declares(fn, "checkpoint"):
        kwargs["checkpoint"] = checkpoint
    elif checkpoint is not None and checkpoint.from_budget:
        raise TypeError(
            f"the evaluator {evaluator!r} was asked to continue from budget "
            f"{checkpoint.from_budget} but declares no `checkpoint` parameter; add one "
            "(evaluate(model, report=None, budget=None, checkpoint=None), or fn(model, budget, "
            "checkpoint)) to continue from a checkpoint"
        )
    # any evaluator may use NNI's report functions (nasx.report_final_result ...) while it runs
    with reporting(report) as channel:
        return channel.result(fn(model, **kwargs))


# Whether a class is a ModelEvaluator by itself (defines ``evaluate``), looked up once per class.
_EVALUATOR_CLASSES: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def is_model_evaluator(evaluator: Any) -> bool:
    """``isinstance(evaluator, ModelEvaluator)``, without its cost where the answer is sure.

    The runtime Protocol check walks the protocol's members on every call (8 us, once per
    trial). Its first answer comes from the class alone, which is remembered here; a plain
    function has no class-level ``evaluate`` nor ``__getattr__``, so only its own attributes
    could make it one. Anything else (a ``Mock``, an instance attribute) is asked as before.

    >>> class Sparsity:
    ...     def evaluate(self, model, report=None): return 0.0
    >>> is_model_evaluator(Sparsity()), is_model_evaluator(lambda model: 1.0)
    (True, False)
    """
    cls = type(evaluator)
    by_class = _EVALUATOR_CLASSES.get(cls)
    if by_class is None:
        by_class = _EVALUATOR_CLASSES[cls] = issubclass(cls, ModelEvaluator)
    if by_class:
        return True
    if cls is types.FunctionType and "evaluate" not in evaluator.__dict__:
        return False
    return isinstance(evaluator, ModelEvaluator)


# What each evaluator function declares, looked up once: inspect.signature took a tenth of a
# trivial trial's time, twice per trial. Keyed weakly by the function (a bound method's own).
_DECLARED: weakref.WeakKeyDictionary[Any, dict[str, bool]] = weakref.WeakKeyDictionary()


def _declares(fn: Callable[..., Any], name: str) -> bool:
    """:func:`~nasx.evaluator.base.accepts_parameter`, remembered per plain function."""
    key = getattr(fn, "__func__", fn)
    if not isinstance(key, types.FunctionType):  # a callable object, a builtin: not cached
        return accepts_parameter(fn, name)
    declared = _DECLARED.setdefault(key, {})
    if name not in declared:
        declared[name] = accepts_parameter(fn, name)
    return declared[name]


class TrialStopped(NasxError, RuntimeError):
    """Raised by a trial's ``report(value)`` when the scheduler stopped it before its job's
    budget (``decision``: ``'pause'`` or ``'prune'``); the trial runner catches it and records
    the trial as paused or pruned with the last reported value as its metric. An evaluator that
    catches every ``Exception`` around its training loop should let this one through."""

    def __init__(self, trial: int, budget: Any, decision: str) -> None:
        super().__init__(f"trial {trial}: the scheduler said {decision!r} at budget {budget}")
        self.decision = decision


class _Decisions:
    """A trial's reports as a scheduler hears them (:func:`run_trial`'s ``decide``)."""

    def __init__(self, job: Job, decide: Decide | None, log: logging.Logger) -> None:
        self.job, self.decide, self.log = job, decide, log
        self.last: str | None = None  # the last answer other than 'continue'
        self.stopped = False

    def heard(self, reports: int, metric: float | dict[str, float]) -> None:
        """The trial reported ``metric``, its ``reports``-th value of this job."""
        job = self.job
        reached = job.from_budget + reports
        if self.decide is None or reached <= job.decided_budget:
            return
        decision = self.decide(job.id, reached, metric)
        if decision == "continue":
            return
        self.log.info("trial %s at budget %s: %s", job.id, reached, decision)
        self.last = decision
        if decision in ("pause", "prune") and (job.budget is None or reached < job.budget):
            self.stopped = True
            raise TrialStopped(job.id, reached, decision)

    def ended(self, reports: int, metric: float | dict[str, float]) -> None:
        """The evaluator returned ``metric``: one that reported less than its budget is
        decided at the budget."""
        job = self.job
        if self.decide is None or self.last is not None or job.budget is None:
            return
        if job.from_budget + reports < job.budget:
            self.last = self.decide(job.id, job.budget, metric)


def _evaluate(
    builder: Callable[[dict[str, Any]], nn.Module | None],
    evaluator: Any,
    job: Job,
    report: Callable[[Any], None],
) -> tuple[nn.Module | None, Any]:
    """Build the job's model and evaluate it: the model and the evaluator's value."""
    with _evaluating(job.evaluating_mark):  # a death in here is the trial's crash
        model = builder(job.arch)
        trial_evaluator = freeze_evaluator(evaluator, job.hparams) if job.hparams else evaluator
        value = call_evaluator(trial_evaluator, model, report, job.arch, job.budget, job.checkpoint)
    return model, value


def run_trial(
    builder: Callable[[dict[str, Any]], nn.Module | None],
    evaluator: Any,
    job: Job | Mapping[str, Any],
    decide: Decide | None = None,
) -> TrialResult:
    """Build ``job.arch``, evaluate it, return what the trial gave (:class:`TrialResult`).

    With ``job.hparams`` (values of the evaluator's choices) the evaluator is made again with
    them (:func:`nasx.evaluator.hparams.freeze_evaluator`); without ``job.log_path`` the log
    comes back as ``result.log`` (how remote Ray workers send it); ``job.seed`` seeds torch,
    numpy and random before the model is built. A dict of the same fields is accepted too.

    ``decide`` (a multi-fidelity scheduler's, in the same process): each ``report(value)`` is
    one budget unit (an epoch), and ``decide(trial, budget reached, value)`` answers it
    (``value``: the number reported, or the metrics dict when it holds several); a
    ``'pause'`` or ``'prune'`` before ``job.budget`` stops the trial at once
    (:class:`TrialStopped`), and the result's status says how it ended (``'paused'``,
    ``'pruned'``, else ``'succeeded'``). A promoted trial continuing from its checkpoint at
    ``job.from_budget`` reports only the units after it; one trained again from scratch
    reports them all, and those at or below ``job.decided_budget`` were decided before and
    are not asked again. An evaluator that reported nothing is decided once, at
    ``job.budget``, with its metric.

        >>> def fn(model, budget, report):
        ...     for epoch in range(budget): report(0.1 * (epoch + 1))
        ...     return 0.1 * budget
        >>> stop_at_2 = lambda trial, budget, value: 'prune' if budget == 2 else 'continue'
        >>> r = run_trial(no_model, fn, Job(0, {}, budget=4), decide=stop_at_2)
        >>> r.status, r.budget, r.intermediates, r.metric
        ('pruned', 2, [0.1, 0.2], 0.2)
    """
    job = Job.of(job)
    if job.seed is not None:
        seed_everything(job.seed)
    buffer = None if job.log_path else io.StringIO()
    intermediates: list[float] = []
    start = time.time()
    with _trial_log(job.log_path, buffer) as log:
        log.info("trial %s arch %s", job.id, job.arch)
        if job.budget is not None:
            log.info("trial %s budget %s (from %s)", job.id, job.budget, job.from_budget)
        if job.hparams:
            log.info("trial %s hparams %s", job.id, job.hparams)

        decisions = _Decisions(job, decide, log)
        reported: list[Any] = [None]  # the last report as checked: a number, or a metrics dict

        def report(value: Any) -> None:
            metric, metrics = checked_metric(value, job.id)
            intermediates.append(metric)
            reported[0] = _as_reported(metric, metrics)
            log.info("intermediate %d: %s", len(intermediates), metric)
            decisions.heard(len(intermediates), reported[0])

        result = TrialResult(job.id, FAILED, intermediates=intermediates, start_time=start)
        try:
            try:
                model, value = _evaluate(builder, evaluator, job, report)
                result.budget = job.budget
                decisions.ended(len(intermediates), _as_reported(*checked_metric(value, job.id)))
            except TrialStopped:  # stopped mid-training: no trained weights to keep
                model, value = None, reported[0]  # its metrics: all those of its last report
                result.budget = job.from_budget + len(intermediates)
            result.metric, result.metrics = checked_metric(value, job.id)
            result.status = STATUS_AFTER[decisions.last]
            log.info("%s: %s", result.status, result.metrics)
            if job.weights is not None and not decisions.stopped:  # keep_weights: trained model
                _keep_weights(model, job, result, log)
        except Exception as e:  # a trial's failure is data, not a crash of the experiment
            result.status, result.metric, result.metrics = FAILED, None, {}
            result.error = _describe(e)
            log.error("failed:\n%s", traceback.format_exc())
    result.end_time = time.time()
    result.duration = result.end_time - start
    if buffer is not None:
        result.log = buffer.getvalue()
    return result


def _as_reported(metric: float, metrics: dict[str, float]) -> float | dict[str, float]:
    """What a scheduler hears of one report: the number, or every metric of a dict."""
    return metrics if len(metrics) > 1 else metric


def rerun(builder: Any, evaluator: Any, trial: Any, seed: int | None) -> dict[str, float]:
    """Run ``trial`` (a :class:`~nasx.trial.Trial`) again in this process, seeded as the
    experiment seeded it (``seed + trial id``); its metrics, or RuntimeError with its error.
    ``NasExperiment.rerun_trial`` does this with the experiment's builder and evaluator.

        >>> from nasx.trial import Trial
        >>> rerun(no_model, lambda model: 0.5, Trial(3, {}), seed=None)
        {'default': 0.5}
    """
    job = Job(trial.id, trial.arch, trial.hparams, seed=None if seed is None else seed + trial.id)
    result = run_trial(builder, evaluator, job)
    if result.status != SUCCEEDED:
        raise RuntimeError(f"trial {trial.id} failed when run again: {result.error}")
    return result.metrics


@contextlib.contextmanager
def _evaluating(mark: str | None) -> Iterator[None]:
    """``mark`` exists while the block runs and is gone after it, unless the process dies in
    it: a SIGKILL or a segfault leave it for the resumed run to see
    (:mod:`nasx.experiment.loop.recovery`). An exception of the trial's own removes it too."""
    if mark is None:
        yield
        return
    put_mark(mark)
    try:
        yield
    except Exception:
        os.unlink(mark)
        raise
    os.unlink(mark)


# The empty file every ``evaluating`` mark of a workdir is a hard link to, in the workdir beside
# nasx.db (not in trials/, whose entries are the trial folders). Creating a file allocates an
# inode, which on ext4 costs 0.1-0.25 ms of kernel time (measured:
# benchmarks/trial_overhead.results.md), as much as the rest of a trivial trial's framework
# work; linking an existing inode costs ~10 us.
MARK_SPARE = "nasx.evaluating"
_TRIALS_DIR = "trials"  # storage.TRIALS_DIR (storage's imports are not a worker's business)


def put_mark(mark: str) -> None:
    """Make the empty file ``mark``. For a trial of a workdir (``<workdir>/trials/<id>/evaluating``)
    it is a hard link to the workdir's :data:`MARK_SPARE` (made on first use); elsewhere, or where
    the filesystem has no hard links, a new file. A mark already there (left by a killed run)
    is kept.

    >>> import os, tempfile
    >>> workdir = tempfile.mkdtemp(); trial = os.path.join(workdir, 'trials', '0'); os.makedirs(trial)
    >>> put_mark(os.path.join(trial, 'evaluating')); os.listdir(trial), sorted(os.listdir(workdir))
    (['evaluating'], ['nasx.evaluating', 'trials'])
    """
    trials = os.path.dirname(os.path.dirname(mark))
    if os.path.basename(trials) == _TRIALS_DIR:
        spare = os.path.join(os.path.dirname(trials), MARK_SPARE)
        try:
            os.link(spare, mark)
            return
        except FileExistsError:
            return
        except FileNotFoundError:  # the workdir's first mark: make the spare, then link it
            try:
                os.close(os.open(spare, os.O_WRONLY | os.O_CREAT, 0o644))
                os.link(spare, mark)
                return
            except FileExistsError:
                return
            except OSError:
                pass
        except OSError:  # no hard links here (some network and FAT filesystems)
            pass
    os.close(os.open(mark, os.O_WRONLY | os.O_CREAT, 0o644))


def _keep_weights(
    model: nn.Module | None, job: Job, result: TrialResult, log: logging.Logger
) -> None:
    """The trial's weights (:mod:`nasx.experiment.storage.weights`) into ``result``; failing to keep
    them is logged, and the trial, which trained fine, still succeeds."""
    from nasx.experiment.storage.weights import save_in_trial

    try:
        save_in_trial(model, job, result)
    except Exception as e:  # a full disk must not turn a trained trial into a failed one
        log.error("could not keep the weights:\n%s", traceback.format_exc())
        result.weights_error = f"{type(e).__name__}: {e}"


def _describe(e: BaseException) -> str:
    """The last line (``Type: message``) first, then the traceback, for the trial table."""
    head = f"{type(e).__name__}: {e}"
    tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    if isinstance(e, ValueError) and str(e).startswith("trial "):
        return head  # our own message says everything
    return f"{head}\n{tb}"


# One format for every trial log; a Formatter keeps no state between records, so all share it.
_LOG_FORMAT = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")


class _TrialLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes the records made in one thread to the log of the trial that thread runs.

    One per thread, reused trial after trial (its stream changes): making a handler per trial
    (a lock, a formatter, a filter) cost as much as writing the trial's two records.
    """

    def __init__(self) -> None:
        super().__init__(_NOWHERE)
        self.setFormatter(_LOG_FORMAT)
        self.thread = threading.get_ident()
        self.in_use = False

    def filter(self, record: logging.LogRecord) -> bool:
        # only the records of the thread running the trial, none of another thread's
        return record.thread == self.thread and bool(super().filter(record))


_handlers = threading.local()
_NOWHERE = io.StringIO()  # the stream of a handler between trials (it is on no logger then)


def _handler_for_this_thread() -> _TrialLogHandler:
    """This thread's handler; a fresh one when it is writing a trial's log already (a trial
    run inside a trial), so the outer trial's log keeps its handler."""
    handler: _TrialLogHandler | None = getattr(_handlers, "handler", None)
    if handler is None or handler.in_use:
        handler = _TrialLogHandler()
        if getattr(_handlers, "handler", None) is None:
            _handlers.handler = handler
    return handler


@contextlib.contextmanager
def _trial_log(log_path: str | Path | None, buffer: io.StringIO | None) -> Iterator[logging.Logger]:
    """A logger writing to the trial's log, which also captures the trial's own output.

    The handler sits on the root logger, so the records of the model, the evaluator and the
    libraries they call (Lightning...) reach the trial's log; a filter keeps only the records
    made in the thread running the trial, so another thread's records (a dashboard, a data
    loader thread, the application's own work) never land in it. Each record is flushed as it
    is written (a process that dies mid-trial leaves its log up to there).
    """
    stream = open(log_path, "a") if log_path else buffer  # noqa: SIM115
    handler = _handler_for_this_thread()
    handler.stream, handler.in_use = stream, True
    root = logging.getLogger()
    root.addHandler(handler)
    log = logging.getLogger("nasx.trial")
    if log.level == logging.NOTSET:
        # Once, and left set: setLevel clears the cache of every logger (hundreds once torch and
        # Lightning are imported), 0.3 ms that a fast trial paid twice. A level the user set stays.
        log.setLevel(logging.INFO)
    try:
        yield log
    finally:
        root.removeHandler(handler)
        handler.flush()
        handler.stream, handler.in_use = _NOWHERE, False  # the file is not kept open
        if log_path and stream is not None:
            stream.close()
