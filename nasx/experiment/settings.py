"""NasExperiment's arguments, checked: durations, the strategy's kind, the evaluator, the filter.

Each check raises an error that names the argument, what it got and what is allowed.

    >>> parse_duration('30m'), parse_duration(5), parse_duration(None)
    (1800.0, 5.0, None)
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasx._checks import check_int
from nasx._contracts import missing_members
from nasx.evaluator.base import DIRECTIONS, Direction, ModelEvaluator
from nasx.space import LabelConflictError, SearchSpace
from nasx.strategy.base import MultiTrialStrategy
from nasx.strategy.oneshot.base import OneShotStrategy

if TYPE_CHECKING:
    from nasx.experiment.storage.weights import KeepWeights

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
EXECUTIONS = ("sequential", "process", "ray")


def parse_duration(value: float | str | None, what: str = "max_duration") -> float | None:
    """Seconds from a number or a string like ``'90s'``, ``'30m'``, ``'2h'``, ``'1d'``.

    >>> parse_duration('2h')
    7200.0
    """
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"{what} must be positive, got {value}")
        return float(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", str(value))
    if not match:
        raise ValueError(
            f"{what} must be seconds or a string like '30s', '10m', '2h', '1d'; got {value!r}"
        )
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


@dataclass(frozen=True)
class RunSettings:
    """What the helpers of one ``NasExperiment.run()`` read of the experiment: a frozen copy
    taken as the run starts (NNI's ``exp.config`` may change the experiment between runs, never
    during one), so no helper is handed the facade itself. The fields are
    :class:`~nasx.experiment.NasExperiment`'s arguments of the same names, checked."""

    model_space: Any
    evaluator: Any
    strategy: Any
    workdir: Path
    direction: Direction
    execution: str
    max_concurrent_trials: int
    trial_timeout: float | None
    ray_address: str | None
    trial_resources: dict[str, Any] | None
    max_trials: int | None
    max_failed_trials: int | None
    max_duration: float | None
    max_trial_crashes: int | None
    rerun_interrupted: bool
    resume: bool | str
    overwrite: bool
    seed: int | None
    progress: bool
    tensorboard: bool
    build_model: bool
    keep_weights: Any
    scheduler: Any
    filter: Any

    @classmethod
    def of(cls, experiment: Any) -> RunSettings:
        """The settings of ``experiment`` (a NasExperiment) now."""
        return cls(**{f.name: getattr(experiment, f.name) for f in dataclasses.fields(cls)})


def check_execution(execution: str | None, trial_timeout: float | None) -> None:
    if execution not in (None, *EXECUTIONS):
        raise ValueError(f"execution must be 'sequential', 'process' or 'ray', got {execution!r}")
    if execution == "sequential" and trial_timeout is not None:
        raise ValueError(
            "trial_timeout needs trials in worker processes: use execution='process' (or 'ray')"
        )


def check_limits(exp: Any) -> None:
    """The counting arguments of ``exp`` (a NasExperiment; NNI's exp.config may set them late)."""
    check_int("max_trials", exp.max_trials, minimum=1)
    check_int("max_concurrent_trials", exp.max_concurrent_trials, minimum=1, allow_none=False)
    check_int("max_failed_trials", exp.max_failed_trials, minimum=0)
    check_int("seed", exp.seed, minimum=0)
    check_int("max_trial_crashes", exp.max_trial_crashes, minimum=1)


def default_execution(
    max_concurrent_trials: int, trial_timeout: float | None, wants_ray: bool
) -> str:
    """Ray when asked for a cluster or Ray's placement; sequential for one trial at a time
    without a timeout; else the local process pool."""
    if wants_ray:
        return "ray"
    return "sequential" if max_concurrent_trials == 1 and trial_timeout is None else "process"


