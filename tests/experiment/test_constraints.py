"""Constraints in an experiment: the count is reported when the run starts, nasx's strategies
never propose an arch that breaks them (so nothing is rejected), and an arch from a strategy
written from scratch that does is rejected like a filtered one."""

from __future__ import annotations

from nasx.experiment import NasExperiment
from nasx.experiment.filters import CostFilter
from nasx.space import add_constraint, search_space
from nasx.strategy import GridSearch

from .helpers import SmallNet, width_metric


def budget_space():
    # SmallNet's parameters: 4w + w + w + 1 = 6w + 1 -> 13, 25, 49 for widths 2, 4, 8
    space = SmallNet()
    add_constraint(space, CostFilter((4,), params=(None, 30)), label="params <= 30")
    return space


def test_a_budget_declared_on_the_space_end_to_end(tmp_path, capsys):
    evaluated = []

    def metric(model):
        evaluated.append(model.fc1.out_features)
        return width_metric(model)

    exp = NasExperiment(budget_space(), metric, GridSearch(shuffle=False), workdir=tmp_path)
    exp.run()
    assert str(exp.valid_count) == "4 of 6 archs satisfy the constraints (exact, by enumeration)"
    assert "1 constraint(s) on the space (params <= 30): 4 of 6 archs" in capsys.readouterr().err
    assert [t.status for t in exp.trials()] == ["succeeded"] * 4  # nothing proposed to reject
    assert sorted(evaluated) == [2, 2, 4, 4]
    assert exp.export_top_models() == [{"width": 4, "act": 1}]


class Sweep:
    """A MultiTrialStrategy written from scratch: it walks the unconstrained grid."""

    def setup(self, space, trials=(), direction="maximize"):
        self.todo = list(space.grid(constrained=False))[len(list(trials)) :]

    def propose(self):
        return self.todo.pop(0) if self.todo else None

    def tell(self, trial):
        pass


def test_a_violating_arch_from_a_hand_written_strategy_is_rejected(tmp_path):
    exp = NasExperiment(budget_space(), width_metric, Sweep(), workdir=tmp_path, progress=False)
    exp.run()
    rejected = exp.trials("rejected")
    assert [t.arch["width"] for t in rejected] == [8, 8]
    assert rejected[0].error == (
        "breaks the space's constraints: params <= 30: rejected by CostFilter: params 49 above 30"
    )
    assert all(search_space(budget_space()).satisfies(t.arch) for t in exp.trials("succeeded"))
