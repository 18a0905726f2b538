"""When one-shot search steps are replayed from CUDA graphs, and (on a GPU) that a graphed DARTS
search trains exactly as the eager one does."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch

from nasx.evaluator import Classification
from nasx.strategy import DARTS, ENAS, GumbelDARTS, RandomOneShot
from nasx.strategy.oneshot import Supernet
from nasx.strategy.oneshot.graphed_step import graph_blocker
from nasx.strategy.oneshot.lightning import OneShotModule

from .toys import DartsLikeSpace

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _module(strategy, device="cpu"):
    supernet = Supernet(DartsLikeSpace(width=4, num_cells=2, num_nodes=2)).to(device)
    strategy.supernet = supernet
    module = OneShotModule(Classification(learning_rate=1e-2).module, supernet, strategy)
    module.to(device)
    module.configure_optimizers()
    return module


def test_cpu_searches_run_eagerly():
    assert "not on a CUDA GPU" in graph_blocker(_module(DARTS()))


@pytest.mark.parametrize(
    "strategy, reason",
    [
        (DARTS(cuda_graphs=False), "cuda_graphs=False"),
        (DARTS(order=2), "order=2"),
        (ENAS(), "another sub-network"),
        (RandomOneShot(), "another sub-network"),
    ],
)
def test_strategies_that_cannot_be_captured_say_why(strategy, reason):
    gpu = SimpleNamespace(parameters=lambda: iter([SimpleNamespace(device=torch.device("cuda"))]))
    module = SimpleNamespace(strategy=strategy, supernet=gpu)
    assert reason in graph_blocker(module)


def test_mixture_strategies_have_a_key_and_gumbel_s_holds_its_temperature():
    assert DARTS().graph_key() is not None
    g = GumbelDARTS(gumbel_temperature=2.0)
    assert g.graph_key() == ("gumbel", 2.0, False)


def test_cuda_graphs_must_be_none_true_or_false():
    with pytest.raises(ValueError, match="cuda_graphs must be None"):
        DARTS(cuda_graphs="yes")


def test_cuda_graphs_true_on_cpu_is_refused_when_the_search_starts():
    module = _module(DARTS(cuda_graphs=True))
    batch = (torch.randn(4, 3, 8, 8), torch.randint(0, 3, (4,)))
    with pytest.raises(ValueError, match="cannot use them: the supernet trains on cpu"):
        module.search_step(batch, batch)


@cuda
@pytest.mark.parametrize("strategy_class", [DARTS, GumbelDARTS])
def test_graphed_search_steps_equal_eager_ones(strategy_class):
    torch.manual_seed(0)
    batches = [
        (
            (torch.randn(8, 3, 8, 8), torch.randint(0, 3, (8,))),
            (torch.randn(8, 3, 8, 8), torch.randint(0, 3, (8,))),
        )
        for _ in range(6)
    ]
    batches = [tuple(tuple(t.cuda() for t in b) for b in pair) for pair in batches]
    results = []
    for graphs in (False, True):
        torch.manual_seed(1)
        module = _module(strategy_class(cuda_graphs=graphs, arc_learning_rate=0.1), "cuda")
        losses = [float(module.search_step(t, v)) for t, v in batches]
        alphas = copy.deepcopy({k: a.detach() for k, a in module.supernet.alphas().items()})
        results.append((losses, alphas, module.graphed_step))
    (eager_losses, eager_alphas, _), (graph_losses, graph_alphas, graphed) = results
    assert graphed is not None and graphed.captured.replays == len(batches) - 2
    if strategy_class is DARTS:  # Gumbel noise is drawn from the graph's own RNG offsets
        assert graph_losses == pytest.approx(eager_losses, rel=1e-4)
        for k in eager_alphas:
            # Adam moves each alpha by ~lr per step whatever the gradient's size, so the
            # last-bit differences of cuDNN's kernels show as ~1e-4 here (measured on an H100)
            torch.testing.assert_close(graph_alphas[k], eager_alphas[k], rtol=0, atol=2e-3)
