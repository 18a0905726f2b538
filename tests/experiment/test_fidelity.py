"""Continue, don't restart: with an evaluator that declares a ``checkpoint`` parameter, a trial
promoted from budget b to B continues from the state it saved at b, so every epoch of every
trial is trained once and the run's budget is the scheduler's simulation's, computed by hand
where small; the checkpoints live in the trial folders while a trial may still be promoted,
survive a stop or a death mid-continuation, and go when the trial is done."""

from __future__ import annotations

import logging

import pytest
import pytorch_lightning as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from nasx.evaluator import Classification, FunctionalEvaluator
from nasx.evaluator.checkpoint import Checkpoint, saved_budgets
from nasx.experiment import NasExperiment
from nasx.experiment import experiment as experiment_module
from nasx.experiment.execution.jobs import Job
from nasx.experiment.execution.runner import ModelBuilder, run_trial
from nasx.experiment.loop.checkpoints import TrialFolders
from nasx.experiment.loop.scheduled import ScheduledRun, can_continue
from nasx.experiment.schedulers import ASHA, Hyperband, simulate
from nasx.experiment.storage.store import load_trials
from nasx.space import ModelSpace, choice
from nasx.strategy import GridSearch

from .helpers import ProcessDeath
from .test_scheduled_experiment import CURVES, OUTCOME, FromList, Net, TableEvaluator


class _Trained:
    """What a ContinuingTable trained, shared by its copies (the resume check ignores it)."""

    def __init__(self):
        self.epochs: list[tuple[int, int]] = []  # (table row, epoch), in training order
        self.continued = 0  # jobs that started from a checkpoint
        self.die: str | None = None  # see ContinuingTable


class ContinuingTable:
    """Trains the arch's table curve from its checkpoint's epoch up to ``budget``, reporting
    each new epoch, and saves the epoch reached; ``die`` ends the process ('training': after
    one epoch of the first continued job, 'writing': while saving its new state)."""

    def __init__(self, die=None):
        self.trained = _Trained()
        self.trained.die = die

    def evaluate(self, model, report=None, arch=None, budget=None, checkpoint=None):
        row = CURVES.row(arch)
        state = checkpoint.load()
        start = 0 if state is None else state["epoch"]
        assert start == checkpoint.from_budget  # the state at b, and b is where the job starts
        self.trained.continued += start > 0
        for epoch in range(start, budget):
            self.trained.epochs.append((row, epoch + 1))
            report(CURVES.val[row][epoch])
            if self.trained.die == "training" and start > 0:
                self.trained.die = None
                raise ProcessDeath("killed while training from the checkpoint")
        if self.trained.die == "writing" and start > 0:
            self.trained.die = None
            checkpoint.write(_dies_writing)
        checkpoint.save({"epoch": budget})
        return CURVES.val[row][budget - 1]


def _dies_writing(path):
    with open(path, "wb") as f:
        f.write(b"half a state")
    raise ProcessDeath("killed while writing the checkpoint")


@pytest.fixture
def runs(monkeypatch):
    """The ScheduledRun of each run() (how much budget it spent)."""
    made = []

    def keep(*args, **kwargs):
        made.append(original(*args, **kwargs))
        return made[-1]

    original = experiment_module.scheduled_run
    monkeypatch.setattr(experiment_module, "scheduled_run", keep)
    return made


def _experiment(workdir, evaluator, scheduler, n, **kwargs):
    return NasExperiment(
        Net(),
        evaluator,
        FromList(n),
        workdir=workdir,
        build_model=False,
        progress=False,
        scheduler=scheduler,
        max_trials=n,
        **kwargs,
    )


def _folder(workdir, trial):
    return workdir / "trials" / str(trial) / "checkpoint"


@pytest.mark.parametrize(
    ("scheduler", "n"),
    [
        (lambda: ASHA(1, 9, eta=3), 20),
        (lambda: ASHA(1, 9, eta=3), 3),
        (lambda: Hyperband(1, 9, 3), 20),
    ],
    ids=["asha", "asha-3-trials", "hyperband"],
)
def test_a_promoted_trial_continues_so_each_epoch_is_trained_once(tmp_path, runs, scheduler, n):
    sim = simulate(scheduler(), FromList(n), CURVES, workers=1, max_trials=n)
    evaluator = ContinuingTable()
    exp = _experiment(tmp_path, evaluator, scheduler(), n)
    exp.run()
    trials = exp.trials()
    assert [(t.arch, t.budget, t.status) for t in trials] == [
        (s.arch, s.budget, OUTCOME[s.outcome]) for s in sim.trials
    ]
    for t in trials:  # the row keeps the whole curve, the part before the promotion included
        assert t.intermediates == CURVES.val[CURVES.row(t.arch)][: t.budget]
    # each epoch of each trial trained once, in order: a promotion b -> B costs B - b
    trained = evaluator.trained.epochs
    assert len(set(trained)) == len(trained)
    assert sorted(trained) == sorted(
        (CURVES.row(t.arch), e) for t in trials for e in range(1, t.budget + 1)
    )
    assert evaluator.trained.continued > 0
    assert len(trained) == sim.epochs == runs[0].spent == sum(t.budget for t in trials)
    if n == 3:
        # by hand: 3 trials of 1 epoch; the best third (1 trial) promoted 1 -> 3 costs 2
        # (3 when restarted); a rung of one at 3 promotes none to 9.
        assert sorted(t.budget for t in trials) == [1, 1, 3]
        assert runs[0].spent == 1 + 1 + 1 + 2


