"""A search pipeline described in one YAML file: search a hub space, then train the best archs.

``nasx run pipeline.yaml`` (or :func:`run_pipeline`) runs the steps named in ``pipeline:`` in
order, like Vega's ``pipeline: [nas, fullytrain]``:

- ``search``: a multi-trial search of a hub space (``space.name`` from
  :func:`nasx.hub.list_spaces`, with ``space.args``) by a strategy of :mod:`nasx.strategy`, each
  trial trained by a classification evaluator on ``data``, scored with its cost
  (:class:`~nasx.evaluator.cost.CostEvaluator`: params, MACs, FLOPs, latency) and ranked by
  ``objective`` (accuracy, or the MnasNet reward under a latency or MACs target); archs outside
  ``limits`` (FLOPs, params, latency ranges) are rejected before training.
- ``fullytrain``: :func:`~nasx.experiment.stage2.stage2`, the ``top_k`` archs of the search
  (or of the experiment in ``from``) trained ``seeds`` times with the full training settings;
  ``warm_start: true`` starts them from the search trials' weights (``search.keep_weights``).

The file is read with ``yaml.safe_load`` (no tags construct objects); every key is checked, and
an unknown key or a bad value is refused with its path and what is allowed. Relative paths are
relative to the current directory. ``tutorials/pipelines/`` has examples (they are tested).

    >>> cfg = validate({'pipeline': ['search'], 'search': {'workdir': 'w',
    ...     'space': {'name': 'mnasnet'}, 'strategy': {'name': 'Random'},
    ...     'data': {'name': 'random'}, 'evaluator': {'max_epochs': 1}}})
    >>> cfg['search']['objective']['type'], cfg['search']['limits']['max_trials']
    ('accuracy', 10)
    >>> validate({'pipeline': ['search'], 'search': {'workdir': 'w', 'spaec': {}}})
    Traceback (most recent call last):
    ...
    nasx.pipeline.PipelineError: search.spaec: unknown key; allowed: data, evaluator, ...
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._errors import NasxError

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


# ----------------------------------------------------------------------------- the schema
# A field is (kind, default, allowed); kind names a checker below; a dict is a nested section.
def _hub_spaces() -> tuple[str, ...]:
    from nasx.hub.registry import list_spaces

    return tuple(list_spaces())


def _range() -> tuple[str, Any, Any]:
    return ("range", None, None)


EVALUATOR = {
    "name": ("choice", "classification", ("classification",)),
    "max_epochs": ("int", 1, None),
    "batch_size": ("int", 64, None),
    "learning_rate": ("float", 1e-3, None),
    "weight_decay": ("float", 0.0, None),
    "limit_train_batches": ("number", None, None),
    "limit_val_batches": ("number", None, None),
    "accelerator": ("str", "cpu", None),
}
DATA = {
    "name": ("choice", REQUIRED, DATASETS),
    # cifar10: the first train_size / val_size images of the train / test split (None: all)
    "train_size": ("int", None, None),
    "val_size": ("int", None, None),
    # random: Gaussian images with random labels (for trying a pipeline out)
    "num_samples": ("int", 64, None),
    "num_classes": ("int", 10, None),
    "image_size": ("int", 32, None),
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
        "target": ("float", None, None),
        "constraint": ("choice", "soft", ("soft", "hard")),
        "cost": ("choice", "latency_ms", COSTS),
    },
    "latency": ("choice", "none", ("none", "measure")),
    "limits": {
        "max_trials": ("int", 10, None),
        "max_duration": ("duration", None, None),
        "params": _range(),
        "macs": _range(),
        "flops": _range(),
        "latency_ms": _range(),
        "patience": ("int", 100, None),
    },
    "seed": ("int", 0, None),
    "overwrite": ("bool", False, None),
    "resume": ("bool", False, None),
    # none, all, best, top-<k> or k: each trial's trained weights (nasx.experiment.weights)
    "keep_weights": ("keep", "none", None),
}
FULLYTRAIN = {
    "workdir": ("str", REQUIRED, None),
    "from": ("str", None, None),  # default: the search step's workdir
    "top_k": ("int", 3, None),
    "seeds": ("int", 1, None),
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


def _check_value(path: str, kind: str, value: Any, allowed: Any) -> Any:
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


def _check_kind(path: str, kind: str, value: Any, allowed: Any) -> Any:
    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if kind == "choice":
        options = allowed() if callable(allowed) else allowed
        if value not in options:
            raise _fail(path, f"{value!r} is not allowed; allowed: {', '.join(map(str, options))}")
    elif kind == "steps":
        if not isinstance(value, list) or not value:
            raise _fail(path, f"must be a non-empty list of steps from {list(allowed)}")
        for i, step in enumerate(value):
            if step not in allowed:
                raise _fail(
                    f"{path}[{i}]", f"{step!r} is not a step; allowed: {', '.join(allowed)}"
                )
    elif kind == "int":
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise _fail(path, f"must be a non-negative integer, got {value!r}")
    elif kind in ("float", "number"):
        if not number(value):
            raise _fail(path, f"must be a number, got {value!r}")
        value = float(value) if kind == "float" else value
    elif kind == "str":
        if not isinstance(value, str):
            raise _fail(path, f"must be a string, got {value!r}")
    elif kind == "bool":
        if not isinstance(value, bool):
            raise _fail(path, f"must be true or false, got {value!r}")
    elif kind == "dict":
        if not isinstance(value, dict):
            raise _fail(path, f"must be a mapping, got {value!r}")
    elif kind == "shape":
        if not (isinstance(value, list) and value and all(isinstance(v, int) for v in value)):
            raise _fail(path, f"must be a list of integers such as [3, 32, 32], got {value!r}")
    elif kind == "keep":
        from nasx.experiment.weights import KeepWeights

        try:
            value = str(KeepWeights.parse(value))
        except ValueError as e:
            raise _fail(path, str(e)) from None
    elif kind == "duration":
        if not (number(value) or isinstance(value, str)):
            raise _fail(path, f"must be seconds or a string such as '30m', got {value!r}")
    elif kind == "range":
        ok = isinstance(value, list) and len(value) == 2
        ok = ok and all(v is None or number(v) for v in value)
        if not (ok or number(value)):
            raise _fail(
                path, f"must be [low, high] (null for no bound) or an upper bound, got {value!r}"
            )
    return value


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
        out[key] = _check_value(sub, kind, given[key], allowed)
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
    cfg: dict[str, Any] = {"pipeline": _check_value("pipeline", "steps", config["pipeline"], STEPS)}
    for step in STEPS:
        if step in cfg["pipeline"] and step not in config:
            raise _fail(step, f"the pipeline runs '{step}' but the file has no '{step}:' section")
        if step in config:
            cfg[step] = _check_section(step, TOP[step], config[step])
    search = cfg.get("search")
    if search is not None and search["objective"]["type"] == "mnasnet_reward":
        obj = search["objective"]
        if obj["target"] is None:
            raise _fail("search.objective.target", "is required by the mnasnet_reward objective")
        if obj["cost"] == "latency_ms" and search["latency"] == "none":
            raise _fail("search.latency", "a latency_ms objective needs latency: measure")
    if (
        search is not None
        and search["limits"]["latency_ms"] is not None
        and search["latency"] == "none"
    ):
        raise _fail("search.limits.latency_ms", "a latency range needs latency: measure")
    full = cfg.get("fullytrain")
    if full is not None and full["warm_start"] and full["from"] is None and search is not None:
        keep = search["keep_weights"]
        k = int(keep[4:]) if keep.startswith("top-") else None
        if keep == "none" or (k is not None and k < full["top_k"]):
            raise _fail(
                "fullytrain.warm_start",
                f"starts from the search's weights of the top_k ({full['top_k']}) archs, but "
                f"search.keep_weights is {keep!r}: set it to 'all' or top-{full['top_k']} (or more)",
            )
    if "fullytrain" in cfg["pipeline"] and "search" not in cfg["pipeline"]:
        if cfg["fullytrain"]["from"] is None:
            raise _fail("fullytrain.from", "is required when the pipeline has no search step")
    return cfg


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and :func:`validate` a pipeline YAML file (safe loader)."""
    import yaml

    text = Path(path).read_text()
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise PipelineError(
            f"{path}: not valid YAML (or uses tags, which are refused): {e}"
        ) from None
    try:
        return validate(raw)
    except PipelineError as e:
        raise PipelineError(f"{path}: {e}") from None


