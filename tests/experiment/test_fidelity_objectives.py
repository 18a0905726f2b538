"""Multi-objective pruning inside NasExperiment (issue 31, item 5): a scheduler made with
``objectives=`` ranks its rungs on entries of the metrics dict each report carries (NSGA-II's
fronts, then crowding: the MO-ASHA rule), and ``constraints=`` prune a trial at the first rung
whose report breaks one. The rung below is computed by hand."""

from __future__ import annotations

import pytest
import torch.nn as nn

from nasx.evaluator.cost import CostEvaluator
from nasx.experiment import NasExperiment
from nasx.experiment.loop.scheduled import ScheduledRun, check_scheduler
from nasx.experiment.schedulers import ASHA, FullBudget, MedianStopping, SuccessiveHalving
from nasx.space import ModelSpace, choice

# Trial i trains width WIDTHS[i]; at budget 1 it reports accuracy ACC[i], and costs LATENCY[i] ms.
WIDTHS = [2, 3, 4, 5, 6, 64, 7]
ACC = [0.80, 0.70, 0.60, 0.75, 0.65, 0.90, 0.72]
LATENCY = [8.0, 3.0, 2.0, 4.0, 5.0, 20.0, 6.0]
# Parameters of Linear(4, w): 5 w. Trial 5 (64 wide: 320 parameters) breaks params <= 100.
#
# Rung 1 (budget 1) by hand, objectives accuracy (max) and latency (min):
# - trial 5 breaks the constraint: pruned there, before it is ranked (it would be the best
#   accuracy); 6 trials remain, successive halving with eta=2 keeps 3;
# - first front {0, 1, 2, 3} (4 is dominated by 1 and 3, 6 by 3), second {4, 6};
# - crowding in the first front: 0 and 2 are its ends (infinite); 1 gets (0.75-0.60)/0.20 +
#   (4-2)/6 = 1.083, 3 gets (0.80-0.70)/0.20 + (8-3)/6 = 1.333;
# so the rung keeps 0, 2 and 3: trial 1 is on the front and still not kept.
KEPT_BY_HAND = {0, 2, 3}
# ranking on accuracy alone (the same constraint) keeps the three most accurate: 0, 3, 6
KEPT_BY_ACCURACY = {0, 3, 6}


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, choice("width", sorted(WIDTHS)))

    def forward(self, x):
        return self.fc(x)


class InOrder:
    """Proposes trial i's width in the order of WIDTHS."""

    def setup(self, search_space, trials=(), direction="maximize"):
        self.next = len(list(trials))

    def propose(self):
        if self.next >= len(WIDTHS):
            return None
        self.next += 1
        return {"width": WIDTHS[self.next - 1]}

    def tell(self, trial):
        pass


def train(model, budget, report):
    """The table's accuracy at epoch 1, then 0.01 better each epoch."""
    acc = ACC[WIDTHS.index(model.fc.out_features)]
    for epoch in range(budget):
        report(acc + 0.01 * epoch)
    return acc + 0.01 * (budget - 1)


def latency(model, input_shape):
    return LATENCY[WIDTHS.index(model.fc.out_features)]


def _run(tmp_path, scheduler):
    exp = NasExperiment(
        Net(),
        CostEvaluator(train, (4,), latency=latency),
        InOrder(),
        workdir=tmp_path,
        progress=False,
        max_trials=len(WIDTHS),
        scheduler=scheduler,
    )
    exp.run()
    return {t.id: t for t in exp.trials()}


def test_a_rung_keeps_the_fronts_then_the_crowding_and_prunes_what_breaks_a_constraint(tmp_path):
    scheduler = SuccessiveHalving(
        1,
        2,
        eta=2,
        n_trials=len(WIDTHS),
        objectives=["accuracy", "-latency_ms"],
        constraints={"params": 100},
    )
    trials = _run(tmp_path, scheduler)
    promoted = {i for i, t in trials.items() if t.budget == 2}
    assert promoted == KEPT_BY_HAND
    assert all(trials[i].status == "succeeded" for i in promoted)
    assert trials[5].status == "pruned" and trials[5].budget == 1
    # the bracket is complete: the trials its rung did not keep are pruned where they stopped
    assert {i for i, t in trials.items() if t.status == "pruned"} == {1, 4, 5, 6}
    assert all(trials[i].budget == 1 for i in (1, 4, 6))
    # every row keeps the metrics its last report carried: accuracy, latency, parameters
    assert trials[5].metrics["params"] == 320 and trials[5].metrics["latency_ms"] == 20.0
    assert trials[0].metrics["accuracy"] == pytest.approx(0.81)


def test_one_objective_keeps_the_most_accurate(tmp_path):
    scheduler = SuccessiveHalving(
        1, 2, eta=2, n_trials=len(WIDTHS), objectives=["accuracy"], constraints={"params": 100}
    )
    trials = _run(tmp_path, scheduler)
    assert {i for i, t in trials.items() if t.budget == 2} == KEPT_BY_ACCURACY