def test_a_paused_trial_keeps_its_checkpoint_and_a_finished_one_none(tmp_path):
    exp = _experiment(tmp_path, ContinuingTable(), ASHA(1, 9, eta=3), 20)
    exp.run()
    trials = exp.trials()
    assert {t.status for t in trials} == {"paused", "succeeded"}
    for t in trials:
        folder = _folder(tmp_path, t.id)
        if t.status == "paused":  # the state at the budget it reached, nothing older
            assert sorted(p.name for p in folder.iterdir()) == [f"budget-{t.budget}.pt"]
        else:  # complete at the maximum budget: nothing will continue it
            assert not folder.exists()


def test_a_trial_a_synchronous_rung_did_not_promote_is_pruned_without_its_checkpoint(tmp_path):
    whole = _experiment(tmp_path / "whole", ContinuingTable(), Hyperband(1, 9, 3), 20)
    whole.run()
    evaluator = StopsAfter(30)  # mid-search: some rungs have promoted, others still fill
    exp = _experiment(tmp_path / "cut", evaluator, Hyperband(1, 9, 3), 20)
    evaluator.exp = exp
    exp.run()
    trials = exp.trials()
    paused = [t for t in trials if t.status == "paused"]
    never = [t for t in trials if t.status == "pruned"]
    assert paused and never  # both kinds are there
    assert all(exp.scheduler.promotable(t.id, t.budget) for t in paused)
    for t in paused:  # a resumed run may promote it: it keeps the state at its budget
        assert saved_budgets(_folder(tmp_path / "cut", t.id)) == [t.budget]
    for t in never:  # the rung promoted others: pruned at the budget it reached, no state
        assert not exp.scheduler.promotable(t.id, t.budget)
        assert t.budget < 9 and t.metric == t.intermediates[-1]
        assert t.error == f"not promoted: its rung at budget {t.budget} promoted others (Hyperband)"
        assert not _folder(tmp_path / "cut", t.id).exists()
    counts = exp._book.counts  # what the run's limits and display count: the store's statuses
    assert (counts["paused"], counts["pruned"]) == (len(paused), len(never))
    evaluator.exp = None
    exp.run()  # to the end: the last brackets promote what they can, the rest is pruned
    assert exp.stop_reason == "max_trials (20) reached"
    assert not list((tmp_path / "cut").glob("trials/*/checkpoint"))
    trials = exp.trials()
    assert {t.status for t in trials} == {"pruned", "succeeded"}  # none left paused
    assert [(t.arch, t.budget, t.status, t.intermediates) for t in trials] == [
        (t.arch, t.budget, t.status, t.intermediates) for t in whole.trials()
    ]


def test_trials_aiming_at_the_maximum_budget_write_no_checkpoint(tmp_path):
    exp = _experiment(tmp_path, ContinuingTable(), ASHA(1, 9, eta=3, mode="stopping"), 12)
    exp.run()
    assert "pruned" in {t.status for t in exp.trials()}
    assert not list(tmp_path.glob("trials/*/checkpoint"))


def test_an_evaluator_that_cannot_continue_is_restarted_and_the_run_names_it(tmp_path, caplog):
    assert not can_continue(TableEvaluator()) and can_continue(ContinuingTable())
    with caplog.at_level(logging.WARNING, logger="nasx.experiment"):
        _experiment(tmp_path, TableEvaluator(), ASHA(1, 9, eta=3), 20).run()
    said = [r.getMessage() for r in caplog.records if "from scratch" in r.getMessage()]
    assert len(said) == 1  # once per run, naming the evaluator
    assert "the evaluator TableEvaluator.evaluate cannot continue" in said[0]
    assert not list(tmp_path.glob("trials/*/checkpoint"))


