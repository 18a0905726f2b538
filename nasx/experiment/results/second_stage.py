"""Stage 2: train the best archs of a finished search fully, as trials of a second experiment.

The Vertex AI NAS workflow searches on a proxy task (stage 1), then trains the top archs with the
full configuration (stage 2: another evaluator, more epochs, several seeds). :func:`stage2` takes
the top ``top_k`` archs of a search (ranked by its objective, another metric, or the Pareto front
of several), and runs them in a new :class:`~nasx.experiment.NasExperiment` in which each trial
records where its arch came from (``stage2.json`` in the new workdir, and a ``source_trial``
metric on every trial).

    >>> import tempfile, torch.nn as nn
    >>> from nasx.space import ModelSpace, choice
    >>> from nasx.strategy import GridSearch
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(2, choice('width', [1, 2, 3]))
    >>> root = tempfile.mkdtemp()
    >>> search = NasExperiment(Net(), lambda m: m.fc.out_features, GridSearch(shuffle=False),
    ...                        workdir=root + '/search', progress=False)
    >>> search.run()
    >>> full = stage2(search, lambda m: 10.0 * m.fc.out_features, top_k=2, seeds=2,
    ...               workdir=root + '/full', progress=False)
    >>> [(t.arch['width'], t.metric, t.metrics['source_trial']) for t in full.trials()]
    [(3, 30.0, 2.0), (3, 30.0, 2.0), (2, 20.0, 1.0), (2, 20.0, 1.0)]
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nasx.evaluator.base import Evaluator, Report, accepts_parameter, direction_of
from nasx.experiment.experiment import NasExperiment
from nasx.experiment.results.pareto import pareto_front
from nasx.experiment.storage.readonly import read_experiment
from nasx.trial import Trial, arch_key, best_trials

ORIGIN_FILE = "stage2.json"


class FixedArchs:
    """A multi-trial strategy that proposes the given archs in order, then stops (resumable:
    it continues after the trials already stored)."""

    def __init__(self, archs: Sequence[dict[str, Any]]):
        self.archs = [dict(a) for a in archs]
        self.position = 0

    def setup(
        self, search_space: Any, trials: Iterable[Trial] = (), direction: Any = "maximize"
    ) -> None:
        self.position = len(list(trials))

    def propose(self) -> dict[str, Any] | None:
        if self.position >= len(self.archs):
            return None
        self.position += 1
        return self.archs[self.position - 1]

    def tell(self, trial: Trial) -> None:
        pass


class _WithOrigin(Evaluator):
    """Adds ``source_trial`` (the stage-1 trial id of the arch) to the inner evaluator's metrics;
    with ``warm``, first loads the arch's stage-1 weights into the model (a warm start)."""

    def __init__(
        self,
        evaluator: Any,
        origins: dict[str, int],
        warm: dict[str, tuple[str, int | None]] | None = None,
        model_space: Any = None,
    ):
        self.evaluator, self.origins = evaluator, origins
        self.direction = direction_of(evaluator)
        self.warm = warm or {}  # arch key -> (source workdir, trial id; None: a one-shot subnet)
        # Not stored as `model_space`: the resume check compares constructor settings by name.
        self.warm_space = model_space

    def evaluate(self, model: Any, report: Report | None = None, arch: Any = None) -> Any:
        if arch is not None and arch_key(arch) in self.warm:
            from nasx.experiment.results.loading import warm_start

            source_dir, trial = self.warm[arch_key(arch)]
            warm_start(model, source_dir, trial, arch, self.warm_space)
        fn = getattr(self.evaluator, "evaluate", self.evaluator)
        kwargs: dict[str, Any] = {}
        if report is not None and accepts_parameter(fn, "report"):
            kwargs["report"] = report
        if arch is not None and accepts_parameter(fn, "arch"):
            kwargs["arch"] = arch
        value = fn(model, **kwargs)
        metrics = dict(value) if isinstance(value, Mapping) else {"default": value}
        source = self.origins.get(arch_key(arch)) if arch is not None else None
        if source is not None:
            metrics["source_trial"] = float(source)
        return metrics


