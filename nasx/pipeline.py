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

The file is read with YAML's safe loader (no tags construct objects; aliases expand to at most
:data:`MAX_YAML_NODES` values; a key written twice is refused); every key is checked, and an
unknown key or a bad value is refused with its path and what is allowed. ``nasx run --check``
also builds the space and the strategy from their ``args`` (:func:`check_arguments`). Relative
paths are relative to the current directory. ``tutorials/pipelines/`` has examples (they are tested).

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
import functools
import os
import reprlib
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
    # none, all, best, top-<k> or k: each trial's trained weights (nasx.experiment.weights)
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


def _shown(value: Any) -> str:
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
            raise _fail(path, f"must be {wanted}, got {_shown(value)}")
        return float(value) if kind in ("float", "positive") else value
    if kind not in _CHECKERS:  # a schema entry with a kind nobody checks would accept anything
        raise AssertionError(f"{path}: the schema names an unknown kind {kind!r}")
    return _CHECKERS[kind](path, value, allowed)


def _check_choice(path: str, value: Any, allowed: Any) -> Any:
    options = allowed() if callable(allowed) else allowed
    if value not in options:
        raise _fail(
            path, f"{_shown(value)} is not allowed; allowed: {', '.join(map(str, options))}"
        )
    return value


def _check_steps(path: str, value: Any, allowed: Any) -> Any:
    if not isinstance(value, list) or not value:
        raise _fail(path, f"must be a non-empty list of steps from {list(allowed)}")
    for i, step in enumerate(value):
        if step not in allowed:
            raise _fail(
                f"{path}[{i}]", f"{_shown(step)} is not a step; allowed: {', '.join(allowed)}"
            )
    return value


def _check_keep(path: str, value: Any, allowed: Any) -> Any:
    from nasx.experiment.weights import KeepWeights

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
        raise _fail(path, f"must be seconds or a string such as '30m', got {_shown(value)}")
    try:
        parse_duration(value, path)
    except ValueError as e:
        raise _fail(path, str(e).removeprefix(f"{path} ")) from None
    return value


def _check_range(path: str, value: Any, allowed: Any = None) -> Any:
    pair = isinstance(value, list) and len(value) == 2
    if not (pair and all(v is None or _number(v) for v in value)) and not _number(value):
        raise _fail(
            path, f"must be [low, high] (null for no bound) or an upper bound, got {_shown(value)}"
        )
    bounds = value if pair else [value]
    if any(v is not None and v < 0 for v in bounds):
        raise _fail(path, f"bounds must be >= 0, got {_shown(value)}")
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