def test_a_functional_evaluator_passes_the_checkpoint_to_fn(tmp_path):
    def fn(model, arch, budget, checkpoint, report):
        return ContinuingTable.evaluate(table, model, report, arch, budget, checkpoint)

    table = ContinuingTable()
    evaluator = FunctionalEvaluator(fn, needs_model=False)
    assert can_continue(evaluator)
    whole = _experiment(tmp_path / "a", ContinuingTable(), ASHA(1, 9, eta=3), 20)
    whole.run()
    exp = _experiment(tmp_path / "b", evaluator, ASHA(1, 9, eta=3), 20)
    exp.run()
    assert [t.metric for t in exp.trials()] == [t.metric for t in whole.trials()]
    assert table.trained.continued > 0
    assert len(table.trained.epochs) == sum(t.budget for t in exp.trials())


def test_a_trial_paused_without_a_checkpoint_there_is_trained_again_from_scratch(tmp_path):
    class SavesNothing(ContinuingTable):
        def evaluate(self, model, report=None, arch=None, budget=None, checkpoint=None):
            return super().evaluate(model, report, arch, budget, Checkpoint(checkpoint.directory))

    evaluator = SavesNothing()
    exp = _experiment(tmp_path, evaluator, ASHA(1, 9, eta=3), 20)
    exp.run()
    trials = exp.trials()
    restarts = sum(b for t in trials for b in (1, 3, 9) if b < t.budget)
    assert len(evaluator.trained.epochs) == sum(t.budget for t in trials) + restarts
    assert evaluator.trained.continued == 0


# ----------------------------------------------------------------- stops, deaths, resumes
class StopsAfter(ContinuingTable):
    """Calls ``exp.stop()`` once it has trained ``epochs`` epochs (run() returns between trials)."""

    def __init__(self, epochs):
        super().__init__()
        self.stop_after, self.exp = epochs, None

    def evaluate(self, model, report=None, arch=None, budget=None, checkpoint=None):
        value = super().evaluate(model, report, arch, budget, checkpoint)
        if len(self.trained.epochs) >= self.stop_after and self.exp is not None:
            self.exp.stop()
        return value


def _whole(tmp_path, n=20):
    evaluator = ContinuingTable()
    exp = _experiment(tmp_path / "whole", evaluator, ASHA(1, 9, eta=3), n)
    exp.run()
    return [(t.arch, t.budget, t.status, t.intermediates) for t in exp.trials()], evaluator


@pytest.mark.parametrize("stop_after", [7, 16])
def test_a_resumed_run_continues_the_paused_trials_from_their_checkpoints(tmp_path, stop_after):
    want, whole = _whole(tmp_path)
    evaluator = StopsAfter(stop_after)
    first = _experiment(tmp_path / "parts", evaluator, ASHA(1, 9, eta=3), 20)
    evaluator.exp = first
    first.run()
    paused = [t for t in first.trials() if t.status == "paused"]
    assert paused and all(
        saved_budgets(_folder(tmp_path / "parts", t.id)) == [t.budget] for t in paused
    )
    evaluator.exp = None
    resumed = _experiment(tmp_path / "parts", evaluator, ASHA(1, 9, eta=3), 20, resume=True)
    resumed.run()
    assert [(t.arch, t.budget, t.status, t.intermediates) for t in resumed.trials()] == want
    assert evaluator.trained.epochs == whole.trained.epochs  # none trained twice, same order


@pytest.mark.parametrize("when", ["training", "writing"])
def test_a_death_mid_continuation_keeps_the_checkpoint_it_started_from(tmp_path, when):
    want, whole = _whole(tmp_path)
    workdir = tmp_path / "parts"
    evaluator = ContinuingTable(die=when)
    with pytest.raises(ProcessDeath):
        _experiment(workdir, evaluator, ASHA(1, 9, eta=3), 20).run()
    running = [t for t in load_trials(workdir) if t.status == "running"]
    assert len(running) == 1  # the promoted trial, in its continued job
    (trial,) = running
    start = len(trial.intermediates)  # the budget it was promoted from
    assert saved_budgets(_folder(workdir, trial.id)) == [start]
    lost = len(evaluator.trained.epochs)

    resumed = _experiment(workdir, evaluator, ASHA(1, 9, eta=3), 20, resume=True)
    resumed.run()
    assert [(t.arch, t.budget, t.status, t.intermediates) for t in resumed.trials()] == want
    # what the death cost: the epochs its job trained before it, trained again from `start`
    again = 1 if when == "training" else trial.budget - start
    assert len(evaluator.trained.epochs) == len(whole.trained.epochs) + again
    assert lost > 0


