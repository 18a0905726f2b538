"""nasx's multi-fidelity schedulers beside Syne Tune's and Optuna's, on the same learning-curve
tables, in one process, with the same seeds, budget and simulated workers (issue 44).

    PYTHONPATH=. python benchmarks/peers.py [--table benchmarks/learning_curves.csv \
        --seeds 100 --workers 1,8 --reference-trials 60] [--save run.json] [--fast]
    PYTHONPATH=. python benchmarks/peers.py --merge run.json other-seeds.json other-version.json

Every method searches the table's archs for E = ``--reference-trials`` full trainings' worth of
epochs (60 x the table's epochs, as ``multi_fidelity.py`` defines it), with W simulated workers.
Each epoch takes the table's seconds on one worker; the scheduler hears the table's validation
value after each epoch; a promoted trial continues where it paused. The search's pick after e
epochs (all trials together) is nasx's rule for all three libraries: the trial with the best
validation value at the highest budget any trial reached, scored by the table's test value at
the full budget (``SimulationResult.test_at``). Rungs: min 1 epoch, max the table's, eta 3.

- nasx: ``simulate`` with ASHA (promotion and stopping), Hyperband, MedianStopping (with
  ``Random`` and with ``RegularizedEvolution`` proposing), BOHB; full-budget RE and Random as
  references (not counted as "nasx's best").
- Syne Tune: its schedulers driven by this file's event-driven replay (:func:`replay`, the
  timing model and pick rule of ``simulate``; not Syne Tune's simulator back-end, which runs a
  whole ``Tuner`` with files on disk per run) through their own API, called as Syne Tune's
  ``Tuner`` calls it: ``suggest`` / ``on_trial_add`` / ``on_trial_result`` /
  ``on_trial_remove`` (after STOP or PAUSE) / ``on_trial_complete``. Syne Tune 0.16 (0.15 and
  later) has ASHA in stopping mode only, with brackets, BOHB as ASHA + KDE, the median
  stopping rule; with Syne Tune 0.14 on the path instead (``pip install --no-deps --target DIR
  syne-tune==0.14.2 autograd``, then ``PYTHONPATH=DIR:.``) the script runs 0.14's legacy
  schedulers: ASHA promotion and stopping, asynchronous and synchronous Hyperband, BOHB, DEHB,
  MOBSTER (:func:`syne_tune_legacy_methods`).
- Optuna: ask / tell with its pruners (``trial.report`` + ``should_prune``), the same replay,
  W trials in flight at once (one worker reproduces ``multi_fidelity.run_optuna``).

Pairing ("shared" proposer): for every method that proposes uniformly at random, seed s feeds
the same stream of archs: nasx ``Random(seed=s)``'s proposals, in order (distinct archs), given
to Syne Tune as ``points_to_evaluate`` and to Optuna by ``enqueue_trial``. Then a paired
difference compares schedulers, not draws. Model-based proposers (nasx BOHB and RE, Syne Tune's
KDE, RE and GP searchers, DEHB, Optuna's TPE) and the "own random" rows use their library's
generator seeded with s.

Statistics: per table and W, at E/9, E/3, E/2 and E, the mean test accuracy of each method's
pick over the seeds; for each library its best multi-fidelity method at that fraction (by mean;
references excluded), and the paired difference nasx's best - peer's best (mean and standard
error over the seeds). A tie is a difference within one paired standard error. A held-out
variant picks each library's best on the even seeds and compares on the odd ones. The test-split
noise floor is the standard error of one test accuracy on n test images, sqrt(p(1-p)/n).

``--save`` writes every per-seed value; ``--merge`` reports saved runs together: other seeds
are appended, runs of the same seeds with other methods (another Syne Tune version) are joined.
``--duplicates N`` counts the trials each method starts and how many distinct archs they are.
``--fast`` runs a small made-up table with 3 seeds (the test suite runs it, seconds).
"""

from __future__ import annotations

import argparse
import datetime
import heapq
import json
import logging
import math
import platform
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nasx.experiment.schedulers import (  # noqa: E402
    ASHA,
    BOHB,
    FullBudget,
    Hyperband,
    LearningCurves,
    MedianStopping,
    SimulationResult,
    simulate,
)
from nasx.strategy import Random, RegularizedEvolution  # noqa: E402

FRACTIONS = (1 / 9, 1 / 3, 1 / 2, 1.0)
FRACTION_LABELS = ("E/9", "E/3", "E/2", "E")
SIDES = ("nasx", "Syne Tune", "Optuna")
#: test images per table (learning_curves.results.md: every table has a 2,000-image test split)
TEST_IMAGES = {
    "learning_curves.csv": 2000,
    "learning_curves27.csv": 2000,
    "learning_curves27v8k.csv": 2000,
}
CONTINUE, STOP = "continue", "stop"
#: (nasx row, peer row) pairs that run the same algorithm on the same arch stream (or the same
#: kind of model-based proposer): their paired difference is the implementations' difference
LIKE_FOR_LIKE = (
    ("nasx: ASHA|shared", "Syne Tune: ASHA promotion (0.14)|shared"),
    ("nasx: ASHA stopping|shared", "Syne Tune: ASHA stopping|shared"),
    ("nasx: ASHA stopping|shared", "Syne Tune: ASHA stopping (0.14)|shared"),
    ("nasx: ASHA stopping|shared", "Optuna: SuccessiveHalvingPruner|shared"),
    ("nasx: Hyperband|shared", "Syne Tune: SyncHyperband (0.14)|shared"),
    ("nasx: Hyperband|shared", "Optuna: HyperbandPruner|shared"),
    ("nasx: MedianStopping|shared", "Syne Tune: MedianStoppingRule|shared"),
    ("nasx: MedianStopping|shared", "Optuna: MedianPruner|shared"),
    ("nasx: BOHB|own model", "Syne Tune: BOHB (ASHA + KDE)|own model"),
    ("nasx: BOHB|own model", "Syne Tune: BOHB (async promotion; 0.14)|own model"),
    ("nasx: ASHA|RE", "Syne Tune: ASHA stopping + RE|own model"),
)


