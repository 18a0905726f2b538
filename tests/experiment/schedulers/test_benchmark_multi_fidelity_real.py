"""benchmarks/multi_fidelity_real.py's bookkeeping, checked against the simulator: real
NasExperiments whose "training" replays a learning-curve table must train the archs the
simulator trains, to the same budgets, and pick the same arch at every epoch count, once epochs
are counted as a loop continuing from checkpoints would pay them ('new'); the epochs the store
records must be the epochs the evaluator trained."""

from __future__ import annotations

import math

import pytest
import torch.nn as nn

import nasx
from nasx.experiment.schedulers import ASHA, FullBudget, Hyperband, LearningCurves, simulate
from nasx.space import ModelSpace
from nasx.strategy import Random, RegularizedEvolution
from nasx.trial import arch_key
from tests.benchmark_scripts import benchmark_module

ARCHS = [{"a": a, "b": b, "c": c} for a in range(4) for b in range(4) for c in range(4)]
CURVES = LearningCurves.synthetic(ARCHS, epochs=9, seed=3)


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("multi_fidelity_real.py") as module:
        yield module


class TableSpace(ModelSpace):
    """A space whose search space is the table's (same labels and values, same order), so a
    seeded strategy proposes the same archs here as in the simulator."""

    def __init__(self) -> None:
        super().__init__()
        for label in "abc":
            nasx.choice(label, [0, 1, 2, 3])
        self.body = nn.Identity()


def replay(model, arch, budget, checkpoint=None):
    """The table's curve of ``arch`` as the benchmark's training gives it: ``(epoch, val, test
    at 9)``; given a checkpoint, it continues after the epoch saved there, as the real one does."""
    row = CURVES.row(arch)
    state = checkpoint.load() if checkpoint is not None else None
    for epoch in range((state or {"epoch": 0})["epoch"] + 1, budget + 1):
        yield epoch, CURVES.val[row][epoch - 1], CURVES.test[row][-1] if epoch == 9 else None
    if checkpoint is not None:
        checkpoint.save({"epoch": budget})


@pytest.mark.parametrize(
    "scheduler, strategy",
    [
        (None, lambda: RegularizedEvolution(population_size=4, sample_size=2, seed=1)),
        (lambda: ASHA(1, 9, eta=3), lambda: Random(seed=2)),
        (lambda: Hyperband(1, 9, eta=3), lambda: Random(seed=3)),
        (
            lambda: ASHA(1, 9, eta=3),
            lambda: RegularizedEvolution(population_size=4, sample_size=2, seed=4),
        ),
    ],
    ids=["full budget + RE", "ASHA + Random", "Hyperband + Random", "ASHA + RE"],
)
@pytest.mark.parametrize("resume", [True, False], ids=["continue", "restart"])
def test_real_loop_bookkeeping_matches_the_simulator(bench, tmp_path, scheduler, strategy, resume):
    limit = 90
    run = bench.run_search(
        TableSpace(),
        replay,
        None if scheduler is None else scheduler(),
        strategy(),
        0,
        limit,
        tmp_path / "exp",
        resume=resume,
    )
    sim = simulate(
        FullBudget(9) if scheduler is None else scheduler(),
        strategy(),
        CURVES,
        max_epochs=limit,
    )
    records = [tuple(r) for r in run["records"]]
    # the store counts every epoch the evaluator trained, restarts of promoted trials included
    assert run["store_epochs"] == len(records)
    log = bench.EpochLog()
    for record in records:
        log.add(*record)
    assert log.new >= limit and len(records) >= log.new
    if resume:  # continued from checkpoints: no epoch trained twice
        assert len(records) == log.new
    elif scheduler is not None:  # started over: promoted trials trained their first epochs again
        assert len(records) > log.new
    # within the first `limit` new epochs: the simulator's archs, in its order, at its budgets
    reached: dict[str, int] = {}
    counted = 0
    for arch, epoch, _val, _test in records:
        if epoch > reached.get(arch, 0):
            if counted == limit:
                break
            counted += 1
            reached[arch] = epoch
    assert list(reached) == [arch_key(t.arch) for t in sim.trials]
    assert list(reached.values()) == [t.budget for t in sim.trials]
    # and the same pick at every epoch count, wherever the real pick has its full-budget test
    curve = bench.curve(run, "new", limit)
    known = [e for e in range(limit + 1) if not math.isnan(curve[e])]
    assert len(known) > limit / 2
    assert [curve[e] for e in known] == pytest.approx([sim.test_at(e) for e in known])
    assert len({curve[e] for e in known}) > 1 or scheduler is not None  # the pick changed
    # the pick the store holds at the end is the anytime pick after every epoch trained
    final = bench.anytime_history(records, "trained", 9)[-1][1]
    assert run["store_pick"]["test"] == pytest.approx(final)


