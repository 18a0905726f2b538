"""The NAS-Bench-101 hub space against the benchmark's published sizes.

Published figures (TensorFlow's trainable parameters, which count what PyTorch counts here: conv
weights without bias, BatchNorm's scale and shift, the classifier's weight and bias):
- 2,694,282: the Inception-like cell queried in the example of the benchmark's README
  (google-research/nasbench), ``trainable_parameters``;
- 227,274 and 49,979,274: the smallest and largest networks of the space (Ying et al., 2019,
  section 2: "from 227,274 to 49,979,274 parameters").
"""

from __future__ import annotations

import random

import pytest
import torch

from nasx.hub import NasBench101, nb101_spec_to_arch
from nasx.space import ConstraintViolation, search_space

CONV3, CONV1, POOL = "conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3"


def _matrix(edges, n=7):
    m = [[0] * n for _ in range(n)]
    for i, j in edges:
        m[i][j] = 1
    return m


INCEPTION_LIKE = (
    _matrix([(0, 1), (0, 2), (0, 3), (0, 5), (1, 6), (2, 6), (3, 4), (4, 6), (5, 6)]),
    ["input", CONV1, CONV3, CONV3, CONV3, POOL, "output"],
)
# one max-pool fanning out to four max-pools that all feed the output: each vertex gets a quarter
# of the output channels, so the projections are a quarter of the usual size
SMALLEST = (
    _matrix([(0, 1), (1, 2), (1, 3), (1, 4), (1, 5), (2, 6), (3, 6), (4, 6), (5, 6)]),
    ["input"] + [POOL] * 5 + ["output"],
)
# a chain of five 3x3 convs at full width, with the input projected into three places
LARGEST = (
    _matrix([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (0, 6), (0, 2), (0, 3)]),
    ["input"] + [CONV3] * 5 + ["output"],
)


@pytest.mark.parametrize(
    "spec, published",
    [(INCEPTION_LIKE, 2_694_282), (SMALLEST, 227_274), (LARGEST, 49_979_274)],
    ids=["inception-like", "smallest", "largest"],
)
def test_published_parameter_counts(spec, published):
    arch = nb101_spec_to_arch(*spec)
    space = NasBench101()
    search_space(space).validate(arch)
    with torch.device("meta"):  # shapes only: the full-size model costs nothing to build
        model = space.freeze(arch)
    assert sum(p.numel() for p in model.parameters()) == published


def test_nni_arguments_and_labels():
    space = NasBench101(stem_out_channels=8, num_modules_per_stack=1, num_labels=5, bn_eps=1e-3)
    ss = search_space(space)
    assert list(ss) == ["cell/num_nodes"] + [f"cell/op{i}" for i in range(1, 6)] + [
        f"cell/input{i}" for i in range(1, 7)
    ]  # one cell decision shared by every cell, as in NNI and the benchmark
    assert ss["cell/op1"].values == [CONV3, CONV1, POOL]
    bn = next(m for m in space.modules() if isinstance(m, torch.nn.BatchNorm2d))
    assert (bn.eps, bn.momentum) == (1e-3, 0.003)
    built = 0
    for seed in range(20):
        try:
            model = space.freeze(ss.sample(random.Random(seed)))
        except ConstraintViolation:  # over 9 edges or no path: a failed trial in a search
            continue
        assert model(torch.randn(2, 3, 16, 16)).shape == (2, 5)
        built += 1
    assert built >= 2


def test_spec_errors_name_the_problem():
    with pytest.raises(ValueError, match="upper-triangular"):
        nb101_spec_to_arch([[0, 0], [1, 0]], ["input", "output"])
    with pytest.raises(ValueError, match="unknown operations"):
        nb101_spec_to_arch(_matrix([(0, 1), (1, 2)], 3), ["input", "conv5x5", "output"])
