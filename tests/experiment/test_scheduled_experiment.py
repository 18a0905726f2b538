"""A multi-fidelity scheduler inside NasExperiment (sequential): the trials it pauses, prunes
and promotes are exactly those the scheduler's own simulation (schedulers/simulate.py) decides
when it replays the same learning curves, and the epochs trained are the simulation's plus the
restarts of promoted trials (trained again from scratch), computed by hand."""

from __future__ import annotations

import pytest

from nasx.evaluator import FunctionalEvaluator
from nasx.experiment import NasExperiment
from nasx.experiment.loop.scheduled import STATE_KEY
from nasx.experiment.schedulers import ASHA, simulate
from nasx.experiment.storage.store import TrialStore
from nasx.strategy import DARTS, Random

from .helpers import SmallNet
from .scheduled_helpers import CURVES, FromList, Net

OUTCOME = {"pause": "paused", "prune": "pruned", "complete": "succeeded"}


class _Count:
    n = 0


class TableEvaluator:
    """Trains ``budget`` epochs of the arch's table curve, reporting each; counts the epochs."""

    def __init__(self):
        self.trained = _Count()  # an object, not a number: the resume check ignores its count

    @property
    def epochs(self):
        return self.trained.n

    def evaluate(self, model, report=None, arch=None, budget=None):
        row = CURVES.row(arch)
        for epoch in range(budget):
            self.trained.n += 1
            report(CURVES.val[row][epoch])
        return CURVES.val[row][budget - 1]


def _run(tmp_path, scheduler, n, order=1, **kwargs):
    evaluator = TableEvaluator()
    exp = NasExperiment(
        Net(),
        evaluator,
        FromList(n, seed=order),
        workdir=tmp_path,
        build_model=False,
        progress=False,
        scheduler=scheduler,
        max_trials=n,
        **kwargs,
    )
    exp.run()
    return exp, evaluator


def _restarts(trial_budget, budgets):
    """Epochs a promoted trial trained twice: every rung below the budget it reached."""
    return sum(b for b in budgets if b < trial_budget)


@pytest.mark.parametrize(
    ("mode", "n", "rank_by"),
    # with 3 trials, ASHA promotes the best after the last one started: max_trials stops new
    # trials only, promotions go on; rank_by='mean' folds every report in (a restarted trial's
    # below where it was promoted from once), and in the archs' order 3 it decides otherwise
    [
        ("promotion", 20, "last"),
        ("stopping", 20, "last"),
        ("promotion", 3, "last"),
        ("promotion", 20, "mean"),
        ("stopping", 20, "mean"),
    ],
)
def test_the_experiment_decides_as_the_schedulers_simulation(tmp_path, mode, n, rank_by):
    def make(rank_by=rank_by):
        return ASHA(1, 9, eta=3, mode=mode, rank_by=rank_by)

    order = 1 if rank_by == "last" else 3
    sim = simulate(make(), FromList(n, seed=order), CURVES, workers=1, max_trials=n)
    if rank_by != "last":  # the case tells the rules apart
        plain = simulate(make("last"), FromList(n, seed=order), CURVES, workers=1, max_trials=n)
        assert [t.outcome for t in sim.trials] != [t.outcome for t in plain.trials]
    exp, evaluator = _run(tmp_path, make(), n, order=order)
    trials = exp.trials()
    assert [t.arch for t in trials] == [t.arch for t in sim.trials]
    assert [(t.budget, t.status) for t in trials] == [
        (s.budget, OUTCOME[s.outcome]) for s in sim.trials
    ]
    # each trial's curve is the table's, up to the budget it reached
    for t in trials:
        assert t.intermediates == CURVES.val[CURVES.row(t.arch)][: t.budget]
        assert t.metric == t.intermediates[-1]
    overhead = sum(_restarts(t.budget, [1, 3, 9]) for t in trials) if mode == "promotion" else 0
    assert evaluator.epochs == sim.epochs + overhead
    statuses = {t.status for t in trials}
    if mode == "promotion":
        assert statuses <= {"paused", "succeeded"} and overhead > 0  # one was promoted
    else:
        assert "pruned" in statuses
    assert exp.stop_reason == f"max_trials ({n}) reached"


