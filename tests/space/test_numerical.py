"""Numerical choices: NNI's distributions, quantisation, defaults, grids and the shortcuts."""

import math
import random
import statistics

import pytest
import torch.nn as nn

from nasx.space import (
    InvalidArchError,
    ModelSpace,
    Numerical,
    SearchSpace,
    loguniform,
    model_context,
    normal,
    qloguniform,
    qnormal,
    quniform,
    search_space,
    uniform,
)


def test_quantised_values_follow_nni_examples():
    # NNI's docs: quniform(0, 10, 2.5) -> [0, 2.5, 5, 7.5, 10]; (2, 10, 5) -> [2, 5, 10].
    assert Numerical(0, 10, quantize=2.5, label="a").grid() == [0.0, 2.5, 5.0, 7.5, 10.0]
    assert Numerical(2, 10, quantize=5, label="b").grid() == [2.0, 5.0, 10.0]
    assert Numerical(2, 10, quantize=5, label="b").qclip(3.0) == 5.0


def test_defaults_are_medians():
    assert Numerical(0, 1, label="u").default == 0.5
    assert Numerical(1e-4, 1e-2, log_distributed=True, label="l").default == pytest.approx(1e-3)
    assert Numerical(mu=2.0, sigma=3.0, label="n").default == 2.0


def test_grid_with_granularity_gives_quantiles():
    assert Numerical(0, 1, label="u").grid(granularity=2) == [0.25, 0.5, 0.75]
    normal_grid = Numerical(mu=0, sigma=1, label="n").grid(granularity=2)
    assert normal_grid == pytest.approx([-0.6744897501960817, 0.0, 0.6744897501960817])


def test_a_continuous_choice_has_no_plain_grid_and_an_infinite_space():
    x = Numerical(0, 1, label="x")
    with pytest.raises(ValueError, match="'x' is continuous"):
        x.grid()
    with pytest.raises(TypeError, match="continuous"):
        len(x)
    assert SearchSpace(x=x).size == math.inf


def test_sampling_stays_in_range_and_follows_the_distribution():
    rng = random.Random(0)
    u = [Numerical(2, 4, label="u").sample(rng) for _ in range(2000)]
    assert min(u) >= 2 and max(u) <= 4 and statistics.mean(u) == pytest.approx(3, abs=0.05)
    logs = [
        math.log10(Numerical(1e-4, 1, log_distributed=True, label="l").sample(rng))
        for _ in range(2000)
    ]
    assert statistics.mean(logs) == pytest.approx(-2, abs=0.1)
    n = [Numerical(mu=1, sigma=2, label="n").sample(rng) for _ in range(2000)]
    assert statistics.mean(n) == pytest.approx(1, abs=0.15) and statistics.stdev(
        n
    ) == pytest.approx(2, abs=0.15)
    q = {Numerical(0, 10, quantize=2.5, label="q").sample(rng) for _ in range(200)}
    assert q == {0.0, 2.5, 5.0, 7.5, 10.0}


@pytest.mark.parametrize(
    "value, ok",
    [(0.5, True), (1, True), (1.5, False), ("0.5", False), (True, False), (float("nan"), False)],
)
def test_validate(value, ok):
    x = Numerical(0, 1, label="x")
    if ok:
        assert x.validate(value) == float(value)
    else:
        with pytest.raises(InvalidArchError, match="'x'"):
            x.validate(value)


def test_quantised_validation_refuses_values_off_the_grid():
    with pytest.raises(InvalidArchError, match="multiple of 2.5"):
        Numerical(0, 10, quantize=2.5, label="q").validate(3.0)


def test_a_quantised_bound_is_valid_only_when_sampling_can_reach_it():
    # low 0.05 is reached (values below 0.1 round to 0, then clip to 0.05); high 0.94 is not
    # (values up to 0.94 round to 0.9): validate agrees with grid() and sample()
    x = Numerical(0.05, 0.94, quantize=0.1, label="q")
    assert x.grid()[0] == 0.05 and x.grid()[-1] == pytest.approx(0.9) and 0.94 not in x.grid()
    rng = random.Random(0)
    assert 0.94 not in {x.sample(rng) for _ in range(2000)}
    assert x.validate(0.05) == 0.05 and x.validate(0.3) == 0.3 and x.validate(0.9) == 0.9
    with pytest.raises(InvalidArchError, match=r"invalid value 0.94 .* a multiple of 0.1 or 0.05$"):
        x.validate(0.94)
    assert Numerical(2, 10, quantize=5, label="b").validate(2) == 2.0  # NNI's quniform(2, 10, 5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"low": 1, "high": 0}, "low must be < high"),
        ({"mu": 0}, "both mu and sigma"),
        ({"mu": 0, "sigma": 0}, "sigma must be > 0"),
        ({"low": 0, "high": 1, "log_distributed": True}, "low > 0"),
        ({"low": 0, "high": 1, "quantize": 0}, "quantize must be > 0"),
        ({}, "finite low and high"),
    ],
)
def test_bad_definitions_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Numerical(**kwargs, label="bad")


def test_shortcuts_return_values_and_declare_choices():
    class Net(ModelSpace):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(uniform("p", 0.0, 0.5))
            self.values = [
                quniform("q", 0, 10, 2.5),
                loguniform("lr", 1e-4, 1e-2),
                qloguniform("ql", 1, 100, 5),
                normal("n", 0, 1),
                qnormal("qn", 0, 1, 0.5),
            ]

    space = Net()
    ss = search_space(space)
    assert list(ss) == ["p", "q", "lr", "ql", "n", "qn"]
    assert space.drop.p == 0.25 and space.values[0] == 5.0
    arch = {**ss.default(), "p": 0.1, "q": 7.5}
    with model_context(arch):
        model = Net()
    assert model.drop.p == 0.1 and model.values[0] == 7.5
