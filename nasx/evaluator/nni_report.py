"""NNI's ``nni.report_intermediate_result`` / ``nni.report_final_result``, for ported evaluators.

In nasx the metric is the evaluator's return value and intermediate metrics go through the
``report`` callback. NNI scripts instead call two global functions inside the evaluation
function; these are them, bound to the trial being evaluated: ``report_intermediate_result(x)`` is
``report(x)``, and the value of ``report_final_result(x)`` becomes the metric when the function
returns nothing (as NNI's do). The binding is a context variable set around each evaluation
(:func:`reporting`), by ``FunctionalEvaluator.evaluate`` and by the experiment's trial runner
for any other evaluator, so it follows the trial into a thread, a worker process or a Ray task
and never leaks into another trial. Called outside an evaluation, both log the value and do
nothing else, as NNI does in its standalone mode.

    >>> from nasx.evaluator import FunctionalEvaluator
    >>> def evaluate_model(model):
    ...     for epoch in range(2):
    ...         report_intermediate_result(0.5 + epoch / 10)
    ...     report_final_result(0.6)
    >>> seen = []
    >>> FunctionalEvaluator(evaluate_model).evaluate(None, report=seen.append)
    0.6
    >>> seen
    [0.5, 0.6]
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["mock_runtime", "report_final_result", "report_intermediate_result", "reporting"]

log = logging.getLogger(__name__)

_UNSET: Any = object()


class _Channel:
    """Where the reports of one evaluation go."""

    def __init__(self, report: Callable[[Any], None] | None) -> None:
        self.report = report
        self.final: Any = _UNSET

    def result(self, returned: Any) -> Any:
        """The metric of the evaluation: the returned value, or the reported final result."""
        if self.final is _UNSET:
            return returned
        if returned is None or returned is self.final:
            return self.final
        if returned != self.final:
            raise ValueError(
                f"the evaluation function reported {self.final!r} with report_final_result() "
                f"but returned {returned!r}: use one of them (nasx takes the return value; NNI "
                "ignores it)"
            )
        return returned


_CHANNEL: contextvars.ContextVar[_Channel | None] = contextvars.ContextVar(
    "nasx_nni_report", default=None
)
_MOCKED: contextvars.ContextVar[bool] = contextvars.ContextVar("nasx_nni_mock", default=False)


@contextlib.contextmanager
def mock_runtime(model: Any = None) -> Iterator[None]:
    """NNI's ``Evaluator.mock_runtime(model)``: evaluate outside an experiment and see the
    reports. Inside the block, the NNI report functions (and the ``report`` callback a
    :class:`~nasx.evaluator.FunctionalEvaluator` passes when none is given) log each value at
    INFO level to ``nasx.evaluator.nni_report``, as ``[Mock] Intermediate metric: <value>`` and
    ``[Mock] Final metric: <value>``, as NNI's mock does. ``model`` is accepted for NNI's
    signature (nasx needs no ``get_current_parameter()``: the model is the evaluator's argument).

    Refused (RuntimeError) inside a trial's evaluation or another ``mock_runtime``, as NNI's is
    where trial APIs are already available.

    >>> import logging, sys
    >>> handler = logging.StreamHandler(sys.stdout); log.addHandler(handler); log.setLevel('INFO')
    >>> with mock_runtime():
    ...     report_intermediate_result(0.5)
    ...     report_final_result(0.6)
    [Mock] Intermediate metric: 0.5
    [Mock] Final metric: 0.6
    >>> log.removeHandler(handler); log.setLevel(logging.NOTSET)
    """
    if _CHANNEL.get() is not None or _MOCKED.get():
        raise RuntimeError(
            "mock_runtime() cannot mock the trial APIs where they are already available (inside "
            "a trial's evaluation, or another mock_runtime block)"
        )
    token = _MOCKED.set(True)
    try:
        yield
    finally:
        _MOCKED.reset(token)


def mock_report(value: Any) -> None:
    """The ``report`` callback given when nobody listens: under :func:`mock_runtime` it logs the
    value, else it drops it."""
    if _MOCKED.get():
        log.info("[Mock] Intermediate metric: %s", value)


@contextlib.contextmanager
def reporting(report: Callable[[Any], None] | None) -> Iterator[_Channel]:
    """Bind the NNI report functions to ``report`` (intermediate metrics) for one evaluation.

    The caller passes what the evaluation returned to ``channel.result(...)`` to get the metric.

    >>> with reporting(print) as channel:
    ...     report_intermediate_result(0.25)
    ...     report_final_result(0.5)
    0.25
    >>> channel.result(None)
    0.5
    """
    channel = _Channel(report)
    token = _CHANNEL.set(channel)
    try:
        yield channel
    finally:
        _CHANNEL.reset(token)


def report_intermediate_result(metric: Any) -> None:
    """NNI's ``nni.report_intermediate_result``: an intermediate metric of the running trial.

    ``metric`` is a float, or a dict with a ``'default'`` float (as NNI allows). Outside an
    evaluation the value is only logged.

    >>> report_intermediate_result(0.9)  # no trial running: logged, nothing else
    """
    channel = _CHANNEL.get()
    if channel is None or channel.report is None:
        if _MOCKED.get():
            mock_report(metric)
        elif channel is None:
            log.info("Intermediate result: %s (no trial is running, so it goes nowhere)", metric)
        return
    channel.report(metric)


def report_final_result(metric: Any) -> None:
    """NNI's ``nni.report_final_result``: the metric of the running trial.

    It becomes the trial's metric when the evaluation function returns ``None``. Reporting twice
    in one evaluation is refused, as a trial has one final result. Outside an evaluation the
    value is only logged.

    >>> report_final_result(0.9)  # no trial running: logged, nothing else
    """
    channel = _CHANNEL.get()
    if _MOCKED.get():
        log.info("[Mock] Final metric: %s", metric)
    if channel is None:
        if not _MOCKED.get():
            log.info("Final result: %s (no trial is running, so it goes nowhere)", metric)
        return
    if channel.final is not _UNSET:
        raise RuntimeError(
            f"report_final_result() was called twice in one evaluation ({channel.final!r}, then "
            f"{metric!r}); a trial has one final result: report intermediate ones with "
            "report_intermediate_result()"
        )
    channel.final = metric
