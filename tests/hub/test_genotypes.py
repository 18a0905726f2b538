"""Tests for nasx.hub.genotypes and the searched cells: genotype <-> arch round trips, ENAS source."""

import random

import pytest

from nasx.hub import DARTS, ENAS, AmoebaNet, NASNet, arch_to_genotype, genotype_to_arch
from nasx.hub.genotypes import Genotype, enas_fixed_arc_to_genotype, merge_op_of
from nasx.hub.searched_archs import DARTS_V2, ENAS_FIXED_ARC, GENOTYPES
from nasx.hub.searched_archs import ENAS as ENAS_CELL
from nasx.space import search_space


@pytest.mark.parametrize("name", sorted(GENOTYPES))
def test_genotype_arch_round_trip(name):
    genotype = GENOTYPES[name]
    arch = genotype_to_arch(genotype)
    back = arch_to_genotype(arch, merge_op_of(genotype))
    assert back == Genotype(*(list(x) for x in genotype))


@pytest.mark.parametrize("space_cls", [DARTS, NASNet, ENAS, AmoebaNet])
def test_arch_genotype_round_trip_random_archs(space_cls):
    space = search_space(space_cls(width=4, num_cells=3))
    merge_op = "all" if space_cls is DARTS else "loose_end"
    rng = random.Random(0)
    for _ in range(20):
        arch = space.sample(rng)
        genotype = arch_to_genotype(arch, merge_op)
        cell_arch = {k: v for k, v in arch.items() if k not in ("width", "depth")}
        assert genotype_to_arch(genotype) == cell_arch


def test_darts_v2_arch_matches_nni():
    # NNI 3.0's DARTS.load_searched_model('darts-v2') arch, first node of each cell.
    arch = genotype_to_arch(DARTS_V2)
    assert arch["normal/op_2_0"] == "sep_conv_3x3" and arch["normal/input_2_0"] == [0]
    assert arch["normal/op_5_1"] == "dil_conv_3x3" and arch["normal/input_5_1"] == [2]
    assert arch["reduce/op_3_0"] == "skip_connect" and arch["reduce/input_3_0"] == [2]
    assert len(arch) == 32
    # valid in a DARTS space whose width/depth are fixed (labels do not depend on the size)
    space = search_space(DARTS(width=4, num_cells=3))
    assert space.validate(arch) == arch


def test_enas_cell_matches_fixed_arc_string():
    # Hand-decoded from ENAS's scripts/cifar10_micro_final.sh: op ids 0 sep3, 1 sep5, 2 avg, 3 max, 4 id.
    assert ENAS_CELL == enas_fixed_arc_to_genotype(*ENAS_FIXED_ARC)
    assert ENAS_CELL.normal[:2] == [("avg_pool_3x3", 0), ("sep_conv_3x3", 0)]
    assert ENAS_CELL.reduce_concat == [2, 4, 5, 6]  # node 3 feeds node 4, so it is not a loose end


def test_loose_end_concat_lists_agree_with_published():
    assert merge_op_of(GENOTYPES["nasnet-a"]) == "loose_end"
    assert merge_op_of(GENOTYPES["amoebanet-a"]) == "loose_end"
    assert merge_op_of(GENOTYPES["darts-v2"]) == "all"


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="reads node 3"):
        genotype_to_arch(
            Genotype(
                [("skip_connect", 3), ("skip_connect", 0)],
                [2],
                [("skip_connect", 0), ("skip_connect", 1)],
                [2],
            )
        )
    with pytest.raises(ValueError, match="no 'reduce' cell"):
        arch_to_genotype(
            {
                "normal/op_2_0": "a",
                "normal/input_2_0": [0],
                "normal/op_2_1": "a",
                "normal/input_2_1": [1],
            }
        )