def test_the_scheduler_state_is_stored_after_each_decision(tmp_path):
    exp, _ = _run(tmp_path, ASHA(1, 9, eta=3), 6)
    store = TrialStore(tmp_path, lock=False, read_only=True)
    try:
        stored = store.meta()[STATE_KEY]
    finally:
        store.close()
    assert stored == exp.scheduler.state_dict()


def test_a_scheduler_is_refused_by_name_where_it_cannot_run(tmp_path):
    def no_budget(model):
        return 1.0

    with pytest.raises(TypeError, match="declares no `budget` parameter"):
        NasExperiment(SmallNet(), no_budget, Random(), workdir=tmp_path, scheduler=ASHA())
    wrapped = FunctionalEvaluator(no_budget, needs_model=False)  # passes budget only to fn
    with pytest.raises(TypeError, match="no_budget declares no `budget` parameter"):
        NasExperiment(SmallNet(), wrapped, Random(), workdir=tmp_path, scheduler=ASHA())
    with pytest.raises(ValueError, match="needs a multi-trial strategy"):
        NasExperiment(SmallNet(), TableEvaluator(), DARTS(), workdir=tmp_path, scheduler=ASHA())
    with pytest.raises(TypeError, match="must be a nasx.experiment.schedulers.Scheduler"):
        NasExperiment(SmallNet(), TableEvaluator(), Random(), workdir=tmp_path, scheduler="asha")


class StopsAfter(TableEvaluator):
    """A TableEvaluator that calls ``exp.stop()`` once it has trained ``epochs`` epochs (the
    trial in flight finishes and is stored; run() returns between trials)."""

    def __init__(self, epochs):
        super().__init__()
        self.stop_after, self.exp = epochs, None

    def evaluate(self, model, report=None, arch=None, budget=None):
        value = super().evaluate(model, report, arch, budget)
        if self.epochs >= self.stop_after and self.exp is not None:
            self.exp.stop()
        return value


def _experiment(workdir, evaluator, n, rank_by="last", order=1, **kwargs):
    return NasExperiment(
        Net(),
        evaluator,
        FromList(n, seed=order),
        workdir=workdir,
        build_model=False,
        progress=False,
        scheduler=ASHA(1, 9, eta=3, rank_by=rank_by),
        max_trials=n,
        **kwargs,
    )


@pytest.mark.parametrize(
    ("stop_after", "rank_by", "order"), [(7, "last", 1), (16, "last", 1), (16, "mean", 3)]
)
def test_a_stopped_run_resumed_decides_as_an_uninterrupted_one(
    tmp_path, stop_after, rank_by, order
):
    n = 20
    whole, whole_evaluator = _run(
        tmp_path / "whole", ASHA(1, 9, eta=3, rank_by=rank_by), n, order=order
    )

    evaluator = StopsAfter(stop_after)
    first = _experiment(tmp_path / "parts", evaluator, n, rank_by=rank_by, order=order)
    evaluator.exp = first
    first.run()
    assert first.stop_reason == "stopped by stop()"
    part = first.trials()
    assert 0 < len(part) < n and any(t.status == "paused" for t in part)

    evaluator.exp = None  # no more stopping: the resumed run goes to the end
    resumed = _experiment(
        tmp_path / "parts", evaluator, n, rank_by=rank_by, order=order, resume=True
    )
    resumed.run()  # a new ASHA object: its rungs come from nasx.db
    got = [(t.arch, t.budget, t.status, t.intermediates) for t in resumed.trials()]
    assert got == [(t.arch, t.budget, t.status, t.intermediates) for t in whole.trials()]
    assert evaluator.epochs == whole_evaluator.epochs  # no trial trained twice
    assert resumed.stop_reason == whole.stop_reason == f"max_trials ({n}) reached"