def test_a_constraint_prunes_at_the_first_rung_not_between_rungs():
    # ASHA(2, 8): rungs at 2, 4, 8; the limit is broken from the first report on
    run = ScheduledRun(ASHA(2, 8, eta=2, constraints={"ms": (None, 5)}))
    run.started(0, run.next_assignment(allow_new=True))
    assert run.decide(0, 1, {"default": 0.5, "ms": 9.0}) == "continue"  # budget 1: no rung
    assert run.decide(0, 2, {"default": 0.5, "ms": 9.0}) == "prune"
    assert 0 in run.scheduler.dead  # never promoted, in no ranking
    # a limit met: the scheduler ranks the report as usual
    run.started(1, run.next_assignment(allow_new=True))
    assert run.decide(1, 2, {"default": 0.5, "ms": 4.0}) == "pause"
    assert run.scheduler.rungs[0] == {1: (0.5,)}


def test_without_objectives_a_dict_report_is_ranked_by_its_default():
    run = ScheduledRun(ASHA(1, 4, eta=2, directions="minimize"))
    run.started(0, run.next_assignment(allow_new=True))
    run.decide(0, 1, {"default": 0.25, "loss": 9.0})
    assert run.scheduler.rungs[0] == {0: (-0.25,)}


def test_a_missing_objective_fails_the_trial_naming_the_metrics_reported(tmp_path):
    exp = NasExperiment(
        Net(),
        train,
        InOrder(),
        workdir=tmp_path,
        progress=False,
        max_trials=1,
        scheduler=ASHA(1, 2, eta=2, objectives=["accuracy", "-latency_ms"]),
    )
    exp.run()
    (trial,) = exp.trials()
    assert trial.status == "failed"
    assert "objectives ['accuracy', 'latency_ms']" in trial.error
    assert "reported the number" in trial.error


def test_a_missing_constrained_metric_is_named():
    run = ScheduledRun(ASHA(1, 4, eta=2, constraints={"latency_ms": 5}))
    run.started(0, run.next_assignment(allow_new=True))
    with pytest.raises(ValueError, match=r"constrained metric 'latency_ms' is not among .*'acc'"):
        run.decide(0, 1, {"default": 0.5, "acc": 0.5})


def test_objectives_set_the_directions():
    assert ASHA(objectives=["accuracy", "-latency_ms"]).directions == ("maximize", "minimize")
    assert ASHA(objectives={"loss": "minimize"}).directions == ("minimize",)
    same = ASHA(directions=["maximize", "minimize"], objectives=["a", "-b"])
    assert same.directions == ("maximize", "minimize")
    assert FullBudget(3, constraints={"params": 10}).goal.constraints[0].high == 10


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"objectives": "accuracy"}, "objectives must be {metric:"),
        ({"objectives": ["accuracy"], "directions": "minimize"}, "disagree with objectives"),
        ({"objectives": {"acc": "max"}}, "objective 'acc': direction must be one of"),
        ({"objectives": []}, "give at least one objective"),
        ({"constraints": {"params": (10, 1)}}, "low 10.0 is above high 1.0"),
        ({"constraints": ["params"]}, "constraints must be {metric:"),
        ({"constraints": {"params": "small"}}, "range of 'params' must be"),
    ],
)
def test_bad_objectives_and_constraints_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ASHA(1, 4, eta=2, **kwargs)


def test_several_directions_without_objectives_are_refused_in_an_experiment():
    with pytest.raises(ValueError, match=r"does not say which metrics.*objectives=\['accuracy'"):
        check_scheduler(
            ASHA(directions=["maximize", "minimize"]), train, one_shot=False, execution="sequential"
        )
    # one named objective suits the one-objective schedulers
    check_scheduler(
        MedianStopping(1, 4, direction="minimize"), train, one_shot=False, execution="sequential"
    )


def test_a_resume_with_other_objectives_is_refused_by_name():
    first = ASHA(1, 4, eta=2, objectives=["accuracy", "-latency_ms"])
    first.started(0, first.assign())
    first.report(0, 1, (0.5, 3.0))
    state = first.state_dict()
    ASHA(
        1, 4, eta=2, objectives={"accuracy": "maximize", "latency_ms": "minimize"}
    ).load_state_dict(state)
    for other in (ASHA(1, 4, eta=2), ASHA(1, 4, eta=2, objectives=["accuracy", "latency_ms"])):
        with pytest.raises(ValueError, match="resume with the same objectives="):
            other.load_state_dict(state)
    assert "objectives" not in ASHA(1, 4, eta=2).state_dict()  # states without them unchanged


def test_a_trial_a_constraint_pruned_says_why_in_its_row_the_table_nasx_show_and_dashboard(
    tmp_path, capsys
):
    from nasx.cli import main
    from nasx.dashboard.experiments import trial_row

    scheduler = SuccessiveHalving(
        1, 2, eta=2, n_trials=len(WIDTHS), objectives=["accuracy"], constraints={"params": 100}
    )
    trials = _run(tmp_path, scheduler)
    why = "constraint broken at budget 1: params 320 above 100"
    assert trials[5].status == "pruned" and trials[5].error == why
    # the trials pruned for their rank say so too, the others have no error
    assert all(
        t.error.startswith("not promoted: ") for t in trials.values() if t.budget == 1 and t.id != 5
    )
    assert all(t.error is None for t in trials.values() if t.status == "succeeded")
    assert trial_row(trials[5])["error"] == why  # the dashboard's row
    assert main(["show", str(tmp_path)]) == 0
    shown = [
        line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("5 ")
    ]
    assert len(shown) == 1 and "pruned" in shown[0] and why in shown[0], shown
