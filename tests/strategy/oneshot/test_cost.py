"""Hardware-aware one-shot: the expected-cost penalty (hand-computed values, gradients, DARTS and
Proxyless steering away from an expensive candidate) and RandomOneShot's arch filter."""

from __future__ import annotations

import pytest
import torch

from nasx.hub.mnasnet import MNASNET_A1, MnasNet
from nasx.space import search_space
from nasx.strategy import DARTS, GumbelDARTS, Proxyless, RandomOneShot
from nasx.strategy.oneshot import Supernet
from nasx.strategy.oneshot.cost import ArchCostRange, CostPenalty, add_penalty_gradient

from .toys import ToySpace, toy_evaluator

# ToySpace: op in (noise, zero, linear); linear is the only useful and the only costly one.
COST = {"op": {"noise": 0.0, "zero": 0.0, "linear": 10.0}}


def test_expected_cost_and_modes_by_hand():
    probs = {"op": torch.tensor([0.2, 0.3, 0.5]), "pick": torch.tensor([0.5, 0.5])}
    space = search_space(ToySpace())
    p = CostPenalty(COST, weight=2.0)
    assert p.expected(probs, space).item() == pytest.approx(5.0)
    assert p(probs, space).item() == pytest.approx(10.0)
    p = CostPenalty(COST, weight=1.0, target=4.0, mode="hinge", base=1.0)
    assert p(probs, space).item() == pytest.approx(6.0 / 4.0 - 1.0)
    assert CostPenalty(COST, target=100.0, mode="hinge")(probs, space).item() == 0.0
    # an input choice's weights are per input: its costs are keyed by input index
    p = CostPenalty({"pick": {0: 1.0, 1: 3.0}})
    assert p(probs, space).item() == pytest.approx(2.0)


def test_errors_name_the_problem():
    space = search_space(ToySpace())
    probs = {"op": torch.ones(3) / 3}
    with pytest.raises(KeyError, match="no entry for 'linear'"):
        CostPenalty({"op": {"noise": 0.0, "zero": 0.0}})(probs, space)
    with pytest.raises(KeyError, match="the architecture weights do not"):
        CostPenalty({"depth": {1: 0.0}})(probs, space)
    with pytest.raises(ValueError, match="does not know the order"):
        CostPenalty(COST)(probs)
    with pytest.raises(ValueError, match="needs a target"):
        CostPenalty(COST, mode="hinge")
    with pytest.raises(ValueError, match="mode must be one of"):
        CostPenalty(COST, mode="log")


def test_penalty_gradient_is_added_to_the_alphas():
    supernet = Supernet(ToySpace(), mode="mixture")
    alpha = supernet.alpha("op")
    with torch.no_grad():
        alpha.zero_()
    alpha.grad = torch.ones(3)
    value = add_penalty_gradient(CostPenalty(COST), supernet)
    assert value.item() == pytest.approx(10.0 / 3)
    p = torch.ones(3) / 3
    c = torch.tensor([0.0, 0.0, 10.0])
    # d/dalpha of p . c with p = softmax(alpha): p * (c - p . c)
    torch.testing.assert_close(alpha.grad, torch.ones(3) + p * (c - (p * c).sum()))


def test_from_space_uses_the_profiler_and_the_default_arch_as_base():
    p = CostPenalty.from_space(ToySpace(), (8,), "macs")
    # default arch: op 'noise' (no MACs), head 16 * 3 = 48 MACs; 'linear' adds 8 * 16
    assert p.base == 48.0
    assert p.table == {"op": {"noise": 0.0, "zero": 0.0, "linear": 128.0}, "pick": {0: 0.0, 1: 0.0}}
    probs = {"op": torch.tensor([0.0, 0.5, 0.5]), "pick": torch.tensor([1.0, 0.0])}
    assert p(probs).item() == pytest.approx(48.0 + 64.0)


@pytest.mark.parametrize("make", [DARTS, GumbelDARTS], ids=["darts", "gumbel"])
def test_darts_penalty_steers_away_from_the_costly_candidate(make):
    torch.manual_seed(0)
    s = make(arc_learning_rate=5e-2, cost_penalty=CostPenalty(COST, weight=1.0))
    s.run(ToySpace(), toy_evaluator(epochs=2))
    assert s.export_top_models()[0]["op"] != "linear"


def test_proxyless_takes_the_penalty_as_cost_fn():
    space = ToySpace()
    grids = {label: c.grid() for label, c in search_space(space).items()}
    torch.manual_seed(0)
    s = Proxyless(arc_learning_rate=5e-2, cost_fn=CostPenalty(COST, grids=grids), penalty_weight=1)
    s.run(space, toy_evaluator(epochs=2))
    assert s.export_top_models()[0]["op"] != "linear"


def test_random_oneshot_filter_restricts_training_paths_and_the_search():
    trained = []

    def only_cheap(arch):
        return arch["op"] != "linear"

    torch.manual_seed(0)
    s = RandomOneShot(num_samples=4, eval_batches=1, filter=only_cheap)
    original = s.before_weight_step

    def spy(module):
        original(module)
        trained.append(module.supernet.state.arch["op"])

    s.before_weight_step = spy
    s.run(ToySpace(), toy_evaluator(epochs=1))
    assert trained and "linear" not in trained
    assert all(arch["op"] != "linear" for _, arch in s.results)
    never = RandomOneShot(filter=lambda a: False)
    with pytest.raises(RuntimeError, match="refused 100 random archs"):
        never._sample(search_space(ToySpace()), __import__("random").Random(0))


def test_arch_cost_range_on_mnasnet():
    in_range = ArchCostRange(MnasNet(), (3, 224, 224), macs=(300e6, 320e6))
    assert in_range(MNASNET_A1)
    assert in_range.violations(MNASNET_A1) == []
    small = ArchCostRange(MnasNet(), (3, 224, 224), params=(None, 3e6))
    assert small.violations(MNASNET_A1) == ["params 3.887e+06 above 3e+06"]
    with pytest.raises(ValueError, match="needs latency="):
        ArchCostRange(MnasNet(), (3, 224, 224), latency_ms=(None, 5))


def test_darts_with_a_penalty_is_not_captured_in_a_cuda_graph():
    plain, penalised = DARTS(), DARTS(cost_penalty=CostPenalty(COST))
    assert plain.graph_key() is not None
    assert penalised.graph_key() is None
    assert penalised.graph_blocker_reason == "with cost_penalty= runs eagerly"
    assert DARTS.graph_blocker_reason.startswith("order=2")