def test_the_trial_table_shows_budgets_only_when_a_scheduler_set_them(tmp_path):
    from nasx.experiment.results.table import TrialTable
    from nasx.trial import Trial

    table = TrialTable(
        [
            Trial(0, {"k": 1}, "paused", metric=0.25, budget=1),
            Trial(1, {"k": 2}, "pruned", metric=0.5, budget=3),
        ]
    )
    lines = str(table).splitlines()
    assert lines[0].split()[:4] == ["id", "status", "budget", "metric"]
    assert lines[1].split()[:4] == ["0", "paused", "1", "0.25"]
    assert lines[2].split()[:4] == ["1", "pruned", "3", "0.5"]
    assert [r["budget"] for r in table.rows()] == [1, 3]
    assert "budget" not in str(TrialTable([Trial(0, {"k": 1}, "succeeded", metric=0.5)]))


class Recording(FromList):
    """FromList that records what it hears: tells, then updates of promoted trials."""

    def __init__(self, n):
        super().__init__(n)
        self.heard = []

    def tell(self, trial):
        self.heard.append(("tell", trial.id, trial.status, trial.budget, trial.metric))

    def update(self, trial):
        self.heard.append(("update", trial.id, trial.status, trial.budget, trial.metric))


def _asha_run(tmp_path, strategy, n):
    """A finished search of ``n`` trials by ``strategy`` under ASHA(1, 9, eta=3) (promotion)."""
    exp = NasExperiment(
        Net(),
        TableEvaluator(),
        strategy,
        workdir=tmp_path,
        build_model=False,
        progress=False,
        scheduler=ASHA(1, 9, eta=3),
        max_trials=n,
    )
    exp.run()
    return exp


def test_the_strategy_hears_each_arch_at_its_highest_budget(tmp_path):
    # ASHA in promotion mode pauses trials at rungs 1 and 3: the strategy hears a paused trial
    # as a result at that budget (status succeeded), and each promotion as an update
    strategy = Recording(20)
    exp = _asha_run(tmp_path, strategy, 20)
    trials = {t.id: t for t in exp.trials()}
    tells = [h for h in strategy.heard if h[0] == "tell"]
    assert sorted(h[1] for h in tells) == sorted(trials)  # each trial told once
    assert all(h[2] == "succeeded" for h in strategy.heard)
    assert all(h[3] == 1 for h in tells)  # at the first rung's budget
    updates = [h for h in strategy.heard if h[0] == "update"]
    assert updates and all(h[3] in (3, 9) for h in updates)
    # the last word on each trial is its stored budget and metric
    last = {h[1]: h[3:] for h in strategy.heard}
    assert last == {i: (t.budget, t.metric) for i, t in trials.items()}
    # the simulator tells and updates the same way
    sim_strategy = Recording(20)
    simulate(ASHA(1, 9, eta=3), sim_strategy, CURVES, workers=1, max_trials=20)
    assert [h[:4] for h in sim_strategy.heard] == [h[:4] for h in strategy.heard]


def test_regularized_evolution_learns_from_promoted_trials(tmp_path):
    from nasx.strategy import RegularizedEvolution

    strategy = RegularizedEvolution(population_size=8, sample_size=3, seed=0)
    exp = _asha_run(tmp_path, strategy, 24)
    stored = {t.id: t for t in exp.trials()}
    population = strategy.population()
    # paused trials are members (they were invisible to it before: only 'succeeded' counted)
    assert len(population) == 8
    assert any(stored[m.id].status == "paused" for m in population)
    # members hold their trial's highest budget and its value there
    assert all(
        (m.budget, m.metric) == (stored[m.id].budget, stored[m.id].metric) for m in population
    )
