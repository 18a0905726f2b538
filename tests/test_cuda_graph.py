"""nasx._cuda_graph: eager fallback on CPU, capturable optimizers, and (on a GPU) replays that
compute exactly what eager steps compute."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from nasx._cuda_graph import CapturedStep, make_capturable, optimizer_key

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_without_cuda_the_step_runs_eagerly_and_says_why():
    step = CapturedStep(lambda x: x + 1, optimizers=[])
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert not step.enabled and "CUDA" in step.disabled_reason
    assert step((torch.zeros(2),)).tolist() == [1.0, 1.0]
    assert step.captures == 0


def test_make_capturable_moves_resumed_step_counters_and_leaves_sgd_alone():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    p = nn.Parameter(torch.ones(3, device=device))
    adam = torch.optim.Adam([p])
    p.grad = torch.ones(3, device=device)
    adam.step()  # creates state['step'] (a CPU tensor when capturable=False)
    make_capturable(adam)
    # CPU parameters stay as they are (a capturable step refuses them)
    assert adam.param_groups[0]["capturable"] is p.is_cuda
    assert adam.state[p]["step"].device == p.device
    sgd = torch.optim.SGD([p], lr=0.1)
    make_capturable(sgd)
    assert "capturable" not in sgd.param_groups[0]


def test_optimizer_key_changes_with_the_learning_rate():
    p = nn.Parameter(torch.ones(1))
    opt = torch.optim.SGD([p], lr=0.1)
    before = optimizer_key([opt])
    opt.param_groups[0]["lr"] = 0.05  # what an LR scheduler does
    assert optimizer_key([opt]) != before


def _train(graphed: bool, steps: int = 6) -> tuple[list[float], torch.Tensor]:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).cuda()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    data = [
        (torch.randn(4, 8, device="cuda"), torch.randn(4, 1, device="cuda")) for _ in range(steps)
    ]

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    run = CapturedStep(step, [opt]) if graphed else None
    losses = [float(run((x, y)) if run else step(x, y)) for x, y in data]
    if graphed:
        assert run.captures == 1 and run.replays == steps - 2
    return losses, net[0].weight.detach().clone()


@cuda
def test_replayed_steps_equal_eager_steps():
    eager_losses, eager_w = _train(graphed=False)
    graph_losses, graph_w = _train(graphed=True)
    assert graph_losses == pytest.approx(eager_losses, rel=1e-5)
    torch.testing.assert_close(graph_w, eager_w)


@cuda
def test_a_host_sync_inside_the_step_turns_graphs_off_with_a_reason():
    x = torch.ones(2, device="cuda")
    run = CapturedStep(lambda t: t * float(t.sum()), optimizers=[], warmup=0)
    assert run((x,)).tolist() == [2.0, 2.0]  # fell back to an eager call
    assert not run.enabled and "capturing it failed" in run.disabled_reason
    # The broken capture leaves the device's random generator usable (eager dropout, randn).
    assert torch.randn(4, device="cuda").isfinite().all()
    assert nn.functional.dropout(torch.ones(8, device="cuda"), 0.5).shape == (8,)
