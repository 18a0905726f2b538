"""NNI 3.0's strategy constructor arguments that nasx once lacked: accepted with NNI's meaning, or
refused with an error naming the NNI argument and the nasx way.

DARTS / GumbelDARTS / Proxyless / ENAS ``log_prob_every_n_step``; DARTS-family ``penalty``;
GumbelDARTS ``temperature`` (3.0) and ``use_temp_anneal``/``min_temp`` (2.x); GridSearch
``shuffle``/``dedup``; RegularizedEvolution ``crossover``.
"""

from __future__ import annotations

import types

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from nasx.space import Categorical, LayerChoice, ModelSpace, SearchSpace
from nasx.strategy import (
    DARTS,
    ENAS,
    GridSearch,
    GumbelDARTS,
    Proxyless,
    RandomOneShot,
    RegularizedEvolution,
)
from nasx.trial import Trial

# ---------------------------------------------------------------- one-shot arguments


@pytest.mark.parametrize("cls", [DARTS, GumbelDARTS, Proxyless, ENAS])
def test_log_prob_every_n_step_is_log_arch_every(cls):
    assert cls(log_prob_every_n_step=7).log_arch_every == 7
    assert cls().log_arch_every == RandomOneShot().log_arch_every  # nasx's default unchanged
    with pytest.raises(ValueError, match="log_prob_every_n_step=7, log_arch_every=3"):
        cls(log_prob_every_n_step=7, log_arch_every=3)
    with pytest.raises(ValueError, match="log_prob_every_n_step"):
        cls(log_prob_every_n_step=0)


@pytest.mark.parametrize(
    "cls, alternative",
    [(DARTS, "cost_penalty="), (GumbelDARTS, "cost_penalty="), (Proxyless, "cost=")],
)
def test_nni_profiler_penalty_is_refused_naming_the_nasx_way(cls, alternative):
    nni_penalty = {"profiler": object(), "baseline": 300e6, "scale": 0.1}
    with pytest.raises(TypeError, match=rf"{cls.__name__}\(penalty=...\).*{alternative}"):
        cls(penalty=nni_penalty)


def test_nni_sample_penalty_of_random_one_shot_is_refused_naming_the_nasx_ways():
    with pytest.raises(TypeError, match=r"RandomOneShot\(penalty=...\).*filter=.*reward_fn="):
        RandomOneShot(penalty={"profiler": object(), "baseline": 300e6})
    assert RandomOneShot(penalty=None).num_samples == 20  # NNI's default: no penalty


def _module(epoch, max_epochs):
    return types.SimpleNamespace(
        current_epoch=epoch, trainer=types.SimpleNamespace(max_epochs=max_epochs)
    )


def _temperatures(strategy, max_epochs):
    seen = [strategy.temperature]
    for epoch in range(max_epochs):
        strategy.on_epoch_end(_module(epoch, max_epochs))
        seen.append(strategy.temperature)
    return [round(t, 6) for t in seen]


def test_gumbel_temperature_nni_3_linear_schedule():
    # NNI's LinearTemperatureScheduler: (1 - epoch / total) * (init - min) + min at each epoch start
    expected = [1.0, 0.8325, 0.665, 0.4975, 0.33]
    assert _temperatures(GumbelDARTS(temperature=(1.0, 0.33)), 4) == expected
    assert _temperatures(GumbelDARTS(temperature={"init": 1.0, "min": 0.33}), 4) == expected
    scheduler = types.SimpleNamespace(init=2.0, min=1.0)  # NNI's LinearTemperatureScheduler
    assert _temperatures(GumbelDARTS(temperature=scheduler), 2) == [2.0, 1.5, 1.0]
    assert _temperatures(GumbelDARTS(temperature=0.5), 3) == [0.5] * 4  # a float: fixed
    with pytest.raises(ValueError, match="init >= min"):
        GumbelDARTS(temperature=(0.1, 1.0))
    with pytest.raises(ValueError, match="temperature must be"):
        GumbelDARTS(temperature="hot")