MAX_YAML_NODES = 100_000
"""The most values a pipeline file may hold once its aliases are expanded: a real file holds
tens; a 20-line alias bomb ("billion laughs") holds billions and is refused at once."""


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and :func:`validate` a pipeline YAML file.

    The YAML is read with the safe loader (no tags construct objects), aliases may expand to at
    most :data:`MAX_YAML_NODES` values, and a key written twice in one mapping is refused with
    both lines (YAML would silently keep the last). Every error is a :class:`PipelineError`
    naming the file, except a missing file (``FileNotFoundError``).
    """
    text = _read_text(path)
    try:
        return validate(_parse_yaml(text))
    except PipelineError as e:
        raise PipelineError(f"{path}: {e}") from None


def _read_text(path: str | os.PathLike[str]) -> str:
    file = Path(path)
    if file.is_dir():
        raise PipelineError(f"{path} is a directory: give the pipeline's YAML file inside it")
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such pipeline file") from None
    except OSError as e:
        raise PipelineError(f"{path}: cannot read the pipeline file ({e.strerror or e})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise PipelineError(
            f"{path}: not a UTF-8 text file (byte {data[e.start]:#04x} at offset {e.start}); a "
            "pipeline is a YAML text file"
        ) from None


def _parse_yaml(text: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_loader())  # a SafeLoader subclass
    except yaml.YAMLError as e:
        raise PipelineError(f"not valid YAML (or uses tags, which are refused): {e}") from None
    except RecursionError:
        raise PipelineError("not a pipeline: its lists or mappings are nested too deeply") from None


@functools.lru_cache(maxsize=1)
def _loader() -> type:
    """``yaml.SafeLoader`` that bounds alias expansion and refuses duplicate keys."""
    import yaml

    class PipelineLoader(yaml.SafeLoader):
        def get_single_node(self) -> Any:
            node = super().get_single_node()
            if node is not None:
                _check_expansion(node)
            return node

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            _refuse_duplicate_keys(self, node)
            return super().construct_mapping(node, deep=deep)

    return PipelineLoader


def _children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expansion(root: Any) -> None:
    """Refuse a document whose aliases expand to more than :data:`MAX_YAML_NODES` values, or
    refer to themselves. Counted on the node graph (each shared node once), so the check is
    as fast as the file is short."""
    expanded: dict[int, int] = {}  # id(node) -> values under it once aliases are expanded
    entered: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:  # depth-first, children before parents, without recursion
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            entered.discard(key)
            expanded[key] = 1 + sum(expanded[id(c)] for c in _children(node))
            if expanded[key] > MAX_YAML_NODES:
                line = node.start_mark.line + 1
                raise PipelineError(
                    f"line {line}: aliases expand to more than {MAX_YAML_NODES} values (an alias "
                    "bomb?); a pipeline file holds far fewer"
                )
            continue
        if key in expanded:
            continue
        if key in entered:
            line = node.start_mark.line + 1
            raise PipelineError(f"line {line}: an alias refers to itself (a recursive structure)")
        entered.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in expanded)


def _refuse_duplicate_keys(loader: Any, node: Any) -> None:
    import yaml

    first_line: dict[Any, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue  # merge keys (<<) may repeat what they merge: explicit keys win there
        key = loader.construct_object(key_node)
        line = key_node.start_mark.line + 1
        if key in first_line:
            raise PipelineError(
                f"line {line}: duplicate key {_shown(key)} (first at line {first_line[key]}); "
                "YAML would keep only the last one: remove or rename one of them"
            )
        first_line[key] = line


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
    args = search["space"]["args"]
    if "num_classes" in args:
        _check_value("search.space.args.num_classes", "count", args["num_classes"], None)
    try:
        space = entry.cls(**args)
    except (TypeError, ValueError) as e:
        raise PipelineError(f"search.space.args: {e}{_arguments_of(entry.cls)}") from None
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
    except (TypeError, ValueError) as e:
        raise PipelineError(f"search.strategy.args: {e}{_arguments_of(cls)}") from None


def _arguments_of(cls: type) -> str:
    """``'; NAME takes: a, b, c'``, what the message of a wrong argument adds."""
    import inspect

    try:
        names = [
            n
            for n, p in inspect.signature(cls).parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
    except (TypeError, ValueError):  # no signature to read
        return ""
    return f"; {cls.__name__} takes: {', '.join(names)}" if names else ""


def check_arguments(config: dict[str, Any]) -> None:
    """Build what a run builds from the arguments of a :func:`validate`-d configuration (the
    search's space from ``space.args``, its strategy from ``strategy.args``), so that a wrong
    name or value is refused before anything runs (``nasx run --check`` does this), as a
    :class:`PipelineError` naming the key and the arguments the class takes."""
    search = config.get("search")
    if search is not None:
        _space(search)
        _strategy(search)


def no_success_message(step: str, exp: Any) -> str | None:
    """None when the experiment ``exp`` of ``step`` has a succeeded trial; else one line saying
    so, with the trials' own errors (the first line of each distinct one, with its trials).

        >>> from types import SimpleNamespace as T
        >>> trial = lambda i: T(id=i, status='failed', error='IndexError: x')
        >>> print(no_success_message('search', T(workdir='w', trials=lambda: [trial(0), trial(1)])))
        search: no trial succeeded in w (2 failed): IndexError: x (trials 0, 1)
    """
    return _no_success(step, exp.workdir, exp.trials())


def _no_success(step: str, workdir: Any, trials: list[Any]) -> str | None:
    if any(t.status == "succeeded" for t in trials):
        return None
    if not trials:
        return f"{step}: no trial ran in {workdir} (the limits stopped it before the first)"
    counts: dict[str, int] = {}
    errors: dict[str, list[int]] = {}
    for t in trials:
        counts[t.status] = counts.get(t.status, 0) + 1
        if t.error:
            errors.setdefault(t.error.strip().splitlines()[0][:300], []).append(t.id)
    how = ", ".join(f"{n} {status}" for status, n in counts.items())
    shown = [
        f"{first} (trial{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids[:5]))}"
        f"{', ...' if len(ids) > 5 else ''})"
        for first, ids in list(errors.items())[:3]
    ]
    more = f"; and {len(errors) - 3} other error(s)" if len(errors) > 3 else ""
    return f"{step}: no trial succeeded in {workdir} ({how})" + (
        ": " + "; ".join(shown) + more if shown else ""
    )


def _check_stored_source(source: Any) -> None:
    """Stage 2 from a stored search whose trials all failed: say so with their errors (stage 2
    itself only says that there is no succeeded trial)."""
    if not isinstance(source, (str, os.PathLike)):
        return
    from nasx.experiment.readonly import ExperimentReadError, read_experiment

    try:
        record = read_experiment(source)
    except ExperimentReadError:
        return  # stage 2 says what is wrong with the folder
    message = _no_success("fullytrain", source, record.trials) if record.trials else None
    if message is not None:
        raise PipelineError(f"{message}; nothing to train")


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
        if "fullytrain" in todo and cfg["fullytrain"]["from"] is None:
            message = no_success_message("search", exp)
            if message is not None:  # stage 2 would have nothing to train
                raise PipelineError(f"{message}; fullytrain not run")
    if "fullytrain" in todo:
        full = cfg["fullytrain"]
        if space is None or shape is None:
            raise PipelineError("fullytrain: needs the search section (its space) in the file")
        data = full["data"] or cfg["search"]["data"]
        source = full["from"] or results.get("search") or cfg["search"]["workdir"]
        _check_stored_source(source)
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