# ---------------------------------------------------------------------------------------------
# the replay: W simulated workers over a table, for schedulers that are not nasx's


@dataclass
class Replay:
    """What a replayed search found: ``history`` is ``(epochs, test of the pick)`` each time the
    pick changed (as ``SimulationResult.history``)."""

    history: list[tuple[int, float]] = field(default_factory=list)
    epochs: int = 0
    trials: int = 0
    rows: list[int] = field(default_factory=list)  # each trial's arch (table row), in start order
    busy: float = 0.0
    seconds: float = 0.0

    test_at = SimulationResult.test_at  # the pick's test metric after ``epochs`` epochs


def replay(driver: Any, curves: LearningCurves, workers: int, max_epochs: int) -> Replay:
    """Run ``driver`` (``next_job() -> (trial, row) | None``, ``report(trial, epoch, value) ->
    'continue' | 'stop'``) on ``curves`` with ``workers`` workers until ``max_epochs`` epochs
    were trained in all. The same event order, timing and pick rule as nasx's ``simulate``:
    an epoch of arch ``row`` takes ``curves.seconds``; a worker whose trial stops or pauses asks
    for its next job at once; the pick is the largest (budget, validation value, -trial id)."""
    sign = 1.0 if curves.direction == "maximize" else -1.0
    out = Replay()
    events: list[tuple[float, int, int, int]] = []  # (finish, sequence, worker, trial)
    idle = list(range(workers))
    rows: dict[int, int] = {}
    budget: dict[int, int] = {}
    best: tuple[int, float, int] | None = None
    sequence = 0

    def start(worker: int, trial: int, at: float) -> None:
        nonlocal sequence
        seconds = curves.seconds[rows[trial]][budget[trial]]
        heapq.heappush(events, (at + seconds, sequence, worker, trial))
        sequence += 1

    def dispatch(at: float) -> None:
        while idle and out.epochs < max_epochs:
            job = driver.next_job()
            if job is None:
                return
            trial, row = job
            if trial not in rows:
                rows[trial], budget[trial] = row, 0
                out.trials += 1
                out.rows.append(row)
            if budget[trial] >= curves.epochs:
                raise RuntimeError(f"trial {trial} resumed after its full budget")
            start(idle.pop(0), trial, at)

    dispatch(0.0)
    while events and out.epochs < max_epochs:
        finish, _, worker, trial = heapq.heappop(events)
        row = rows[trial]
        out.busy += curves.seconds[row][budget[trial]]
        out.seconds = finish
        budget[trial] += 1
        out.epochs += 1
        value = curves.val[row][budget[trial] - 1]
        key = (budget[trial], sign * value, -trial)
        if best is None or key > best:
            if best is None or best[2] != -trial:
                out.history.append((out.epochs, curves.test[row][-1]))
            best = key
        if driver.report(trial, budget[trial], value) == CONTINUE:
            if budget[trial] >= curves.epochs:
                raise RuntimeError(f"trial {trial} continued past the table's {curves.epochs}")
            start(worker, trial, finish)
            continue
        idle.append(worker)
        idle.sort()
        dispatch(finish)
    return out


class ArchIndex:
    """Map a config (label -> value, as any library returns it) to the table's row."""

    def __init__(self, curves: LearningCurves) -> None:
        self.curves = curves
        self.labels = sorted(curves.archs[0])
        self.values = {
            label: sorted({a[label] for a in curves.archs}, key=repr) for label in self.labels
        }
        self._rows = {self._key(a): i for i, a in enumerate(curves.archs)}

    def _key(self, config: dict[str, Any]) -> tuple[str, ...]:
        return tuple(str(config[label]) for label in self.labels)

    def row(self, config: dict[str, Any]) -> int:
        return self._rows[self._key(config)]


def shared_stream(curves: LearningCurves, seed: int) -> list[dict[str, Any]]:
    """nasx ``Random(seed=seed)``'s proposals on the table, in order, until it is exhausted:
    the arch stream every "shared" method of seed ``seed`` draws from. (A Random strategy's
    n-th proposal depends on its seed and the archs proposed before, never on results, so
    ``simulate`` with ``Random(seed=seed)`` starts exactly these archs, in this order.)"""
    strategy = Random(seed=seed)
    strategy.setup(curves.search_space(), (), curves.direction)
    stream = []
    while (arch := strategy.propose()) is not None:
        stream.append(arch)
    return stream


# ---------------------------------------------------------------------------------------------
# Syne Tune


