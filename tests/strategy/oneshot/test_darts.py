"""DARTS: the second-order gradient against an exact autograd reference, and search behaviour."""

from types import SimpleNamespace

import pytest
import torch

from nasx._config import describe
from nasx.strategy import DARTS, GumbelDARTS
from nasx.strategy.oneshot import second_order_arch_grad

from .toys import TOY_RIGHT, ToySpace, toy_evaluator


def tiny_problem():
    g = torch.Generator().manual_seed(0)
    w1 = torch.randn(3, 2, generator=g, dtype=torch.float64, requires_grad=True)
    w2 = torch.randn(3, 2, generator=g, dtype=torch.float64, requires_grad=True)
    alpha = torch.randn(2, generator=g, dtype=torch.float64, requires_grad=True)
    batches = [
        (
            torch.randn(8, 3, generator=g, dtype=torch.float64),
            torch.randn(8, 2, generator=g, dtype=torch.float64),
        )
        for _ in range(2)
    ]

    def loss(ws, a, batch):
        x, y = batch
        p = a.softmax(0)
        out = p[0] * (x @ ws[0]) + p[1] * torch.tanh(x @ ws[1])  # a two-candidate mixed op
        return ((out - y) ** 2).mean()

    return [w1, w2], alpha, batches, loss


def test_second_order_matches_exact_unrolled_gradient():
    ws, alpha, (train, val), loss = tiny_problem()
    xi = 0.5
    # Exact: differentiate L_val(w - xi * dL_train/dw, a) through the unrolled step.
    g = torch.autograd.grad(loss(ws, alpha, train), ws, create_graph=True)
    unrolled = [w - xi * gw for w, gw in zip(ws, g, strict=False)]
    exact = torch.autograd.grad(loss(unrolled, alpha, val), alpha)[0]
    before = [w.detach().clone() for w in ws]
    approx = second_order_arch_grad(
        lambda b: loss(ws, alpha, b), ws, [alpha], train, val, xi, eps_scale=1e-4
    )[0]
    torch.testing.assert_close(approx, exact, rtol=1e-5, atol=1e-8)
    first_order = torch.autograd.grad(loss(ws, alpha, val), alpha)[0]
    assert (first_order - exact).abs().max() > 1e-3  # the second-order term matters here
    for w, b in zip(ws, before, strict=False):  # weights restored
        assert torch.equal(w, b)


def test_bad_order_is_refused():
    with pytest.raises(ValueError, match="order"):
        DARTS(order=3)


@pytest.mark.parametrize(
    "strategy",
    [
        DARTS(arc_learning_rate=3e-2),
        DARTS(arc_learning_rate=3e-2, order=2),
        GumbelDARTS(arc_learning_rate=3e-2, gumbel_temperature=1.0),
    ],
    ids=["darts1", "darts2", "gumbel"],
)
def test_selects_the_right_candidate(strategy):
    torch.manual_seed(0)
    strategy.run(ToySpace(), toy_evaluator(epochs=3))
    assert strategy.export_top_models()[0] == TOY_RIGHT
    probs = strategy.export_probs()
    assert max(probs["op"], key=probs["op"].get) == "linear"
    assert sum(probs["op"].values()) == pytest.approx(1.0)


def test_gumbel_temperature_anneals():
    s = GumbelDARTS(gumbel_temperature=1.0, temperature_decay=0.5, min_temperature=0.3)
    s.on_epoch_end(None)
    s.on_epoch_end(None)
    s.on_epoch_end(None)
    assert s.temperature == pytest.approx(0.3)


def test_partial_channel_darts_runs_on_a_darts_space():
    from torch.utils.data import DataLoader, TensorDataset

    from nasx.space import search_space

    from .toys import DartsLikeSpace, classification

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(32, 3, 16, 16), torch.randint(0, 10, (32,)))
    ev = classification(
        train_dataloaders=DataLoader(data, batch_size=8),
        max_epochs=1,
        accelerator="cpu",
        enable_progress_bar=False,
        logger=False,
        enable_checkpointing=False,
    )
    s = DARTS(arc_learning_rate=1e-2, partial_channels=2)
    space = DartsLikeSpace(width=4, num_cells=3, num_nodes=2)
    with pytest.warns(UserWarning, match="split 50/50"):
        s.run(space, ev)
    search_space(space).validate(s.export_top_models()[0])
    assert s.module.step_index == 2


@pytest.mark.parametrize(
    "kwargs, named",
    [
        ({"temperature": 0}, r"GumbelDARTS\(temperature=0\)"),  # NNI 3.0's spelling
        ({"gumbel_temperature": 0.0}, r"GumbelDARTS\(gumbel_temperature=0.0\)"),
        ({"min_temperature": -1.0}, "min_temperature"),
        ({"temperature": (1.0, 0.0)}, "init >= min > 0"),
        ({"temperature_decay": 1.5}, r"temperature_decay=1.5\): a factor in \(0, 1\]"),
        ({"temperature_decay": "cosine"}, "'linear'"),
    ],
)
def test_a_temperature_that_is_not_positive_is_refused_by_name(kwargs, named):
    # issue 29: GumbelDARTS(temperature=0) was accepted (gumbel_softmax divides by it)
    with pytest.raises(ValueError, match=named):
        GumbelDARTS(**kwargs)


def test_nasx_s_linear_schedule_is_nni_s():
    # one nasx spelling (temperature_decay='linear'); NNI's temperature=(init, min) translates to it
    nasx_spelling = GumbelDARTS(
        gumbel_temperature=1.0, temperature_decay="linear", min_temperature=0.5
    )
    nni_spelling = GumbelDARTS(temperature=(1.0, 0.5))
    for s in (nasx_spelling, nni_spelling):
        s.on_epoch_end(SimpleNamespace(current_epoch=0, trainer=SimpleNamespace(max_epochs=2)))
    assert nasx_spelling.temperature == nni_spelling.temperature == pytest.approx(0.75)
    assert describe(nasx_spelling) == describe(nni_spelling)  # the same resume fingerprint
