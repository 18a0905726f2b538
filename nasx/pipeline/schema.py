"""The pipeline file's schema: every key, its default and what is allowed, and the checks
that :func:`validate` runs over a parsed file (no I/O, nothing built)."""

from __future__ import annotations

import copy
import reprlib
from collections.abc import Callable
from typing import Any

from nasx._errors import NasxError

STEPS = ("search", "fullytrain")
MULTI_TRIAL = (
    "Random",
    "GridSearch",
    "RegularizedEvolution",
    "PolicyGradient",
    "TPE",
    "LocalSearch",
)
DATASETS = ("cifar10", "random", "tfrecord")
COSTS = ("latency_ms", "macs", "flops", "params")
REQUIRED = object()


class PipelineError(NasxError, ValueError):
    """A pipeline file is invalid: the message starts with the key's path."""

    __module__ = "nasx.pipeline"  # its public home, as tracebacks show it


# ----------------------------------------------------------------------------- the schema
# A field is (kind, default, allowed); kind names a checker below; a dict is a nested section.
def _hub_spaces() -> tuple[str, ...]:
    from nasx.hub.registry import list_spaces

    return tuple(list_spaces("image"))  # its evaluator classifies images


def _range() -> tuple[str, Any, Any]:
    return ("range", None, None)


EVALUATOR = {
    "name": ("choice", "classification", ("classification",)),
    "max_epochs": ("count", 1, None),
    "batch_size": ("count", 64, None),
    "learning_rate": ("positive", 1e-3, None),
    "weight_decay": ("float", 0.0, None),
    "limit_train_batches": ("batches", None, None),
    "limit_val_batches": ("batches", None, None),
    "accelerator": ("str", "cpu", None),
}
DATA = {
    "name": ("choice", REQUIRED, DATASETS),
    # cifar10: the first train_size / val_size images of the train / test split (None: all)
    "train_size": ("count", None, None),
    "val_size": ("count", None, None),
    # random: Gaussian images with random labels (for trying a pipeline out)
    "num_samples": ("count", 64, None),
    "num_classes": ("count", 10, None),
    "image_size": ("count", 32, None),
    # tfrecord: globs of TFRecord shards in the Vertex layout
    "train": ("str", None, None),
    "val": ("str", None, None),
    "shuffle_buffer": ("int", 1000, None),
}
SEARCH = {
    "workdir": ("str", REQUIRED, None),
    "space": {"name": ("choice", REQUIRED, _hub_spaces), "args": ("dict", {}, None)},
    "strategy": {"name": ("choice", "Random", MULTI_TRIAL), "args": ("dict", {}, None)},
    "data": DATA,
    "evaluator": EVALUATOR,
    "input_shape": ("shape", None, None),
    "objective": {
        "type": ("choice", "accuracy", ("accuracy", "mnasnet_reward")),
        "target": ("positive", None, None),
        "constraint": ("choice", "soft", ("soft", "hard")),
        "cost": ("choice", "latency_ms", COSTS),
    },
    "latency": ("choice", "none", ("none", "measure")),
    "limits": {
        "max_trials": ("count", 10, None),
        "max_duration": ("duration", None, None),
        "params": _range(),
        "macs": _range(),
        "flops": _range(),
        "latency_ms": _range(),
        "patience": ("count", 100, None),
    },
    "seed": ("int", 0, None),
    "overwrite": ("bool", False, None),
    "resume": ("bool", False, None),
    # none, all, best, top-<k> or k: each trial's trained weights (nasx.experiment.storage.weights)
    "keep_weights": ("keep", "none", None),
}
FULLYTRAIN = {
    "workdir": ("str", REQUIRED, None),
    "from": ("str", None, None),  # default: the search step's workdir
    "top_k": ("count", 3, None),
    "seeds": ("count", 1, None),
    "warm_start": ("bool", False, None),  # start from the search trials' kept weights
    "rank_by": ("str", None, None),
    "data": DATA,  # default: the search step's
    "evaluator": EVALUATOR,
    "seed": ("int", 0, None),
    "overwrite": ("bool", False, None),
    "resume": ("bool", False, None),
}
TOP: dict[str, Any] = {
    "pipeline": ("steps", REQUIRED, STEPS),
    "search": SEARCH,
    "fullytrain": FULLYTRAIN,
}
OPTIONAL_SECTIONS = {"fullytrain.data"}  # None when absent: the search step's data


def _fail(path: str, message: str) -> PipelineError:
    return PipelineError(f"{path}: {message}")