class SyneTuneDriver:
    """A Syne Tune ``TrialScheduler`` as its ``Tuner`` drives it: ``suggest`` for a free worker
    (a new trial -> ``on_trial_add``; or a paused trial to resume), ``on_trial_result`` after
    each epoch; STOP or PAUSE -> ``on_trial_remove``; a trial that ends its last epoch with
    CONTINUE -> ``on_trial_complete``."""

    def __init__(self, scheduler: Any, curves: LearningCurves, index: ArchIndex) -> None:
        from syne_tune.backend.trial_status import Trial
        from syne_tune.optimizer.scheduler import SchedulerDecision

        self.scheduler, self.curves, self.index = scheduler, curves, index
        self.Trial, self.decision = Trial, SchedulerDecision
        self.trials: dict[int, Any] = {}
        self.when = datetime.datetime(2026, 1, 1)
        try:
            from syne_tune.optimizer.scheduler import TrialScheduler
        except ImportError:  # pragma: no cover
            TrialScheduler = object
        self.legacy = not isinstance(scheduler, TrialScheduler)

    def next_job(self) -> tuple[int, int] | None:
        if self.legacy:  # Syne Tune 0.14's schedulers take the new trial's id (its Tuner passes
            suggestion = self.scheduler.suggest(len(self.trials))  # the backend's trial count)
        else:
            suggestion = self.scheduler.suggest()
        if suggestion is None:
            return None
        if not suggestion.spawn_new_trial_id:  # resume a paused trial from its checkpoint
            trial = suggestion.checkpoint_trial_id
            return trial, self.index.row(self.trials[trial].config)
        if suggestion.checkpoint_trial_id is not None:
            raise NotImplementedError("warm-starting from another trial's checkpoint (PBT)")
        trial = self.Trial(
            trial_id=len(self.trials), config=suggestion.config, creation_time=self.when
        )
        self.trials[trial.trial_id] = trial
        self.scheduler.on_trial_add(trial=trial)
        return trial.trial_id, self.index.row(suggestion.config)

    def report(self, trial_id: int, epoch: int, value: float) -> str:
        trial = self.trials[trial_id]
        result = {"val": value, "epoch": epoch}
        decision = self.scheduler.on_trial_result(trial=trial, result=result)
        if decision in (self.decision.STOP, self.decision.PAUSE):
            self.scheduler.on_trial_remove(trial=trial)
            return STOP
        if epoch >= self.curves.epochs:
            self.scheduler.on_trial_complete(trial=trial, result=result)
            return STOP
        return CONTINUE


def syne_tune_available() -> str | None:
    """Syne Tune's version, or None when it is not installed."""
    try:
        import syne_tune
    except ImportError:
        return None
    # its ASHA warns on every construction that points_to_evaluate came in searcher_kwargs
    # (its own baseline passes it that way); nothing else it logs matters here
    logging.getLogger("syne_tune").setLevel(logging.ERROR)
    return str(syne_tune.__version__)


def syne_tune_config_space(index: ArchIndex) -> dict[str, Any]:
    from syne_tune.config_space import choice

    return {label: choice(index.values[label]) for label in index.labels}


def rungs_of(epochs: int, eta: int = 3) -> int:
    """How many rungs min 1, max ``epochs``, ratio ``eta`` make (1, 3, 9 -> 3)."""
    n, budget = 1, 1
    while budget * eta <= epochs:
        budget, n = budget * eta, n + 1
    return n


