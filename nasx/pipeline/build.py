"""Building and running a validated pipeline: data, evaluator, space, cost, filter, strategy, then
the ``search`` and ``fullytrain`` steps (:func:`run_pipeline`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .schema import PipelineError, check_value, validate
from .yaml_file import load


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
        check_value("search.space.args.num_classes", "count", args["num_classes"], None)
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
    from nasx.experiment.storage.readonly import ExperimentReadError, read_experiment

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
    from nasx.experiment.results.second_stage import stage2

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