def check_value(path: str, kind: str, value: Any, allowed: Any) -> Any:
    """``value`` at key ``path`` checked as ``kind`` (a schema field's checker) and returned as kept;
    a :class:`PipelineError` naming ``path`` and what is allowed otherwise."""
    try:
        return _check_kind(path, kind, value, allowed)
    except PipelineError as e:
        texts = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and _is_float(v) for v in texts):
            # YAML 1.1 reads 1.5e8 (no sign in the exponent) as a string
            raise PipelineError(f"{e} (write numbers as 1.5e+8 or 150000000)") from None
        raise


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def shown(value: Any) -> str:
    """``repr(value)`` cut short: a rejected value may be huge (an alias bomb), its message not."""
    return _SHORT_REPR.repr(value)


def _short_repr() -> reprlib.Repr:
    r = reprlib.Repr()
    r.maxlevel, r.maxdict, r.maxlist, r.maxstring, r.maxother = 2, 4, 4, 60, 60
    return r


_SHORT_REPR = _short_repr()


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_kind(path: str, kind: str, value: Any, allowed: Any) -> Any:
    checker = _CHECKS.get(kind)
    if checker is not None:
        ok, wanted = checker(value)
        if not ok:
            raise _fail(path, f"must be {wanted}, got {shown(value)}")
        return float(value) if kind in ("float", "positive") else value
    if kind not in _CHECKERS:  # a schema entry with a kind nobody checks would accept anything
        raise AssertionError(f"{path}: the schema names an unknown kind {kind!r}")
    return _CHECKERS[kind](path, value, allowed)


def _check_choice(path: str, value: Any, allowed: Any) -> Any:
    options = allowed() if callable(allowed) else allowed
    if value not in options:
        raise _fail(path, f"{shown(value)} is not allowed; allowed: {', '.join(map(str, options))}")
    return value


