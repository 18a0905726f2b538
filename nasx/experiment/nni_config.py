"""``experiment.config``: NNI 3.0's config fields, mapped onto NasExperiment's arguments.

NNI scripts write ``exp.config.max_trial_number = 10``; in nasx that sets ``exp.max_trials``. Fields
without a nasx meaning (``training_service``, ``execution_engine``, ...) are accepted and ignored.

    >>> class Exp: max_trials = None; max_concurrent_trials = 1; max_duration = None
    >>> cfg = NniConfig(Exp())
    >>> cfg.max_trial_number = 10; cfg.max_experiment_duration = '1h'
    >>> cfg.max_trial_number, cfg.max_experiment_duration
    (10, 3600.0)
"""

from __future__ import annotations

import types
from typing import Any

# NNI field -> NasExperiment attribute
FIELDS = {
    "max_trial_number": "max_trials",
    "trial_concurrency": "max_concurrent_trials",
    "max_experiment_duration": "max_duration",
}


class NniConfig:
    """Forwards NNI's config fields to the experiment; keeps the others as inert attributes."""

    def __init__(self, experiment: Any):
        object.__setattr__(self, "_experiment", experiment)
        object.__setattr__(self, "training_service", types.SimpleNamespace())
        object.__setattr__(self, "execution_engine", types.SimpleNamespace())

    def __getattr__(self, name: str) -> Any:
        if name in FIELDS:
            return getattr(self._experiment, FIELDS[name])
        raise AttributeError(f"experiment.config has no field {name!r}; nasx maps {sorted(FIELDS)}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "max_experiment_duration":
            from .experiment import parse_duration

            value = parse_duration(value)
        if name in FIELDS:
            setattr(self._experiment, FIELDS[name], value)
        else:
            object.__setattr__(self, name, value)  # e.g. trial_gpu_number: no meaning here