def test_gumbel_temperature_nni_2_arguments():
    assert _temperatures(GumbelDARTS(gumbel_temperature=1.0, use_temp_anneal=True), 2) == [
        1.0,
        0.665,
        0.33,
    ]
    anneal = GumbelDARTS(gumbel_temperature=2.0, use_temp_anneal=True, min_temp=1.0)
    assert _temperatures(anneal, 4) == [2.0, 1.75, 1.5, 1.25, 1.0]
    fixed = GumbelDARTS(gumbel_temperature=0.7, use_temp_anneal=False)  # NNI 2.x's default
    assert _temperatures(fixed, 3) == [0.7] * 4
    # nasx's own per-epoch decay when no NNI argument is given
    assert _temperatures(GumbelDARTS(temperature_decay=0.5), 2) == [1.0, 0.5, 0.33]
    with pytest.raises(ValueError, match="use_temp_anneal=True"):
        GumbelDARTS(min_temp=0.1)
    with pytest.raises(ValueError, match="not both"):
        GumbelDARTS(temperature=(1.0, 0.5), use_temp_anneal=True)


class _Tiny(ModelSpace):
    def __init__(self):
        super().__init__()
        self.op = LayerChoice([nn.Conv2d(1, 2, 3, padding=1), nn.Conv2d(1, 2, 1)], label="op")
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(F.relu(self.op(x)).mean((2, 3)))


@pytest.mark.slow  # a Lightning search: about 5 s alone, more under load
def test_gumbel_anneal_runs_through_a_search(tmp_path):
    from nasx.evaluator import Classification
    from nasx.experiment import NasExperiment

    torch.manual_seed(0)
    x = torch.randn(16, 1, 4, 4)
    data = DataLoader(TensorDataset(x, (x.mean((1, 2, 3)) > 0).long()), batch_size=8)
    evaluator = Classification(
        train_dataloaders=data,
        val_dataloaders=data,
        max_epochs=2,
        limit_train_batches=1,
        limit_val_batches=1,
        accelerator="cpu",
        enable_progress_bar=False,
        logger=False,
    )
    strategy = GumbelDARTS(temperature=(1.0, 0.5), log_prob_every_n_step=1)
    NasExperiment(_Tiny(), evaluator, strategy, workdir=tmp_path).run()
    assert strategy.temperature == pytest.approx(0.5)  # after epoch 2 of 2: the minimum


# ---------------------------------------------------------------- multi-trial arguments


def _grid_space():
    return SearchSpace(a=Categorical([1, 2], label="a"), b=Categorical(["x", "y"], label="b"))


def _proposals(strategy, trials=()):
    strategy.setup(_grid_space(), trials)
    out = []
    while (arch := strategy.propose()) is not None:
        out.append(arch)
    return out


def test_grid_search_dedup():
    grid = [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]
    stored = [Trial(0, grid[1], "succeeded", metric=0.5)]  # a trial from an earlier run
    # dedup=True (NNI's default): a resume skips every arch already tried, wherever it stood
    assert _proposals(GridSearch(shuffle=False), stored) == [grid[0], grid[2], grid[3]]
    # dedup=False: no check; the walk goes on from its position (1 proposal made), so the arch
    # tried before sits at position 1 and is proposed again, as NNI warns it may be
    assert _proposals(GridSearch(shuffle=False, dedup=False), stored) == grid[1:]
    # within one run both walk the same (shuffled) order
    assert _proposals(GridSearch(seed=3, dedup=False)) == _proposals(GridSearch(seed=3))
    assert "dedup=False" in repr(GridSearch(dedup=False))


def _ones_of_children(crossover):
    space = SearchSpace({f"x{i}": Categorical([0, 1], label=f"x{i}") for i in range(8)})
    parents = [{f"x{i}": 0 for i in range(8)}, {f"x{i}": 1 for i in range(8)}]
    strategy = RegularizedEvolution(
        population_size=2, sample_size=1, mutation_prob=0.0, crossover=crossover, seed=0
    )
    strategy.setup(space, [Trial(i, a, "succeeded", metric=1.0) for i, a in enumerate(parents)])
    # 10 children: fewer than the 16 single flips, so dedup never falls back to a random arch
    return [sum(strategy.propose().values()) for _ in range(10)]


def test_regularized_evolution_crossover():
    # all-zeros and all-ones parents: a mutation alone (one label flipped) gives 1 or 7 ones;
    # NNI's crossover takes each label from either tournament winner, so mixes appear
    assert set(_ones_of_children(crossover=False)) <= {1, 7}
    mixes = [n for n in _ones_of_children(crossover=True) if 2 <= n <= 6]
    assert len(mixes) >= 3