def syne_tune_methods(epochs: int, population: int) -> dict[str, Callable[..., Any]]:
    """Name -> factory ``(config_space, seed, stream) -> scheduler``. ``stream`` is None for a
    method that proposes with its own generator (then the factory does not use it)."""
    from syne_tune.optimizer.baselines import ASHA as StASHA
    from syne_tune.optimizer.baselines import BOHB as StBOHB
    from syne_tune.optimizer.baselines import RandomSearch
    from syne_tune.optimizer.schedulers.asha import AsynchronousSuccessiveHalving
    from syne_tune.optimizer.schedulers.median_stopping_rule import MedianStoppingRule

    common = dict(metric="val", time_attr="epoch", max_t=epochs, do_minimize=False)

    def asha(space: Any, seed: int, stream: Any, brackets: int = 1) -> Any:
        return StASHA(
            space,
            **common,
            random_seed=seed,
            grace_period=1,
            reduction_factor=3,
            brackets=brackets,
            points_to_evaluate=stream,
        )

    def median(space: Any, seed: int, stream: Any) -> Any:
        fifo = RandomSearch(
            space, metrics=["val"], do_minimize=False, random_seed=seed, points_to_evaluate=stream
        )
        return MedianStoppingRule(
            fifo,
            time_attr="epoch",
            metric="val",
            grace_time=1,
            grace_population=5,
            rank_cutoff=0.5,
            random_seed=seed,
            do_minimize=False,
        )

    def bohb(space: Any, seed: int, stream: Any) -> Any:
        return StBOHB(
            space, **common, random_seed=seed, grace_period=1, reduction_factor=3, brackets=1
        )

    def asha_re(space: Any, seed: int, stream: Any) -> Any:
        return AsynchronousSuccessiveHalving(
            space,
            **common,
            searcher="regularized_evolution",
            searcher_kwargs={"population_size": population, "sample_size": max(2, population // 4)},
            grace_period=1,
            reduction_factor=3,
            random_seed=seed,
        )

    n_brackets = rungs_of(epochs)
    return {
        "ASHA stopping|shared": asha,
        "ASHA stopping|own random": asha,
        f"ASHA {n_brackets} brackets (async HB)|shared": (
            lambda space, seed, stream: asha(space, seed, stream, brackets=n_brackets)
        ),
        "MedianStoppingRule|shared": median,
        "BOHB (ASHA + KDE)|own model": bohb,
        "ASHA stopping + RE|own model": asha_re,
    }


def syne_tune_legacy_methods(epochs: int) -> dict[str, Callable[..., Any]]:
    """Syne Tune 0.14's schedulers (its last release with promotion-type ASHA, synchronous
    Hyperband, DEHB and MOBSTER; 0.15 removed them): name -> factory as
    :func:`syne_tune_methods`."""
    from syne_tune.optimizer.legacy_baselines import ASHA as LegacyASHA
    from syne_tune.optimizer.legacy_baselines import BOHB as LegacyBOHB
    from syne_tune.optimizer.legacy_baselines import DEHB as LegacyDEHB
    from syne_tune.optimizer.legacy_baselines import MOBSTER as LegacyMOBSTER
    from syne_tune.optimizer.legacy_baselines import SyncHyperband

    n_brackets = rungs_of(epochs)
    asynchronous = dict(
        metric="val",
        resource_attr="epoch",
        mode="max",
        max_t=epochs,
        grace_period=1,
        reduction_factor=3,
    )
    synchronous = dict(
        metric="val",
        resource_attr="epoch",
        mode="max",
        max_resource_level=epochs,
        grace_period=1,
        reduction_factor=3,
    )

    def asha(kind: str, brackets: int = 1) -> Callable[..., Any]:
        def make(space: Any, seed: int, stream: Any) -> Any:
            return LegacyASHA(
                space,
                **asynchronous,
                type=kind,
                brackets=brackets,
                random_seed=seed,
                points_to_evaluate=stream,
            )

        return make

    def bohb(space: Any, seed: int, stream: Any) -> Any:
        return LegacyBOHB(space, **asynchronous, type="promotion", random_seed=seed)

    def mobster(space: Any, seed: int, stream: Any) -> Any:
        return LegacyMOBSTER(space, **asynchronous, type="promotion", random_seed=seed)

    def sync_hb(space: Any, seed: int, stream: Any) -> Any:
        return SyncHyperband(
            space,
            **synchronous,
            brackets=n_brackets,
            random_seed=seed,
            points_to_evaluate=stream,
        )

    def dehb(space: Any, seed: int, stream: Any) -> Any:
        return LegacyDEHB(space, **synchronous, random_seed=seed)

    return {
        "ASHA promotion (0.14)|shared": asha("promotion"),
        "ASHA stopping (0.14)|shared": asha("stopping"),
        f"async HB {n_brackets} brackets promotion (0.14)|shared": asha("promotion", n_brackets),
        "SyncHyperband (0.14)|shared": sync_hb,
        "BOHB (async promotion; 0.14)|own model": bohb,
        "DEHB (0.14)|own model": dehb,
        "MOBSTER (promotion; 0.14)|own model": mobster,
    }


def run_syne_tune(
    make: Callable[..., Any],
    curves: LearningCurves,
    index: ArchIndex,
    seed: int,
    workers: int,
    max_epochs: int,
    stream: list[dict[str, Any]] | None,
) -> Replay:
    # Syne Tune 0.16 draws some numbers from numpy's global generator (its RandomSearcher's
    # Domain.sample() without a random_state; ASHA's bracket choice): seed it too
    np.random.seed(seed)
    with warnings.catch_warnings():
        # pandas, under its KDE searcher: a notice about numpy generators in pandas 4
        warnings.simplefilter("ignore", FutureWarning)
        # statsmodels' KDE (BOHB's searcher) divides by zero when every good config shares a
        # value of a categorical choice; Syne Tune goes on with what it returns
        warnings.filterwarnings("ignore", category=RuntimeWarning, module="statsmodels")
        scheduler = make(syne_tune_config_space(index), seed, stream)
        return replay(SyneTuneDriver(scheduler, curves, index), curves, workers, max_epochs)


# ---------------------------------------------------------------------------------------------
# Optuna


class OptunaDriver:
    """An Optuna study with a pruner, W trials in flight: ``ask`` for a free worker (the next
    arch of the shared stream enqueued first, when there is one), ``report`` + ``should_prune``
    after each epoch, ``tell`` when it is pruned or complete."""

    def __init__(
        self, study: Any, curves: LearningCurves, index: ArchIndex, stream: list | None
    ) -> None:
        import optuna

        self.study, self.curves, self.index = study, curves, index
        self.stream = list(stream) if stream is not None else None
        self.pruned = optuna.trial.TrialState.PRUNED
        self.grid = {k: c.grid() for k, c in curves.search_space().items()}
        self.trials: dict[int, Any] = {}

    def next_job(self) -> tuple[int, int] | None:
        if self.stream is not None:
            if not self.stream:
                return None  # as nasx's Random: exhausted, no new trials
            self.study.enqueue_trial(self.stream.pop(0))
        trial = self.study.ask()
        arch = {label: trial.suggest_categorical(label, grid) for label, grid in self.grid.items()}
        self.trials[trial.number] = trial
        return trial.number, self.curves.row(arch)

    def report(self, number: int, epoch: int, value: float) -> str:
        trial = self.trials[number]
        trial.report(value, epoch)
        if epoch >= self.curves.epochs:
            self.study.tell(trial, value)
            return STOP
        if trial.should_prune():
            self.study.tell(trial, state=self.pruned)
            return STOP
        return CONTINUE


def optuna_methods(epochs: int) -> dict[str, tuple[str, str]]:
    """Name|proposer -> (pruner, sampler)."""
    return {
        "SuccessiveHalvingPruner|shared": ("SuccessiveHalvingPruner", "shared"),
        "SuccessiveHalvingPruner|own random": ("SuccessiveHalvingPruner", "Random"),
        "HyperbandPruner|shared": ("HyperbandPruner", "shared"),
        "MedianPruner|shared": ("MedianPruner", "shared"),
        "SuccessiveHalvingPruner|TPE": ("SuccessiveHalvingPruner", "TPE"),
        "HyperbandPruner|TPE": ("HyperbandPruner", "TPE"),
        "MedianPruner|TPE": ("MedianPruner", "TPE"),
    }


def run_optuna(
    pruner_name: str,
    sampler_name: str,
    curves: LearningCurves,
    index: ArchIndex,
    seed: int,
    workers: int,
    max_epochs: int,
    stream: list[dict[str, Any]] | None,
) -> Replay:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    epochs = curves.epochs
    pruner: optuna.pruners.BasePruner
    if pruner_name == "SuccessiveHalvingPruner":
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    elif pruner_name == "HyperbandPruner":
        pruner = optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=epochs, reduction_factor=3
        )
    else:
        pruner = optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0)
    sampler: optuna.samplers.BaseSampler = (
        optuna.samplers.TPESampler(seed=seed)
        if sampler_name == "TPE"
        else optuna.samplers.RandomSampler(seed=seed)
    )
    # a named study: HyperbandPruner puts trials in brackets by a hash of the name (the name
    # multi_fidelity.py gives its studies, so one worker reproduces its Optuna rows)
    name = f"{pruner_name}-{'Random' if sampler_name == 'shared' else sampler_name}-{seed}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enqueue_trial is experimental in some versions
        study = optuna.create_study(
            study_name=name, direction="maximize", sampler=sampler, pruner=pruner
        )
        driver = OptunaDriver(study, curves, index, stream if sampler_name == "shared" else None)
        return replay(driver, curves, workers, max_epochs)


