"""NNI 3.0's experiment dialect at the edge: ``experiment.config``'s fields mapped onto
NasExperiment's arguments, and NNI's ``run(port, ...)`` options accepted around nasx's ``run()``.

NNI scripts write ``exp.config.max_trial_number = 10``; in nasx that sets ``exp.max_trials``. NNI
fields without a nasx meaning (``trial_gpu_number``, ``training_service``, ...) are accepted and
ignored; any other name is refused with the list of known ones, so a typo is not silently lost.

    >>> class Exp: max_trials = None; max_concurrent_trials = 1; max_duration = None
    >>> cfg = NniConfig(Exp())
    >>> cfg.max_trial_number = 10; cfg.max_experiment_duration = '1h'
    >>> cfg.max_trial_number, cfg.max_experiment_duration
    (10, 3600.0)
    >>> cfg.max_trial_numbr = 3
    Traceback (most recent call last):
    ...
    AttributeError: experiment.config has no field 'max_trial_numbr' (did you mean 'max_trial_number'?); ...
"""

from __future__ import annotations

import difflib
import functools
import logging
import threading
import types
from collections.abc import Callable
from typing import Any, Concatenate, TypeVar

_Experiment = TypeVar("_Experiment")
_log = logging.getLogger("nasx.experiment")

# NNI 3.0's NasExperiment.run / Experiment.run options besides `port` (wait_completion=False runs
# in the background; the others are accepted without effect).
NNI_RUN_OPTIONS = ("config", "wait_completion", "debug")

# NNI field -> NasExperiment attribute
FIELDS = {
    "max_trial_number": "max_trials",
    "trial_concurrency": "max_concurrent_trials",
    "max_experiment_duration": "max_duration",
    "max_trial_duration": "trial_timeout",
}
_DURATIONS = {"max_experiment_duration": "max_duration", "max_trial_duration": "trial_timeout"}

# NNI 3.0 experiment config fields that mean nothing in nasx (no web UI, no training services):
# set them and nothing happens, as when an NNI script runs on the local training service.
INERT_FIELDS = (
    "experiment_name",
    "experiment_type",
    "search_space",
    "search_space_file",
    "trial_command",
    "trial_code_directory",
    "trial_gpu_number",
    "nni_manager_ip",
    "use_annotation",
    "debug",
    "log_level",
    "experiment_working_directory",
    "tuner_gpu_indices",
    "tuner",
    "assessor",
    "advisor",
    "shared_storage",
    "training_service",
    "execution_engine",
    "model_format",
)


class NniConfig:
    """Forwards NNI's config fields to the experiment; keeps NNI's inert ones as attributes."""

    def __init__(self, experiment: Any):
        object.__setattr__(self, "_experiment", experiment)
        object.__setattr__(self, "training_service", types.SimpleNamespace())
        object.__setattr__(self, "execution_engine", types.SimpleNamespace())

    def __getattr__(self, name: str) -> Any:
        if name in FIELDS:
            return getattr(self._experiment, FIELDS[name])
        raise AttributeError(_unknown(name))

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _DURATIONS:
            from nasx.experiment.settings import parse_duration

            value = parse_duration(value, _DURATIONS[name])
        if name in FIELDS:
            setattr(self._experiment, FIELDS[name], value)
        elif name in INERT_FIELDS:
            object.__setattr__(self, name, value)  # e.g. trial_gpu_number: no meaning here
        else:
            raise AttributeError(_unknown(name))


def _unknown(name: str) -> str:
    known = [*FIELDS, *INERT_FIELDS]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"experiment.config has no field {name!r}{hint}; nasx maps {', '.join(FIELDS)} and "
        f"accepts (ignoring them) NNI's {', '.join(INERT_FIELDS)}"
    )


