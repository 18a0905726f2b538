"""Constraints between choices: declaration on the space, filtered sampling and grids, exact and
estimated counts (against hand-computed numbers), budgets, and the empty-space error."""

from __future__ import annotations

import pickle
import random

import pytest
import torch.nn as nn

from nasx.experiment.filters import CostFilter, ParamCountFilter
from nasx.space import (
    Categorical,
    Cell,
    Constraint,
    EmptySpaceError,
    LayerChoice,
    ModelSpace,
    SearchSpace,
    add_constraint,
    at_most,
    choice,
    implies,
    max_ops_per_cell,
    search_space,
)


class Block(ModelSpace):
    """kernel (3) x expansion (2) x act (2) = 12 archs; 'kernel == 7 implies expansion <= 3'."""

    def __init__(self):
        super().__init__()
        kernel = Categorical([3, 5, 7], label="kernel")
        expansion = Categorical([3, 6], label="expansion")
        self.add_mutable(kernel)
        self.add_mutable(expansion)
        self.act = LayerChoice({"relu": nn.ReLU(), "tanh": nn.Tanh()}, label="act")
        self.add_constraint(implies(kernel == 7, expansion <= 3), label="k7 -> e3")


def test_expression_constraint_declared_in_the_constructor():
    space = search_space(Block())
    assert [c.label for c in space.constraints] == ["k7 -> e3"]
    assert space.violations({"kernel": 7, "expansion": 6, "act": "relu"}) == ["k7 -> e3"]
    assert space.satisfies({"kernel": 7, "expansion": 3, "act": "relu"})
    grid = list(space.grid())
    # hand count: 12 archs, minus kernel 7 with expansion 6 (x 2 activations) = 10
    assert len(grid) == 10 and all(space.satisfies(a) for a in grid)
    assert len(list(space.grid(constrained=False))) == space.size == 12
    count = space.count_valid()
    assert (count.count, count.total, count.exact) == (10, 12, True)
    assert count.rejected == {"k7 -> e3": 2}
    assert str(count) == "10 of 12 archs satisfy the constraints (exact, by enumeration)"
    rng = random.Random(0)
    assert all(space.satisfies(space.sample(rng)) for _ in range(200))
    with pytest.raises(Exception, match="k7 -> e3"):
        space.check({"kernel": 7, "expansion": 6, "act": "relu"})


def test_sampling_stays_uniform_over_the_valid_archs():
    space = search_space(Block())
    rng = random.Random(1)
    counts: dict[str, int] = {}
    for _ in range(2000):
        arch = space.sample(rng)
        key = repr(sorted(arch.items()))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 10
    assert max(counts.values()) < 1.5 * min(counts.values())  # ~200 each


class Widths(ModelSpace):
    """fc1: 4 -> w, fc2: w -> 2; parameters 4w + w + 2w + 2 = 7w + 2: 58, 114, 226."""

    constraints = [lambda arch: arch["depth"] <= 2]  # a class attribute, over the arch dict

    def __init__(self):
        super().__init__()
        w = choice("width", [8, 16, 32])
        self.depth = choice("depth", [1, 2, 3])
        self.fc1 = nn.Linear(4, w)
        self.fc2 = nn.Linear(w, 2)

    def forward(self, x):
        return self.fc2(self.fc1(x))


def test_class_attribute_and_parameter_budget_against_a_hand_count():
    space_module = Widths()
    add_constraint(space_module, CostFilter((4,), params=(None, 120)), label="params <= 120")
    space = search_space(space_module)
    labels = [c.label for c in space.constraints]
    assert labels == ["<lambda>", "params <= 120"] and space.constraints[1].needs_model
    valid = sorted((a["width"], a["depth"]) for a in space.grid())
    # widths 8 (58 params) and 16 (114) fit 120, 32 (226) does not; depth 3 is refused
    assert valid == [(8, 1), (8, 2), (16, 1), (16, 2)]
    reason = space.violations({"width": 32, "depth": 1})
    assert reason == ["params <= 120: rejected by CostFilter: params 226 above 120"]
    assert space.count_valid().count == 4
    # the same budget through ParamCountFilter (a real build) agrees
    plain = search_space(Widths()).with_constraints(
        Constraint(ParamCountFilter(max_params=114), label="<= 114")
    )
    assert plain.model_fn is not None
    assert sorted(a["width"] for a in plain.grid()) == [8, 8, 16, 16]


OPS = {
    "conv": lambda node, op, inp: nn.Conv2d(2, 2, 1),
    "skip": lambda node, op, inp: nn.Identity(),
}