def optuna_available() -> str | None:
    try:
        import optuna
    except ImportError:
        return None
    return str(optuna.__version__)


# ---------------------------------------------------------------------------------------------
# nasx


def nasx_methods(epochs: int, population: int) -> dict[str, Callable[[int], tuple[Any, Any]]]:
    """Name|proposer -> factory of (scheduler, strategy) for seed s."""

    def re(seed: int) -> RegularizedEvolution:
        return RegularizedEvolution(
            population_size=population, sample_size=max(2, population // 4), seed=seed
        )

    return {
        "full budget (reference)|RE": lambda s: (FullBudget(epochs), re(s)),
        "full budget (reference)|shared": lambda s: (FullBudget(epochs), Random(seed=s)),
        "ASHA|shared": lambda s: (ASHA(1, epochs, eta=3), Random(seed=s)),
        "ASHA stopping|shared": lambda s: (ASHA(1, epochs, eta=3, mode="stopping"), Random(seed=s)),
        "Hyperband|shared": lambda s: (Hyperband(1, epochs, eta=3), Random(seed=s)),
        "MedianStopping|shared": lambda s: (
            MedianStopping(1, epochs, min_trials=5),
            Random(seed=s),
        ),
        "BOHB|own model": lambda s: (BOHB(1, epochs, eta=3, seed=s), Random(seed=s)),
        "ASHA|RE": lambda s: (ASHA(1, epochs, eta=3), re(s)),
        "MedianStopping|RE": lambda s: (MedianStopping(1, epochs, min_trials=5), re(s)),
    }


# ---------------------------------------------------------------------------------------------
# statistics


def paired(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, int]:
    """Mean and standard error of the paired differences ``a - b`` over the seeds where both
    have a value, and how many seeds that is.

    >>> mean, se, n = paired([1.0, 2.0, 3.0], [0.0, 2.0, 1.0])  # differences 1, 0, 2
    >>> round(mean, 6), round(se, 6), n  # sd 1, over sqrt(3)
    (1.0, 0.57735, 3)
    """
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    d = d[~np.isnan(d)]
    if len(d) < 2:
        return (float(d.mean()) if len(d) else math.nan), math.nan, len(d)
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))), len(d)


def verdict_word(mean: float, se: float) -> str:
    """``tie`` when the paired difference is within one standard error of 0."""
    if math.isnan(mean) or math.isnan(se):
        return "n/a"
    if abs(mean) <= se:
        return "tie"
    return "nasx ahead" if mean > 0 else "nasx BEHIND"