def test_trained_epochs_count_restarts_and_new_ones_do_not(bench):
    records = [("a", 1, 60.0, None), ("a", 1, 60.0, None), ("a", 2, 70.0, 69.0)]
    assert bench.anytime_history(records, "trained", 2) == [
        (1, pytest.approx(math.nan, nan_ok=True)),
        (3, 69.0),
    ]
    assert bench.anytime_history(records, "new", 2)[-1] == (2, 69.0)
    with pytest.raises(ValueError, match="accounting must be 'trained' or 'new'"):
        bench.anytime_history(records, "epochs", 2)


def test_store_epochs_counts_every_job_of_every_trial(bench, tmp_path):
    for trial, lines in {0: ["intermediate 1: 0.5", "intermediate 2: 0.6"], 1: []}.items():
        folder = tmp_path / "trials" / str(trial)
        folder.mkdir(parents=True)
        (folder / "trial.log").write_text("\n".join(["trial 0 budget 3 (from 0)", *lines]))
    log = tmp_path / "trials" / "0" / "trial.log"
    log.write_text(log.read_text() + "\ntrial 0 budget 9 (from 0)\nintermediate 1: 0.5\n")
    assert bench.store_epochs(tmp_path) == 3


def test_real_training_continued_from_a_checkpoint_equals_one_straight_run(bench, tmp_path):
    """3 epochs in one job against 1 epoch, a checkpoint, then 2 more: the same accuracies and
    the same weights (model, optimizer, learning-rate step and data order all carried over)."""
    import torch

    from nasx.evaluator.checkpoint import Checkpoint
    from nasx.space import model_context

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(96, 1, 28, 28, generator=g), torch.randint(0, 10, (96,), generator=g)
    data = {"train": (x[:64], y[:64]), "val": (x[64:80], y[64:80]), "test": (x[80:], y[80:])}
    training = bench.real_training(data, batch=16)
    arch = {"width": 8, "op1": "conv3x3", "op2": "sepconv3x3", "op3": "conv5x5"}
    arch |= {"mult1": 1, "mult2": 2, "mult3": 1}

    def fresh():
        torch.manual_seed(7)  # the loop seeds torch before it builds the trial's model
        with model_context(arch):
            return bench.learning_curves.CurveSpace()

    straight_model = fresh()
    straight = list(training(straight_model, arch, 3))
    model, folder = fresh(), tmp_path / "ckpt"
    first = list(training(model, arch, 1, Checkpoint(str(folder), from_budget=0, budget=1)))
    torch.manual_seed(123)  # the next job draws from other seeds: the checkpoint must restore them
    model = fresh()
    rest = list(training(model, arch, 3, Checkpoint(str(folder), from_budget=1, budget=3)))
    assert [e for e, _, _ in first + rest] == [1, 2, 3]
    assert [v for _, v, _ in first + rest] == [v for _, v, _ in straight]
    for a, b in zip(model.state_dict().values(), straight_model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