# ----------------------------------------------------------------------------- building
def _datasets(data: dict[str, Any], input_shape: tuple[int, ...]) -> tuple[Any, Any]:
    import torch
    from torch.utils.data import Subset, TensorDataset

    name = data["name"]
    if name == "random":
        g = torch.Generator().manual_seed(0)
        n, size = data["num_samples"], data["image_size"]
        x = torch.randn(n, input_shape[0], size, size, generator=g)
        y = torch.randint(0, data["num_classes"], (n,), generator=g)
        return TensorDataset(x, y), TensorDataset(x[: max(1, n // 4)], y[: max(1, n // 4)])
    if name == "cifar10":
        from nasx.datasets import cifar10

        train: Any = cifar10("train")
        val: Any = cifar10("test")
        if data["train_size"] is not None:
            train = Subset(train, range(data["train_size"]))
        if data["val_size"] is not None:
            val = Subset(val, range(data["val_size"]))
        return train, val
    from nasx.datasets.tfrecord_images import TFRecordImageDataset

    if data["train"] is None or data["val"] is None:
        raise PipelineError("data.train and data.val are required for tfrecord data (shard globs)")
    return (
        TFRecordImageDataset(data["train"], shuffle_buffer=data["shuffle_buffer"]),
        TFRecordImageDataset(data["val"]),
    )


def build_evaluator(ev: dict[str, Any], data: dict[str, Any], input_shape: tuple[int, ...]) -> Any:
    """The ``Classification`` evaluator of an ``evaluator:`` and a ``data:`` section."""
    from torch.utils.data import DataLoader, IterableDataset

    from nasx.evaluator import Classification

    train, val = _datasets(data, input_shape)
    shuffle = not isinstance(train, IterableDataset)
    trainer: dict[str, Any] = {"max_epochs": ev["max_epochs"], "accelerator": ev["accelerator"]}
    for key in ("limit_train_batches", "limit_val_batches"):
        if ev[key] is not None:
            trainer[key] = ev[key]
    return Classification(
        learning_rate=ev["learning_rate"],
        weight_decay=ev["weight_decay"],
        train_dataloaders=DataLoader(train, batch_size=ev["batch_size"], shuffle=shuffle),
        val_dataloaders=DataLoader(val, batch_size=ev["batch_size"]),
        enable_progress_bar=False,
        **trainer,
    )


def _space(search: dict[str, Any]) -> tuple[Any, tuple[int, ...]]:
    from nasx.hub.registry import space_entry

    entry = space_entry(search["space"]["name"])
    try:
        space = entry.cls(**search["space"]["args"])
    except TypeError as e:
        raise PipelineError(f"search.space.args: {e}") from None
    shape = tuple(search["input_shape"] or entry.input_size)
    return space, shape


def _cost_evaluator(search: dict[str, Any], inner: Any, shape: tuple[int, ...]) -> Any:
    from nasx.evaluator.cost import CostEvaluator
    from nasx.hardware.reward import MnasNetReward

    obj = search["objective"]
    objective = None
    if obj["type"] == "mnasnet_reward":
        objective = MnasNetReward(obj["target"], obj["constraint"], cost=obj["cost"])
    latency = "measure" if search["latency"] == "measure" else None
    return CostEvaluator(inner, shape, latency=latency, objective=objective)


def _filter(search: dict[str, Any], shape: tuple[int, ...]) -> Any:
    from nasx.experiment.filters import CostFilter
    from nasx.hardware.latency import measure_latency

    limits = search["limits"]
    ranges = {
        k: limits[k] for k in ("params", "macs", "flops", "latency_ms") if limits[k] is not None
    }
    if not ranges:
        return None
    latency: Callable[..., float] | None = None
    if "latency_ms" in ranges:
        latency = lambda m, s: measure_latency(m, s, warmup=3, repeats=10).median_ms  # noqa: E731
    ranges = {k: tuple(v) if isinstance(v, list) else v for k, v in ranges.items()}
    return CostFilter(shape, latency=latency, patience=limits["patience"], **ranges)


def _strategy(search: dict[str, Any]) -> Any:
    import nasx.strategy

    cls = getattr(nasx.strategy, search["strategy"]["name"])
    try:
        return cls(**search["strategy"]["args"])
    except TypeError as e:
        raise PipelineError(f"search.strategy.args: {e}") from None


def run_pipeline(
    config: dict[str, Any] | str | os.PathLike[str],
    steps: list[str] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run a pipeline (a file or a dict); returns ``{step: NasExperiment}``. ``steps`` runs a
    subset of the file's steps (in the file's order)."""
    cfg = load(config) if not isinstance(config, dict) else validate(config)
    from nasx.experiment import NasExperiment
    from nasx.experiment.stage2 import stage2

    todo = [s for s in cfg["pipeline"] if steps is None or s in steps]
    results: dict[str, Any] = {}
    space = shape = None
    if "search" in cfg:
        space, shape = _space(cfg["search"])
    if "search" in todo:
        search = cfg["search"]
        assert space is not None and shape is not None
        inner = build_evaluator(search["evaluator"], search["data"], shape)
        exp = NasExperiment(
            space,
            _cost_evaluator(search, inner, shape),
            _strategy(search),
            workdir=search["workdir"],
            max_trials=search["limits"]["max_trials"],
            max_duration=search["limits"]["max_duration"],
            filter=_filter(search, shape),
            seed=search["seed"],
            overwrite=search["overwrite"],
            resume=search["resume"],
            progress=progress,
            keep_weights=search["keep_weights"],
        )
        exp.run()
        results["search"] = exp
    if "fullytrain" in todo:
        full = cfg["fullytrain"]
        if space is None or shape is None:
            raise PipelineError("fullytrain: needs the search section (its space) in the file")
        data = full["data"] or cfg["search"]["data"]
        source = full["from"] or results.get("search") or cfg["search"]["workdir"]
        results["fullytrain"] = stage2(
            source,
            _cost_evaluator(cfg["search"], build_evaluator(full["evaluator"], data, shape), shape),
            top_k=full["top_k"],
            seeds=full["seeds"],
            rank_by=full["rank_by"],
            model_space=space,
            workdir=full["workdir"],
            seed=full["seed"],
            overwrite=full["overwrite"],
            resume=full["resume"],
            progress=progress,
            warm_start=full["warm_start"],
        )
    return results
