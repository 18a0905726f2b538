"""``experiment.config``: NNI 3.0's config fields, mapped onto NasExperiment's arguments.

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
import types
from typing import Any

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
            from .experiment import parse_duration

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
