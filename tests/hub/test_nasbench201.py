"""Tests for nasx.hub.nasbench201: string <-> arch round trip over the real table, labels, sizes."""

import csv
import os
from pathlib import Path

import pytest
import torch

from nasx.hub import NasBench201, arch_to_nb201_string, nb201_string_to_arch
from nasx.space import model_context, search_space

DATA_DIR = Path(
    os.environ.get("NASX_DATA_DIR", Path(__file__).resolve().parents[2] / ".." / "shared" / "data")
)
NB201_CSV = DATA_DIR / "nb201" / "nb201.csv"


def test_labels_and_values_match_nni():
    space = search_space(NasBench201(stem_out_channels=4, num_modules_per_stack=1))
    assert list(space) == ["cell/0_1", "cell/0_2", "cell/1_2", "cell/0_3", "cell/1_3", "cell/2_3"]
    assert space["cell/0_1"].values == [
        "none",
        "skip_connect",
        "conv_1x1",
        "conv_3x3",
        "avg_pool_3x3",
    ]
    assert space.size == 15625


@pytest.mark.skipif(not NB201_CSV.exists(), reason=f"NAS-Bench-201 table not found at {NB201_CSV}")
def test_round_trip_all_rows_of_the_benchmark_table():
    space = search_space(NasBench201(stem_out_channels=4, num_modules_per_stack=1))
    with open(NB201_CSV, newline="") as f:
        rows = [row["arch"] for row in csv.DictReader(f)]
    assert len(rows) == 15625
    seen = set()
    for arch_str in rows:
        arch = nb201_string_to_arch(arch_str)
        assert space.validate(arch) == arch
        assert arch_to_nb201_string(arch) == arch_str
        seen.add(tuple(arch.values()))
    assert len(seen) == 15625  # the table covers the whole space, each arch once


def test_grid_round_trip_without_the_table():
    space = search_space(NasBench201(stem_out_channels=4, num_modules_per_stack=1))
    for arch in list(space.grid())[::97]:
        assert nb201_string_to_arch(arch_to_nb201_string(arch)) == arch


def test_parameter_count_of_the_largest_cell_matches_the_benchmark():
    # NATS-Bench reports 1.5316 MB (million) parameters on CIFAR-10 for the all-nor_conv_3x3 cell.
    arch_str = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
    with model_context(nb201_string_to_arch(arch_str)):
        model = NasBench201()
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(1.5316e6, rel=1e-4)


def test_none_edges_output_zeros_and_model_runs():
    arch_str = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
    with model_context(nb201_string_to_arch(arch_str)):
        model = NasBench201(stem_out_channels=4, num_modules_per_stack=1)
    cell = model.cells[0]
    assert cell(torch.randn(1, 4, 8, 8)).abs().sum() == 0
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)


@pytest.mark.parametrize(
    "bad, message",
    [
        ("|nor_conv_3x3~0|+|nor_conv_3x3~0|", "3 '\\+'-separated"),
        ("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|", "must be '<op>~0'"),
        ("|none~0|+|none~0|+|none~0|none~1|none~2|", "node 2 must have 2"),
    ],
)
def test_malformed_strings_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        nb201_string_to_arch(bad)


def test_arch_to_string_names_bad_values():
    arch = nb201_string_to_arch("|none~0|+|none~0|none~1|+|none~0|none~1|none~2|")
    with pytest.raises(ValueError, match="cell/0_1"):
        arch_to_nb201_string({**arch, "cell/0_1": "nor_conv_3x3"})