def test_a_trial_the_resume_does_not_rerun_loses_its_checkpoint(tmp_path):
    evaluator = ContinuingTable(die="training")
    with pytest.raises(ProcessDeath):
        _experiment(tmp_path, evaluator, ASHA(1, 9, eta=3), 20).run()
    (trial,) = [t for t in load_trials(tmp_path) if t.status == "running"]
    assert saved_budgets(_folder(tmp_path, trial.id))
    resumed = _experiment(
        tmp_path, evaluator, ASHA(1, 9, eta=3), 20, resume=True, rerun_interrupted=False
    )
    resumed.run()
    assert resumed.trials()[trial.id].status == "failed"  # Interrupted: nothing continues it
    assert not _folder(tmp_path, trial.id).exists()


# ----------------------------------------------------------------- a plain function continues
def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(48, 3, generator=g)
    y = (x[:, 0] > x[:, 1]).long()
    return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)


def _net(arch):
    return nn.Sequential(nn.Linear(3, 12), nn.Dropout(0.2), nn.ReLU(), nn.Linear(12, 2))


class Finals:
    models: list[nn.Module] = []


def train(model, budget, checkpoint, report):
    """The contract for a plain function: load the state at ``checkpoint.from_budget`` (None:
    a fresh start), train the epochs after it, report each, save the state at ``budget``."""
    from nasx.evaluator.checkpoint import restore_rng_state, rng_state

    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    schedule = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    state = checkpoint.load() if checkpoint is not None else None
    start = 0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        restore_rng_state(state["rng"])
        start = state["epoch"]
    data = _data()
    for _ in range(start, budget):
        for x, y in data:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        schedule.step()
        report(float(sum(p.detach().sum() for p in model.parameters())))
    if checkpoint is not None:
        checkpoint.save(
            {
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "schedule": schedule.state_dict(),
                "rng": rng_state(),
                "epoch": budget,
            }
        )
    Finals.models.append(model)
    return 1.0


def test_a_plain_function_continued_ends_with_the_weights_of_an_uninterrupted_training(tmp_path):
    Finals.models.clear()
    whole = run_trial(_net, train, Job(0, {}, seed=3, budget=5))
    folder = str(tmp_path)
    first = run_trial(
        _net, train, Job(0, {}, seed=3, budget=2, checkpoint=Checkpoint(folder, 0, 2))
    )
    job = Job(0, {}, seed=3, budget=5, from_budget=2, checkpoint=Checkpoint(folder, 2, 5))
    second = run_trial(_net, train, job)
    assert [r.status for r in (whole, first, second)] == ["succeeded"] * 3
    assert (len(first.intermediates), len(second.intermediates)) == (2, 3)  # 5 epochs in all
    assert first.intermediates + second.intermediates == whole.intermediates
    uninterrupted, _, continued = Finals.models
    for a, b in zip(uninterrupted.state_dict().values(), continued.state_dict().values()):
        assert torch.equal(a, b)
    assert second.budget == 5


def test_a_checkpoint_to_continue_from_is_refused_by_an_evaluator_that_declares_none(tmp_path):
    job = Job(0, {}, budget=3, from_budget=1, checkpoint=Checkpoint(str(tmp_path), 1, 3))
    result = run_trial(_net, lambda model, budget: 1.0, job)
    assert result.status == "failed" and "declares no `checkpoint` parameter" in result.error


def test_the_budget_spent_counts_only_the_continued_part(tmp_path):
    from nasx.experiment.storage.store import TrialStore
    from nasx.trial import Trial

    store = TrialStore.create(tmp_path, {})
    run = ScheduledRun(
        ASHA(1, 9, eta=3),
        store,
        evaluator=ContinuingTable(),
        checkpoints=TrialFolders(store.trial_dir),
    )
    first = run.next_assignment(allow_new=True)
    store.add(Trial(0, {}, "running", budget=1))
    run.started(0, first)
    assert run.job_fields(0, 1)["from_budget"] == 0
    Checkpoint(str(_folder(tmp_path, 0)), 0, 1).save({"epoch": 1})
    assert run.decide(0, 1, 0.5) == "pause"
    run.finished(Trial(0, {}, "paused", intermediates=[0.5], budget=1))
    for trial in (1, 2):  # two worse ones fill the rung, so trial 0 is promoted
        run.started(trial, run.next_assignment(allow_new=True))
        run.decide(trial, 1, 0.1)
        run.finished(Trial(trial, {}, "paused", intermediates=[0.1], budget=1))
    promotion = run.next_assignment(allow_new=True)
    assert (promotion.trial, promotion.from_budget, promotion.budget) == (0, 1, 3)
    run.promote(promotion)
    fields = run.job_fields(0, 3)
    assert (fields["from_budget"], fields["checkpoint"].resume_path) == (
        1,
        str(_folder(tmp_path, 0) / "budget-1.pt"),
    )
    spent = run.spent
    run.finished(Trial(0, {}, "paused", intermediates=[0.5, 0.6, 0.7], budget=3))
    assert run.spent - spent == 3 - 1
    store.close()