class Cells(ModelSpace):
    def __init__(self, limit: int):
        super().__init__()
        # 3 nodes, one op each: ops 2^3; inputs 1 x 2 x 3 -> 48 archs per cell
        self.normal = Cell(OPS, num_nodes=3, num_predecessors=1, label="normal")
        self.reduce = Cell(OPS, num_nodes=3, num_predecessors=1, label="reduce")
        self.add_constraint(max_ops_per_cell("skip", limit))


@pytest.mark.parametrize(("limit", "valid_op_sets"), [(0, 1), (1, 4), (2, 7), (3, 8)])
def test_at_most_n_skips_per_cell_hand_count(limit, valid_op_sets):
    space = search_space(Cells(limit))
    assert space.size == 48 * 48
    count = space.count_valid()
    # per cell: op assignments with <= limit skips (C(3,0)+...+C(3,limit)) x 6 input choices
    assert count.exact and count.count == (valid_op_sets * 6) ** 2
    rule = space.constraints[0].rule
    for arch in list(space.grid())[:50]:
        assert all(n <= limit for n in rule.counts(arch).values())


def test_at_most_over_labels_and_one_cell():
    rule = max_ops_per_cell("skip", 0, cell="reduce")
    arch = {"normal/op_1_0": "skip", "reduce/op_1_0": "conv"}
    assert rule.check(arch) is None
    assert rule.check({**arch, "reduce/op_1_0": "skip"}) == "at most 0 'skip' in cell 'reduce'"
    c = at_most(2, "skip", ["a", "b", "c"])
    assert c.check({"a": "skip", "b": "skip", "c": "conv"}) is None
    assert c.check({"a": "skip", "b": "skip", "c": "skip"}) is not None


def test_empty_space_error_small_space_says_exact():
    space = search_space(Block()).with_constraints(
        Constraint(lambda arch: arch["kernel"] > 7, label="kernel > 7")
    )
    space.max_rejections = 30
    with pytest.raises(EmptySpaceError, match=r"none of the 12 archs.*'kernel > 7' rejected"):
        space.sample(random.Random(0))
    assert space.count_valid().count == 0


def test_empty_space_error_large_space_names_the_constraints_and_bounds_the_fraction():
    space = SearchSpace({f"x{i}": Categorical(list(range(10)), label=f"x{i}") for i in range(8)})
    space = space.with_constraints(
        Constraint(lambda arch: arch["x0"] < 5, label="x0 < 5"),
        Constraint(lambda arch: arch["x0"] > 7, label="x0 > 7"),
    )
    space.max_rejections = 200
    with pytest.raises(EmptySpaceError) as info:
        space.sample(random.Random(0))
    message = str(info.value)
    assert "rejected 200 random archs in a row" in message
    assert "'x0 < 5' rejected" in message and "'x0 > 7' rejected" in message
    assert "below 0.019" in message  # Wilson 95% upper bound for 0 successes in 200


def test_nearly_empty_small_space_falls_back_to_enumeration():
    space = SearchSpace({f"x{i}": Categorical(list(range(10)), label=f"x{i}") for i in range(4)})
    space = space.with_constraints(lambda arch: arch == {"x0": 1, "x1": 2, "x2": 3, "x3": 4})
    space.max_rejections = 20
    assert space.sample(random.Random(0)) == {"x0": 1, "x1": 2, "x2": 3, "x3": 4}


def test_estimated_count_has_a_confidence_interval():
    space = SearchSpace({f"x{i}": Categorical(list(range(10)), label=f"x{i}") for i in range(10)})
    space = space.with_constraints(lambda arch: arch["x0"] < 3)  # exactly 30% valid
    count = space.count_valid(samples=1000)
    assert not count.exact and count.samples == 1000
    assert count.low <= 0.3 * space.size <= count.high
    assert count.high - count.low < 0.1 * space.size
    assert "estimated from 1000 random archs" in str(count) and "95% CI" in str(count)


def test_search_space_with_constraints_pickles():
    space = search_space(Cells(1))
    copy = pickle.loads(pickle.dumps(space))
    assert [c.label for c in copy.constraints] == [c.label for c in space.constraints]
    assert not copy.satisfies({**space.default(), **{k: "skip" for k in space if "/op_" in k}})


def test_bad_rule_is_refused():
    with pytest.raises(TypeError, match="a constraint is a boolean expression"):
        Constraint(3)
    with pytest.raises(ValueError, match="cannot build one"):
        SearchSpace(w=Categorical([1], label="w")).with_constraints(
            CostFilter((4,), params=(None, 1))
        ).satisfies({"w": 1})