def held_out(
    values: dict[str, np.ndarray], references: set[str]
) -> dict[str, list[tuple[float, float, int]]]:
    """The paired difference of nasx's best and each peer's best, with "best" chosen by the
    mean over the even-numbered seed rows and the difference taken over the odd ones: picking the
    best of several methods on the same seeds it is scored on favours whichever side has more
    (or noisier) methods; this check does not."""
    chosen: dict[str, list[str]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for side in SIDES:
            keys = [k for k in values if k.startswith(side + ": ") and k not in references]
            if keys:
                chosen[side] = [
                    max(
                        keys,
                        key=lambda k: np.nan_to_num(np.nanmean(values[k][0::2, i]), nan=-np.inf),
                    )
                    for i in range(len(FRACTIONS))
                ]
    out = {}
    if "nasx" in chosen:
        for side in SIDES[1:]:
            if side in chosen:
                out[side] = [
                    paired(values[chosen["nasx"][i]][1::2, i], values[chosen[side][i]][1::2, i])
                    for i in range(len(FRACTIONS))
                ]
    return out


def noise_floor(p: float, n: int, percent: bool) -> float:
    """Standard error of a test accuracy ``p`` measured on ``n`` test images (same unit as
    ``p``: percent when ``percent``)."""
    q = p / 100 if percent else p
    se = math.sqrt(q * (1 - q) / n)
    return 100 * se if percent else se


# ---------------------------------------------------------------------------------------------
# the run


@dataclass
class Method:
    side: str
    name: str  # "scheduler|proposer"
    reference: bool
    run: Callable[[int, int], Any]  # (seed, workers) -> anything with test_at(epochs)

    @property
    def key(self) -> str:
        return f"{self.side}: {self.name}"


def population_for(reference_trials: int) -> int:
    """Regularized evolution's population: a third of the reference trials, 4 to 20 (as
    multi_fidelity.py)."""
    return max(4, min(20, reference_trials // 3))


def build_methods(
    curves: LearningCurves, ref_epochs: int, population: int, args: argparse.Namespace
) -> list[Method]:
    """Every method to run (nasx's, then Syne Tune's and Optuna's when installed and wanted)."""
    index, streams = ArchIndex(curves), StreamCache(curves)
    methods = nasx_rows(curves, ref_epochs, population)
    if args.syne_tune:
        methods += syne_tune_rows(curves, index, streams, ref_epochs, population)
    if args.optuna:
        methods += optuna_rows(curves, index, streams, ref_epochs, tpe=not args.no_tpe)
    if args.methods:
        wanted = set(args.methods.split(","))
        methods = [m for m in methods if m.key in wanted or m.side in wanted]
    if args.exclude:
        unwanted = set(args.exclude.split(","))
        methods = [m for m in methods if m.key not in unwanted]
    return methods


class StreamCache:
    """The shared arch stream of the last seed asked for (every method of a seed in turn)."""

    def __init__(self, curves: LearningCurves) -> None:
        self.curves, self.seed, self.stream = curves, -1, [{}]

    def __call__(self, seed: int) -> list[dict[str, Any]]:
        if seed != self.seed:
            self.seed, self.stream = seed, shared_stream(self.curves, seed)
        return self.stream


def nasx_rows(curves: LearningCurves, ref_epochs: int, population: int) -> list[Method]:
    def row(name: str, make: Callable[[int], tuple[Any, Any]]) -> Method:
        def run(seed: int, workers: int) -> Any:
            scheduler, strategy = make(seed)
            return simulate(scheduler, strategy, curves, workers=workers, max_epochs=ref_epochs)

        return Method("nasx", name, name.startswith("full budget"), run)

    return [row(n, make) for n, make in nasx_methods(curves.epochs, population).items()]


def syne_tune_rows(
    curves: LearningCurves,
    index: ArchIndex,
    streams: StreamCache,
    ref_epochs: int,
    population: int,
) -> list[Method]:
    def row(name: str, make: Callable[..., Any]) -> Method:
        shared = name.endswith("|shared")

        def run(seed: int, workers: int) -> Any:
            stream = streams(seed) if shared else None
            return run_syne_tune(make, curves, index, seed, workers, ref_epochs, stream)

        return Method("Syne Tune", name, False, run)

    if syne_tune_is_legacy():
        makers = syne_tune_legacy_methods(curves.epochs)
    else:
        makers = syne_tune_methods(curves.epochs, population)
    return [row(n, make) for n, make in makers.items()]


def syne_tune_is_legacy() -> bool:
    """Whether the Syne Tune on the path is 0.14 (``legacy_baselines``), not 0.15 or later."""
    import syne_tune

    return tuple(int(x) for x in syne_tune.__version__.split(".")[:2]) < (0, 15)


def optuna_rows(
    curves: LearningCurves, index: ArchIndex, streams: StreamCache, ref_epochs: int, tpe: bool
) -> list[Method]:
    def row(name: str, pruner: str, sampler: str) -> Method:
        def run(seed: int, workers: int) -> Any:
            return run_optuna(
                pruner, sampler, curves, index, seed, workers, ref_epochs, streams(seed)
            )

        return Method("Optuna", name, False, run)

    return [
        row(name, pruner, sampler)
        for name, (pruner, sampler) in optuna_methods(curves.epochs).items()
        if tpe or sampler != "TPE"
    ]


def run_methods(
    methods: list[Method], seeds: Sequence[int], workers: int, grid: Sequence[int]
) -> dict[str, Any]:
    """Every method over every seed with ``workers`` workers: the pick's test at each epoch
    count of ``grid`` (rows: seeds) and the CPU seconds per seed."""
    values: dict[str, list[list[float]]] = {}
    cost: dict[str, float] = {}
    for m in methods:
        t0 = time.process_time()
        rows = []
        for seed in seeds:
            result = m.run(seed, workers)
            rows.append([result.test_at(e) for e in grid])
        values[m.key] = rows
        cost[m.key] = (time.process_time() - t0) / len(seeds)
    return {"values": values, "cost": cost}


def count_trials(methods: list[Method], seeds: Sequence[int], workers: int) -> None:
    """Print how many trials each method starts within E and how many distinct archs they are
    (``--duplicates``: a searcher that proposes an arch again trains it again)."""
    print(f"\n== trials started within E, and distinct archs among them ({workers} worker(s)) ==")
    for m in methods:
        started, distinct = [], []
        for seed in seeds:
            result = m.run(seed, workers)
            if isinstance(result, Replay):
                rows = result.rows
            else:
                rows = [t.row for t in result.trials]
            started.append(len(rows))
            distinct.append(len(set(rows)))
        print(
            f"{m.key:60s} trials {np.mean(started):6.1f}  distinct {np.mean(distinct):6.1f} "
            f"({np.mean(distinct) / np.mean(started):.0%})"
        )


def report(
    block: dict[str, Any],
    references: set[str],
    workers: int,
    n_seeds: int,
    test_images: int,
    percent: bool,
) -> dict[str, Any]:
    """Print one table x worker count: means, each library's best, the paired differences,
    like-for-like pairs, the held-out check, the noise floor and the verdict; return them."""
    order = sorted(block["values"], key=lambda k: SIDES.index(k.split(": ")[0]))  # stable
    values = {k: np.asarray(block["values"][k], dtype=float) for k in order}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a fraction where no seed has a pick
        means = {k: np.nanmean(v, axis=0) for k, v in values.items()}
    found: dict[str, Any] = {"values": values, "means": means, "best": {}, "pairs": {}}
    print(f"\n== {workers} simulated worker(s): mean test accuracy of the pick, {n_seeds} seeds ==")
    print(
        f"{'library: scheduler':46s} {'proposer':11s} "
        + " ".join(f"{x:>7s}" for x in FRACTION_LABELS)
        + "  CPU-s/seed"
    )
    for key in values:
        sched, proposer = key.split("|")
        print(
            f"{sched:46s} {proposer:11s} "
            + " ".join(f"{v:7.2f}" for v in means[key])
            + f"  {block['cost'][key]:10.2f}"
        )
    print_best_and_pairs(found, references)
    print_like_for_like(values)
    if found["pairs"]:
        found["held_out"] = held_out(values, references)
        print(
            "held-out check (each library's best chosen on the even seeds, compared on the odd "
            "ones; free of the choice's own luck):"
        )
        for side, pairs in found["held_out"].items():
            print(f"   vs {side:9s} {pair_words(pairs)}")
    top = max(means[k][-1] for k in means if not math.isnan(means[k][-1]))
    found["noise_floor"] = noise_floor(top, test_images, percent)
    print(
        f"test-split noise floor: s.e. of one test accuracy of {top:.2f} on {test_images} "
        f"images = {found['noise_floor']:.2f}{' points' if percent else ''}"
    )
    print_verdict(found, workers)
    return found


def pair_words(pairs: Sequence[tuple[float, float, int]]) -> str:
    return "  ".join(
        f"{label} {m:+.2f} +- {se:.2f} ({verdict_word(m, se)})"
        for label, (m, se, _) in zip(FRACTION_LABELS, pairs)
    )


def print_best_and_pairs(found: dict[str, Any], references: set[str]) -> None:
    """Each library's best multi-fidelity method at each fraction (by mean), and the paired
    differences nasx's best - each peer's best (into ``found``)."""
    values, means = found["values"], found["means"]
    for side in SIDES:
        keys = [k for k in values if k.startswith(side + ": ") and k not in references]
        if keys:
            found["best"][side] = [
                max(keys, key=lambda k: np.nan_to_num(means[k][i], nan=-np.inf))
                for i in range(len(FRACTIONS))
            ]
    print("each library's best at each fraction (references excluded; by mean):")
    for side, best in found["best"].items():
        print(f"  {side}:")
        for i, (label, key) in enumerate(zip(FRACTION_LABELS, best)):
            print(f"    {label:4s} {key.split(': ', 1)[1]:46s} {means[key][i]:.2f}")
    if "nasx" not in found["best"]:
        return
    ours = found["best"]["nasx"]
    for side in SIDES[1:]:
        if side in found["best"]:
            theirs = found["best"][side]
            found["pairs"][side] = [
                paired(values[ours[i]][:, i], values[theirs[i]][:, i])
                for i in range(len(FRACTIONS))
            ]
            print(f"nasx's best - {side}'s best, paired over the seeds (mean +- s.e.):")
            print("   " + pair_words(found["pairs"][side]))


def print_like_for_like(values: dict[str, np.ndarray]) -> None:
    like = [(a, b) for a, b in LIKE_FOR_LIKE if a in values and b in values]
    if like:
        print(
            "like for like (the same algorithm and proposer; nasx - peer, paired; E/9 E/3 E/2 E):"
        )
        for a, b in like:
            diffs = [paired(values[a][:, i], values[b][:, i]) for i in range(len(FRACTIONS))]
            print(
                f"   {a.split(': ', 1)[1]:22s} vs {b:50s} "
                + " ".join(f"{m:+.2f}+-{se:.2f}" for m, se, _ in diffs)
            )


def print_verdict(found: dict[str, Any], workers: int) -> None:
    if not found["pairs"]:
        print("(no pair to compare: nasx or both peers left out)")
        found["verdict"] = None
        return
    words = [verdict_word(m, se) for pairs in found["pairs"].values() for m, se, _ in pairs]
    found["verdict"] = all(w in ("tie", "nasx ahead") for w in words)
    behind = [
        f"{label} vs {side} ({m:+.2f} +- {se:.2f})"
        for side, pairs in found["pairs"].items()
        for label, (m, se, _) in zip(FRACTION_LABELS, pairs)
        if verdict_word(m, se) not in ("tie", "nasx ahead")
    ]
    print(
        f"[{'ties-or-beats' if found['verdict'] else 'NOT ties-or-beats'}] {workers} worker(s): "
        f"nasx's best against {' and '.join(found['pairs'])}'s best at E/9, E/3, E/2, E "
        "(tie = within one paired s.e.)" + (f"; not at: {', '.join(behind)}" if behind else "")
    )


def load_curves(args: argparse.Namespace) -> tuple[LearningCurves, str, int]:
    if args.fast:
        archs = [{"a": a, "b": b, "c": c} for a in range(4) for b in range(4) for c in range(4)]
        curves = LearningCurves.synthetic(archs, epochs=9, seed=0)
        return curves, "FAST: made-up curves, 64 archs x 9 epochs", 2000
    curves = LearningCurves.from_csv(args.table)
    n = args.test_images or TEST_IMAGES.get(Path(args.table).name, 2000)
    return curves, f"table {args.table}: {len(curves.archs)} archs x {curves.epochs} epochs", n


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--table", default=str(Path(__file__).with_name("learning_curves.csv")))
    p.add_argument("--fast", action="store_true", help="a small made-up table, 3 seeds (tests)")
    p.add_argument("--seeds", type=int, default=None, help="how many (default 100; --fast: 3)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--workers", default="1,8")
    p.add_argument("--reference-trials", type=int, default=60)
    p.add_argument("--test-images", type=int, default=0, help="default: the table's (2,000)")
    p.add_argument("--no-syne-tune", action="store_true")
    p.add_argument("--no-optuna", action="store_true")
    p.add_argument("--no-tpe", action="store_true", help="leave out Optuna's TPESampler rows")
    p.add_argument(
        "--methods",
        default="",
        help="comma-separated 'library: scheduler|proposer' keys or libraries",
    )
    p.add_argument(
        "--duplicates",
        type=int,
        default=0,
        metavar="SEEDS",
        help="only count trials and distinct archs per method, over this many seeds",
    )
    p.add_argument("--exclude", default="", help="comma-separated keys to leave out")
    p.add_argument("--save", default="", help="write every per-seed value to this JSON file")
    p.add_argument(
        "--merge",
        nargs="+",
        default=[],
        metavar="JSON",
        help="print the report of runs saved with --save (same table, other seeds), run nothing",
    )
    args = p.parse_args(argv)
    if args.fast:
        args.workers, args.reference_trials = "1,8", 8
    if args.seeds is None:
        args.seeds = 3 if args.fast else 100
    return args


def join(group: dict[str, Any], run: dict[str, Any]) -> None:
    """Add ``run``'s methods to ``group`` (the same seeds); a method in both must agree."""
    group["wall_s"] += run["wall_s"]
    for w, block in run["workers"].items():
        into = group["workers"].setdefault(w, {"values": {}, "cost": {}})
        for k, rows in block["values"].items():
            if k in into["values"] and not np.array_equal(
                np.asarray(into["values"][k], dtype=float),
                np.asarray(rows, dtype=float),
                equal_nan=True,
            ):
                raise ValueError(f"cannot join: {k} differs between runs of the same seeds")
            into["values"][k] = rows
            into["cost"].setdefault(k, block["cost"][k])


def merge(paths: Sequence[str]) -> dict[str, Any]:
    """Runs saved with ``--save``, joined: runs over the same seeds join their methods (a
    method both ran must have the same values: nasx's and Optuna's are deterministic, so a run
    with another Syne Tune version pairs with the first); runs over other seeds are appended
    seed-wise (they must then have the same methods)."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    first = runs[0]
    for run in runs:
        for k in ("table", "grid", "references"):
            if run[k] != first[k]:
                raise ValueError(f"cannot merge: {k} differs ({run[k]!r} vs {first[k]!r})")
    groups: dict[tuple[int, ...], dict[str, Any]] = {}
    for run in runs:
        join(groups.setdefault(tuple(run["seeds"]), {"workers": {}, "wall_s": 0.0}), run)
    headers = list(dict.fromkeys(run["header"] for run in runs))
    out = {k: first[k] for k in ("table", "grid", "references", "test_images", "percent")}
    out["header"] = headers[0] + "".join(
        "\n" + h.splitlines()[-1] for h in headers[1:] if h.splitlines()[-1] not in headers[0]
    )
    out["seeds"], out["workers"], out["wall_s"] = [], {}, 0.0
    for seeds, group in groups.items():
        if set(seeds) & set(out["seeds"]):
            raise ValueError("cannot merge: runs overlap in some seeds but not all")
        out["seeds"] += list(seeds)
        out["wall_s"] += group["wall_s"]
        for w, block in group["workers"].items():
            into = out["workers"].setdefault(w, {"values": {}, "cost": {}, "n": 0})
            if into["values"] and set(into["values"]) != set(block["values"]):
                raise ValueError(f"cannot merge: other methods with {w} workers in other seeds")
            n = len(seeds)
            for k, rows in block["values"].items():
                into["values"].setdefault(k, []).extend(rows)
                into["cost"][k] = (into["cost"].get(k, 0.0) * into["n"] + block["cost"][k] * n) / (
                    into["n"] + n
                )
            into["n"] += n
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the comparison (or merge saved runs), print it, and return its figures."""
    args = parse_args(argv)
    t0 = time.monotonic()
    if args.merge:
        saved = merge(args.merge)
        print(saved["header"])
        print(
            f"merged {len(args.merge)} runs: {len(saved['seeds'])} seeds ({saved['wall_s']:.0f} s in all)"
        )
    else:
        saved = run(args)
    found: dict[str, Any] = {"workers": {}, "seeds": saved["seeds"], "grid": saved["grid"]}
    for w, block in saved["workers"].items():
        found["workers"][int(w)] = report(
            block,
            set(saved["references"]),
            int(w),
            len(saved["seeds"]),
            saved["test_images"],
            saved["percent"],
        )
    if args.save and not args.merge:
        saved["wall_s"] = time.monotonic() - t0
        Path(args.save).write_text(json.dumps(saved))
    print(f"\n({time.monotonic() - t0:.0f} s)")
    return found


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every method on the table for every seed and worker count (what --save writes)."""
    curves, note, test_images = load_curves(args)
    seeds = list(range(args.first_seed, args.first_seed + (args.duplicates or args.seeds)))
    ref_epochs = args.reference_trials * curves.epochs
    grid = [round(f * ref_epochs) for f in FRACTIONS]
    st_version, optuna_version = syne_tune_available(), optuna_available()
    args.syne_tune = st_version is not None and not args.no_syne_tune
    args.optuna = optuna_version is not None and not args.no_optuna
    header = (
        f"{note}\nE = {args.reference_trials} full trainings = {ref_epochs} epochs; fractions "
        f"{', '.join(f'{lab} = {e}' for lab, e in zip(FRACTION_LABELS, grid))} epochs; oracle "
        f"(best test at the full budget) {curves.best_test():.2f}\nnasx "
        f"{nasx_version()}; Syne Tune {st_version or 'not installed'}; Optuna "
        f"{optuna_version or 'not installed'}; numpy {np.__version__}; {platform.machine()}, "
        f"Python {platform.python_version()}"
    )
    print(header)
    print(f"seeds {seeds[0]}-{seeds[-1]}")
    if st_version is None and not args.no_syne_tune:
        print("Syne Tune is not installed (pip install syne-tune==0.16.0): its rows are left out")
    methods = build_methods(curves, ref_epochs, population_for(args.reference_trials), args)
    if args.duplicates:
        for w in args.workers.split(","):
            count_trials(methods, seeds, int(w))
        raise SystemExit(0)
    return {
        "table": "FAST" if args.fast else str(args.table),
        "header": header,
        "seeds": seeds,
        "grid": grid,
        "references": [m.key for m in methods if m.reference],
        "test_images": test_images,
        "percent": curves.best_test() > 1.5,
        "workers": {
            str(w): run_methods(methods, seeds, int(w), grid) for w in args.workers.split(",")
        },
        "wall_s": 0.0,
    }


def nasx_version() -> str:
    import nasx

    return str(nasx.__version__)


if __name__ == "__main__":
    main()