# ----------------------------------------------------------------- Classification in a search
class Widths(ModelSpace):
    def __init__(self):
        super().__init__()
        width = choice("width", [2, 4, 8, 16])
        self.net = nn.Sequential(
            nn.Linear(3, width), nn.ReLU(), nn.Dropout(0.2), nn.Linear(width, 2)
        )

    def forward(self, x):
        return self.net(x)


class CountBatches(pl.Callback):
    """Counts training batches in a class attribute (each trial trains a deep copy)."""

    batches = 0

    def on_train_batch_end(self, *args):
        CountBatches.batches += 1


def test_classification_in_a_search_trains_a_promotion_from_b_to_B_only(tmp_path):
    data = _data()  # 48 samples, batches of 8: 6 per epoch
    evaluator = Classification(
        learning_rate=0.05,
        train_dataloaders=data,
        val_dataloaders=DataLoader(data.dataset, batch_size=48),
        accelerator="cpu",
        callbacks=[CountBatches()],
    )
    CountBatches.batches = 0
    exp = NasExperiment(
        Widths(),
        evaluator,
        GridSearch(shuffle=False),
        workdir=tmp_path,
        progress=False,
        seed=11,
        max_trials=3,
        scheduler=ASHA(1, 3, eta=3),
    )
    exp.run()
    trials = exp.trials()
    # by hand: 3 trials of 1 epoch, the best promoted 1 -> 3: 3 + 2 epochs, not 3 + 3
    assert sorted(t.budget for t in trials) == [1, 1, 3]
    assert CountBatches.batches == (3 + 2) * 6
    (promoted,) = [t for t in trials if t.budget == 3]
    assert len(promoted.intermediates) == 3 and promoted.status == "succeeded"
    # the same trial trained 3 epochs at once, seeded as the experiment seeds it
    whole = run_trial(
        ModelBuilder.from_space(Widths()),
        evaluator,
        Job(promoted.id, promoted.arch, seed=11 + promoted.id, budget=3),
    )
    assert (whole.metric, whole.intermediates) == (promoted.metric, promoted.intermediates)
    assert not _folder(tmp_path, promoted.id).exists()  # complete: its checkpoint went


@pytest.mark.slow
@pytest.mark.parametrize("when", ["training", "writing"])
def test_a_sigkill_mid_continuation_loses_neither_the_checkpoint_nor_a_decision(tmp_path, when):
    """Real SIGKILLs (continuation_script.py): the checkpoint at b survives, the resumed run
    continues from it, and the search ends as an uninterrupted one."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    want, whole = _whole(tmp_path)
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    script = [sys.executable, str(Path(__file__).with_name("continuation_script.py"))]
    workdir = tmp_path / "killed"
    killed = subprocess.run([*script, str(workdir), when], env=env, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    (trial,) = [t for t in load_trials(workdir) if t.status == "running"]
    start = len(trial.intermediates)  # the budget it was promoted from
    folder = _folder(workdir, trial.id)
    assert saved_budgets(folder) == [start]
    leftovers = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == (1 if when == "writing" else 0)  # a kill runs no cleanup

    resumed = subprocess.run([*script, str(workdir), when], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    trials = load_trials(workdir)
    assert [(t.arch, t.budget, t.status, t.intermediates) for t in trials] == want
    epochs = Path(f"{workdir}.epochs").read_text().split("\n")[:-1]
    again = 1 if when == "training" else trial.budget - start  # what the kill cost
    assert len(epochs) == len(whole.trained.epochs) + again
    assert not list(workdir.glob("trials/*/checkpoint/*.tmp"))  # tidied once stored


def test_a_cost_evaluator_passes_the_checkpoint_to_the_one_it_wraps(tmp_path):
    seen = []

    def fn(model, budget, checkpoint):
        seen.append((budget, checkpoint.from_budget))
        return 0.5

    wrapped = FunctionalEvaluator(fn).with_cost((3,))
    assert can_continue(wrapped) and not can_continue(FunctionalEvaluator(lambda m, budget: 1.0))
    wrapped.evaluate(nn.Linear(3, 2), budget=3, checkpoint=Checkpoint(str(tmp_path), 1, 3))
    assert seen == [(3, 1)]