class NasExperimentConfig:
    """NNI 3.0's ``NasExperimentConfig``: the experiment's settings as an object, given to
    ``NasExperiment(space, evaluator, strategy, config)``.

    The positional arguments are NNI's ``execution_engine``, ``model_format`` and
    ``training_service_platform``; they are kept and have no effect (nasx has one engine and runs
    trials in this process, worker processes or Ray: ``NasExperiment(execution=...)``). Keyword
    fields are NNI's config fields (``max_trial_number=10``, ``trial_concurrency=2``, ...), also
    settable as attributes; unknown names are refused naming the known ones.

        >>> config = NasExperimentConfig('sequential', 'raw', 'local', max_trial_number=3)
        >>> config.max_experiment_duration = '10m'
        >>> config.execution_engine, config.fields()
        ('sequential', {'max_trial_number': 3, 'max_experiment_duration': '10m'})
    """

    def __init__(
        self,
        execution_engine: Any = None,
        model_format: Any = None,
        training_service_platform: Any = None,
        **fields: Any,
    ) -> None:
        object.__setattr__(self, "_fields", {})
        object.__setattr__(self, "execution_engine", execution_engine)
        object.__setattr__(self, "model_format", model_format)
        object.__setattr__(self, "training_service_platform", training_service_platform)
        for name, value in fields.items():
            setattr(self, name, value)

    @classmethod
    def default(
        cls, model_space: Any = None, evaluator: Any = None, strategy: Any = None
    ) -> NasExperimentConfig:
        """NNI's ``NasExperimentConfig.default(space, evaluator, strategy)``: no fields set."""
        return cls()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("execution_engine", "model_format", "training_service_platform"):
            object.__setattr__(self, name, value)
        elif name in FIELDS or name in INERT_FIELDS:
            self._fields[name] = value
        else:
            raise AttributeError(_unknown(name))

    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("_fields", {})
        if name in fields:
            return fields[name]
        if name in FIELDS or name in INERT_FIELDS:
            return None  # not set: the experiment's default applies
        raise AttributeError(_unknown(name))

    def fields(self) -> dict[str, Any]:
        """The fields set, in the order they were set."""
        return dict(self._fields)

    def apply_to(self, experiment: Any) -> None:
        """Set the fields on ``experiment`` through its NNI ``config`` view (``exp.config``)."""
        for name, value in self._fields.items():
            if name not in ("execution_engine", "training_service"):
                setattr(experiment.config, name, value)

    def __repr__(self) -> str:
        args = [repr(a) for a in (self.execution_engine, self.model_format) if a is not None]
        args += [f"{k}={v!r}" for k, v in self._fields.items()]
        return f"NasExperimentConfig({', '.join(args)})"


def accepts_nni_run_options(
    run: Callable[[_Experiment], None],
) -> Callable[Concatenate[_Experiment, ...], None]:
    """nasx's ``run(self)`` that also takes NNI 3.0's ``run(port, config=, wait_completion=,
    debug=)``, so NNI scripts run unchanged: ``port`` serves ``nasx serve``'s dashboard of the run
    there (NNI's web UI, :mod:`~nasx.experiment.display.webui`), ``wait_completion=False`` runs it in a
    background thread (``NasExperiment.stop()`` ends it); ``config`` and ``debug`` are ignored.
    Any other keyword is refused, naming the known ones. ``inspect.signature`` shows ``run``'s own.

        >>> class Exp:
        ...     @accepts_nni_run_options
        ...     def run(self):
        ...         print('ran')
        >>> Exp().run(None, wait_completion=True, debug=False)
        ran
        >>> Exp().run(max_trial=3)
        Traceback (most recent call last):
        ...
        TypeError: NasExperiment.run() got unknown option(s) 'max_trial'; it takes port (the dashboard) ...
    """

    @functools.wraps(run)
    def run_accepting_nni_options(
        self: _Experiment, port: int | None = None, **nni_options: Any
    ) -> None:
        check_nni_run_options(nni_options)
        controls = getattr(self, "controls", None)
        if nni_options.get("wait_completion", True) is False and controls is not None:
            # NNI: return now, the run goes on in the background
            controls.start_in_background(functools.partial(_run_serving, run, self, port))
            return
        _run_serving(run, self, port)

    return run_accepting_nni_options