def is_one_shot(strategy: Any) -> bool:
    """Which seam ``strategy`` implements; a TypeError naming the missing methods if neither."""
    multi = missing_members(strategy, MultiTrialStrategy)
    one_shot = missing_members(strategy, OneShotStrategy)
    if getattr(strategy, "is_one_shot", False) is True and one_shot:
        multi = ["(it declares is_one_shot = True)"]
    if not multi:
        return False
    if not one_shot:
        return True
    raise TypeError(
        f"the strategy must be a multi-trial strategy (setup, propose, tell: see "
        f"nasx.strategy.base.MultiTrialStrategy) or a one-shot strategy (run, export_top_models: "
        f"see nasx.strategy.oneshot.base.OneShotStrategy); {type(strategy).__name__} lacks "
        f"{', '.join(multi)} for the first and {', '.join(one_shot)} for the second"
    )


def check_evaluator(evaluator: Any) -> None:
    if isinstance(evaluator, ModelEvaluator):
        if not callable(evaluator.evaluate):
            raise TypeError(f"{type(evaluator).__name__}.evaluate must be a method")
        return
    if not callable(evaluator):
        raise TypeError(
            f"the evaluator must have an evaluate(model, report=None) method (see "
            f"nasx.evaluator.base.ModelEvaluator) or be a function fn(model) -> metric; "
            f"{type(evaluator).__name__} has no evaluate and is not callable"
        )


def as_filter(f: Any) -> Any:
    """A :class:`~nasx.experiment.filters.Filter` (or None) from what ``filter=`` was given."""
    if f is None or hasattr(f, "check"):
        return f
    if callable(f):
        from nasx.experiment.filters import Filter

        return Filter(f, on="arch")
    raise TypeError(
        f"filter must be a nasx.experiment.filters.Filter or a function f(arch) -> bool, "
        f"got {type(f).__name__}"
    )


def joint_space(space: SearchSpace, hparam_space: SearchSpace) -> SearchSpace:
    """The model's choices, then the evaluator's: the one space a strategy searches.

    A label in both is one decision only if both choices are the same decision (its value then
    goes to the model and to the evaluator); otherwise it is refused, naming the label. The
    space's constraints stay on the joint space (they read the model's labels).
    """
    if not hparam_space:
        return space
    joint = space.with_constraints()  # a copy that keeps the space's constraints
    if space.model_fn is not None:  # constraints on the model see the model's labels only
        build, labels = space.model_fn, frozenset(space)
        joint.model_fn = lambda arch: build({k: v for k, v in arch.items() if k in labels})
    for label, c in hparam_space.items():
        other = joint.setdefault(label, c)
        if other is not c and not other.same_decision(c):
            raise LabelConflictError(
                f"label {label!r} names a model choice ({other!r}) and an evaluator choice "
                f"({c!r}); give the hyperparameter another label (or the same values to share "
                "one decision)"
            )
    return joint


def default_workdir() -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    return Path("nasx_experiments") / stamp


def check_direction(direction: str) -> Direction:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
    return direction  # narrowed by the check above


def check_trial_resources(
    resources: dict[str, Any] | None, execution: str
) -> dict[str, Any] | None:
    """Ray's resources of one trial, checked; only with ``execution='ray'``."""
    if resources is None:
        return None
    from nasx.experiment.execution.ray import check_resources  # imports no Ray

    resources = check_resources(resources)
    if execution != "ray":
        raise ValueError(
            f"trial_resources are Ray's placement of each trial; execution is "
            f"{execution!r}: pass execution='ray' (or leave it out)"
        )
    return resources


def keep_weights_policy(keep_weights: str | int | None, build_model: bool) -> KeepWeights:
    """``keep_weights=`` parsed; refused when no model is built to keep."""
    from nasx.experiment.storage.weights import KeepWeights

    policy = KeepWeights.parse(keep_weights)
    if policy.enabled and not build_model:
        raise ValueError(
            f"keep_weights={str(policy)!r} keeps the trained model of trials, but "
            "build_model=False builds none: drop one of them"
        )
    return policy