def _check_steps(path: str, value: Any, allowed: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise _fail(path, f"must be a non-empty list of steps from {list(allowed)}")
    for i, step in enumerate(value):
        if step not in allowed:
            raise _fail(
                f"{path}[{i}]", f"{shown(step)} is not a step; allowed: {', '.join(allowed)}"
            )
    return value


def _check_keep(path: str, value: Any, allowed: Any) -> Any:
    from nasx.experiment.storage.weights import KeepWeights

    try:
        return str(KeepWeights.parse(value))
    except ValueError as e:
        raise _fail(path, str(e)) from None


# kind -> (is the value fine?, what is allowed); the kinds with more to say are in _check_kind
_CHECKS: dict[str, Callable[[Any], tuple[bool, str]]] = {
    "int": lambda v: (_integer(v) and v >= 0, "a non-negative integer"),
    "count": lambda v: (_integer(v) and v >= 1, "a positive integer (1 or more)"),
    "float": lambda v: (_number(v) and v >= 0, "a non-negative number"),
    "positive": lambda v: (_number(v) and v > 0, "a positive number"),
    "batches": lambda v: (
        (_integer(v) and v >= 0) or (isinstance(v, float) and 0.0 <= v <= 1.0),
        "a number of batches (an integer >= 0) or a fraction of them (0.0 to 1.0)",
    ),
    "str": lambda v: (isinstance(v, str), "a string"),
    "bool": lambda v: (isinstance(v, bool), "true or false"),
    "dict": lambda v: (isinstance(v, dict), "a mapping"),
    "shape": lambda v: (
        isinstance(v, list) and bool(v) and all(_integer(x) and x >= 1 for x in v),
        "a list of positive integers such as [3, 32, 32]",
    ),
}


def _check_duration(path: str, value: Any, allowed: Any = None) -> Any:
    from nasx.experiment import parse_duration

    if not (_number(value) or isinstance(value, str)):
        raise _fail(path, f"must be seconds or a string such as '30m', got {shown(value)}")
    try:
        parse_duration(value, path)
    except ValueError as e:
        raise _fail(path, str(e).removeprefix(f"{path} ")) from None
    return value


def _check_range(path: str, value: Any, allowed: Any = None) -> Any:
    pair = isinstance(value, list) and len(value) == 2
    if not (pair and all(v is None or _number(v) for v in value)) and not _number(value):
        raise _fail(
            path, f"must be [low, high] (null for no bound) or an upper bound, got {shown(value)}"
        )
    bounds = value if pair else [value]
    if any(v is not None and v < 0 for v in bounds):
        raise _fail(path, f"bounds must be >= 0, got {shown(value)}")
    if pair and None not in value and value[0] > value[1]:
        raise _fail(path, f"[low, high] with low > high ({value[0]} > {value[1]}): swap them")
    return value


# the kinds with more to say than "must be ...": (path, value, allowed) -> the value to keep
_CHECKERS: dict[str, Callable[[str, Any, Any], Any]] = {
    "choice": _check_choice,
    "steps": _check_steps,
    "keep": _check_keep,
    "duration": _check_duration,
    "range": _check_range,
}


def _check_section(path: str, spec: dict[str, Any], given: Any) -> dict[str, Any]:
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise _fail(path or "(top level)", f"must be a mapping, got {type(given).__name__}")
    unknown = sorted(set(given) - set(spec))
    if unknown:
        where = f"{path}.{unknown[0]}" if path else unknown[0]
        raise _fail(where, f"unknown key; allowed: {', '.join(sorted(spec))}")
    out: dict[str, Any] = {}
    for key, field in spec.items():
        sub = f"{path}.{key}" if path else key
        if isinstance(field, dict):
            if sub in OPTIONAL_SECTIONS and given.get(key) is None:
                out[key] = None
                continue
            out[key] = _check_section(sub, field, given.get(key))
            continue
        kind, default, allowed = field
        if key not in given or given[key] is None:
            if default is REQUIRED:
                raise _fail(sub, "is required")
            out[key] = copy.deepcopy(default)
            continue
        out[key] = check_value(sub, kind, given[key], allowed)
    return out


def validate(config: Any) -> dict[str, Any]:
    """The checked configuration with defaults filled in; :class:`PipelineError` otherwise."""
    if not isinstance(config, dict):
        raise PipelineError(f"a pipeline file holds a mapping, got {type(config).__name__}")
    unknown = sorted(set(config) - set(TOP))
    if unknown:
        raise _fail(unknown[0], f"unknown key; allowed: {', '.join(TOP)}")
    if config.get("pipeline") is None:
        raise _fail("pipeline", f"is required (a list of steps from {list(STEPS)})")
    cfg: dict[str, Any] = {"pipeline": check_value("pipeline", "steps", config["pipeline"], STEPS)}
    for step in STEPS:
        if step in cfg["pipeline"] and step not in config:
            raise _fail(step, f"the pipeline runs '{step}' but the file has no '{step}:' section")
        if step in config:
            cfg[step] = _check_section(step, TOP[step], config[step])
    _check_across_keys(cfg)
    return cfg


def _check_across_keys(cfg: dict[str, Any]) -> None:
    """What one key needs from another (each section already checked on its own)."""
    search, full = cfg.get("search"), cfg.get("fullytrain")
    for step in STEPS:
        if cfg.get(step) is not None and cfg[step]["data"] is not None:
            _check_data(f"{step}.data", cfg[step]["data"])
    if search is not None:
        _check_search_needs(search)
    if full is not None and full["warm_start"] and full["from"] is None and search is not None:
        _check_warm_start(full, search)
    if "fullytrain" in cfg["pipeline"] and "search" not in cfg["pipeline"]:
        if cfg["fullytrain"]["from"] is None:
            raise _fail("fullytrain.from", "is required when the pipeline has no search step")


def _check_data(path: str, data: dict[str, Any]) -> None:
    if data["name"] == "tfrecord":
        for key in ("train", "val"):
            if data[key] is None:
                raise _fail(f"{path}.{key}", "is required for tfrecord data (a glob of shards)")


def _check_search_needs(search: dict[str, Any]) -> None:
    """What the search's objective and limits need from the rest of the section."""
    obj = search["objective"]
    if obj["type"] == "mnasnet_reward":
        if obj["target"] is None:
            raise _fail("search.objective.target", "is required by the mnasnet_reward objective")
        if obj["cost"] == "latency_ms" and search["latency"] == "none":
            raise _fail("search.latency", "a latency_ms objective needs latency: measure")
    if search["limits"]["latency_ms"] is not None and search["latency"] == "none":
        raise _fail("search.limits.latency_ms", "a latency range needs latency: measure")


def _check_warm_start(full: dict[str, Any], search: dict[str, Any]) -> None:
    """Stage 2 warm-started from this search needs the search to keep its top_k's weights."""
    keep = search["keep_weights"]
    k = int(keep[4:]) if keep.startswith("top-") else None
    if keep == "none" or (k is not None and k < full["top_k"]):
        raise _fail(
            "fullytrain.warm_start",
            f"starts from the search's weights of the top_k ({full['top_k']}) archs, but "
            f"search.keep_weights is {keep!r}: set it to 'all' or top-{full['top_k']} (or more)",
        )