def _run_serving(run: Callable[[Any], None], exp: Any, port: int | None) -> None:
    """``run(exp)``, with NNI's web UI (``nasx serve``'s dashboard) on ``port`` while it runs."""
    controls = getattr(exp, "controls", None)
    if controls is not None:
        controls.stop_requested.clear()  # a run after stop() runs
    if port is None:
        run(exp)
        return
    from nasx.experiment.display.webui import WebUI

    with WebUI(exp.workdir, port):
        run(exp)


class NniControls:
    """NNI 3.0's experiment controls, held by a ``NasExperiment`` (``exp.controls``) rather than
    mixed into it: the stop flag its trial loop watches, and the background thread of
    ``run(wait_completion=False)``. ``NasExperiment.stop()`` and ``run_or_resume()`` hand over
    to :meth:`stop` and :meth:`run_or_resume`.

    Args:
        experiment: the experiment these controls run (its ``run``, ``workdir``, ``resume`` and
            ``is_one_shot``).
    """

    def __init__(self, experiment: Any) -> None:
        self.experiment = experiment
        #: set by :meth:`stop`: the trial loop proposes no more trials once it is
        self.stop_requested = threading.Event()
        self._background: threading.Thread | None = None  # run(wait_completion=False)'s run
        self._background_error: BaseException | None = None  # what it raised, for stop()

    def start_in_background(self, run: Callable[[], None]) -> None:
        """NNI's ``run(wait_completion=False)``: the run goes on in a thread of this process
        (the interpreter waits for it at exit); :meth:`stop` ends it, re-raising its error."""
        if self._background is not None and self._background.is_alive():
            raise RuntimeError("the experiment is already running in the background: stop() it")

        def target() -> None:
            try:
                run()
            except BaseException as e:  # noqa: BLE001 - handed to stop(), which re-raises it
                self._background_error = e
                _log.error("the experiment running in the background failed: %r", e)

        self._background = threading.Thread(target=target, name="nasx-experiment")
        self._background_error = None
        self._background.start()

    def stop(self) -> None:
        """Propose no more trials; wait for a background run and re-raise its error
        (``NasExperiment.stop`` says what a user sees)."""
        if self.experiment.is_one_shot and self._background is None:
            raise ValueError(
                "stop() ends a multi-trial run between trials; a one-shot search trains one "
                "supernet: interrupt it (Ctrl-C) and continue it from its checkpoint with "
                "resume=True"
            )
        self.stop_requested.set()
        thread = self._background
        if thread is None or thread is threading.current_thread():
            return
        thread.join()
        error, self._background, self._background_error = self._background_error, None, None
        if error is not None:
            raise error

    def run_or_resume(self, port: int | None, wait_completion: bool, debug: bool) -> None:
        """Resume the experiment stored in its ``workdir`` if there is one, else start it."""
        from nasx.experiment.storage.migrate import is_legacy_one_shot
        from nasx.experiment.storage.store import TrialStore

        exp = self.experiment
        if TrialStore.exists(exp.workdir) or is_legacy_one_shot(exp.workdir):
            exp.resume = exp.resume or True
        exp.run(port, wait_completion=wait_completion, debug=debug)


def check_nni_run_options(options: dict[str, Any]) -> None:
    """A TypeError naming ``options`` that are not NNI's ``run`` options (and what is known)."""
    unknown = sorted(set(options) - set(NNI_RUN_OPTIONS))
    if unknown:
        raise TypeError(
            f"NasExperiment.run() got unknown option(s) {', '.join(map(repr, unknown))}; it takes "
            f"port (the dashboard) and NNI's {', '.join(NNI_RUN_OPTIONS)}. "
            "Limits such as max_trials are NasExperiment(...) arguments"
        )