def top_archs(
    source: NasExperiment | str | os.PathLike[str],
    top_k: int = 3,
    *,
    rank_by: str | None = None,
    direction: str | None = None,
    pareto: Mapping[str, str] | Sequence[str] | None = None,
) -> list[tuple[dict[str, Any], int | None, float | None]]:
    """``(arch, source trial id, source metric)`` of the ``top_k`` best archs of ``source``.

    ``rank_by`` ranks by another metric of the trials (with ``direction``, default the
    experiment's); ``pareto`` takes the Pareto front over those objectives (best ``'default'``
    first). A one-shot experiment contributes its exported archs (its rows: the id is the
    export rank, there is no metric).
    """
    if isinstance(source, NasExperiment):
        trials, exp_direction = source.trials(), str(source.direction)
    else:
        record = read_experiment(source)
        trials, exp_direction = record.trials, record.direction
    if pareto is not None:
        ranked = sorted(pareto_front(trials, pareto), key=lambda t: -(t.metric or 0.0))
        if exp_direction == "minimize":
            ranked.reverse()
    elif rank_by is not None:
        d = direction or exp_direction
        have = [t for t in trials if t.succeeded and rank_by in t.metrics]
        if not have:
            raise ValueError(f"no succeeded trial has the metric {rank_by!r}")
        ranked = sorted(
            have, key=lambda t: ((-1 if d == "maximize" else 1) * t.metrics[rank_by], t.id)
        )
    else:
        ranked = best_trials(trials, exp_direction)
    picked = ranked[:top_k]
    if not picked:
        raise ValueError("the source experiment has no succeeded trial to train in stage 2")
    return [(t.arch, t.id, t.metric) for t in picked]


def stage2(
    source: NasExperiment | str | os.PathLike[str],
    evaluator: Any,
    *,
    top_k: int = 3,
    seeds: int = 1,
    model_space: Any = None,
    rank_by: str | None = None,
    pareto: Mapping[str, str] | Sequence[str] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    seed: int = 0,
    run: bool = True,
    warm_start: bool = False,
    **experiment_options: Any,
) -> NasExperiment:
    """Train the ``top_k`` archs of ``source`` with ``evaluator``, ``seeds`` times each.

    Args:
        source: the finished search (a NasExperiment, or its workdir).
        evaluator: the full-training evaluator (more epochs, full data...).
        top_k, rank_by, pareto: which archs: the ``top_k`` best by the source's metric, or by
            ``rank_by`` (another metric of its trials), or first of the Pareto front over the
            ``pareto`` objectives (best ``'default'`` first).
        seeds: trainings per arch; trial ``i`` is seeded with ``seed + i``.
        model_space: the space (default the source experiment's; needed with a workdir).
        workdir: the stage-2 experiment's directory (default ``<source workdir>-stage2``).
        run: run it now (False: return it configured, to run or resume later).
        warm_start: start each training from the arch's stage-1 weights rather than from scratch:
            the source trial's kept weights (the search must have run with ``keep_weights``
            covering the ``top_k``: checked before anything runs), or for a one-shot source the
            weights the arch inherits from its supernet checkpoint.
        experiment_options: more :class:`NasExperiment` arguments (``resume=True``,
            ``max_concurrent_trials``, ``execution``...).
    """
    if seeds < 1 or top_k < 1:
        raise ValueError(f"top_k and seeds must be at least 1, got {top_k} and {seeds}")
    if model_space is None:
        if not isinstance(source, NasExperiment):
            raise ValueError("stage2 from a workdir needs model_space= (the search's space)")
        model_space = source.model_space
    source_dir = Path(source.workdir if isinstance(source, NasExperiment) else source)
    picked = top_archs(source, top_k, rank_by=rank_by, pareto=pareto)
    archs = [arch for arch, _, _ in picked for _ in range(seeds)]
    origins = {arch_key(arch): tid for arch, tid, _ in picked if tid is not None}
    warm = None
    if warm_start:
        from nasx.experiment.results.loading import warm_sources

        warm = warm_sources(source_dir, [(arch, tid) for arch, tid, _ in picked])
    workdir = (
        Path(workdir) if workdir is not None else source_dir.with_name(source_dir.name + "-stage2")
    )
    exp = NasExperiment(
        model_space,
        _WithOrigin(evaluator, origins, warm, model_space if warm else None),
        FixedArchs(archs),
        workdir=workdir,
        seed=seed,
        **experiment_options,
    )
    record = {
        "source": str(source_dir.resolve()),
        "top_k": top_k,
        "seeds": seeds,
        "rank_by": rank_by,
        "pareto": list(pareto) if pareto is not None else None,
        "warm_start": warm_start,
        "trials": [
            {
                "trial": i,
                "arch": arch,
                "source_trial": tid,
                "source_metric": metric,
                "repeat": r,
                "seed": seed + i,
            }
            for i, (arch, tid, metric, r) in enumerate(
                (a, t, m, r) for a, t, m in picked for r in range(seeds)
            )
        ],
    }
    if run:
        exp.run()
        (Path(exp.workdir) / ORIGIN_FILE).write_text(json.dumps(record, indent=1))
    return exp
