"""Tests for nasx.hub.nds: NNI-compatible labels, published parameter counts, op strides."""

import pytest
import torch

from nasx.hub import DARTS, ENAS, PNAS, AmoebaNet, NASNet, genotype_to_arch
from nasx.hub.nds import NDS
from nasx.hub.searched_archs import GENOTYPES
from nasx.space import Cell, model_context, search_space


def _params(model, skip_aux=True):
    return sum(
        p.numel() for n, p in model.named_parameters() if not (skip_aux and "auxiliary" in n)
    )


def test_darts_labels_and_values_match_nni():
    space = search_space(DARTS())
    assert space["width"].values == [16, 24, 32]
    assert space["depth"].values == [4, 8, 12, 16, 20]
    assert space["normal/op_2_0"].values == [
        "max_pool_3x3",
        "avg_pool_3x3",
        "skip_connect",
        "sep_conv_3x3",
        "sep_conv_5x5",
        "dil_conv_3x3",
        "dil_conv_5x5",
    ]
    assert space["normal/input_3_1"].validate(2) == [2]
    cell_labels = {k for k in space if k not in ("width", "depth")}
    expected = {
        f"{c}/{kind}_{n}_{k}"
        for c in ("normal", "reduce")
        for kind in ("op", "input")
        for n in range(2, 6)
        for k in range(2)
    }
    assert cell_labels == expected


def test_darts_v2_parameter_count_equals_darts_reference():
    # DARTS's train.py prints "param size = 3.349342MB" for DARTS_V2 at 36 channels and 20 layers:
    # that count leaves out the auxiliary head. Our skeleton is the same network, so it is exact.
    with model_context(genotype_to_arch(GENOTYPES["darts-v2"])):
        model = DARTS(width=36, num_cells=20, dataset="cifar", auxiliary_loss=True)
    assert _params(model) == 3_349_342
    # the paper's table says 3.3M; the aux head (DARTS trains with it) adds about 0.48M
    assert _params(model, skip_aux=False) == pytest.approx(3.83e6, rel=0.01)


@pytest.mark.parametrize(
    "name, published", [("pc-darts", 3.6e6), ("p-darts", 3.4e6), ("amoebanet-a", 3.2e6)]
)
def test_other_searched_cells_match_published_counts(name, published):
    # Published CIFAR-10 counts (36 channels, 20 cells, without aux head), given to 2 digits in the
    # papers: a 3% tolerance covers the rounding.
    cls = AmoebaNet if name == "amoebanet-a" else DARTS
    with model_context(genotype_to_arch(GENOTYPES[name])):
        model = cls(width=36, num_cells=20)
    assert _params(model) == pytest.approx(published, rel=0.03)


def test_reduction_cell_strides_follow_input_index():
    space = DARTS(width=4, num_cells=3)
    reduce_cell = space.stages[1][0]
    assert isinstance(reduce_cell, Cell) and reduce_cell.label == "reduce"
    factory = reduce_cell.op_factories["sep_conv_3x3"]
    x = torch.randn(1, 8, 8, 8)
    assert factory(2, 0, None)(x).shape[-1] == 4  # search form: stride 2
    assert factory(3, 0, 1)(x).shape[-1] == 4  # from a cell input: stride 2
    assert factory(3, 0, 2)(x).shape[-1] == 8  # from an earlier node: stride 1
    normal_op = space.stages[0][0].op_factories["sep_conv_3x3"](2, 0, 0)  # stage 0: 4 channels
    assert normal_op(torch.randn(1, 4, 8, 8)).shape[-1] == 8  # normal cell: stride 1


def test_depth_split_and_reduction_positions():
    with model_context({**genotype_to_arch(GENOTYPES["darts-v2"]), "depth": 8, "width": 16}):
        model = DARTS()
    assert [len(s) for s in model.stages] == [2, 3, 3]
    labels = [cell.label for stage in model.stages for cell in stage]
    assert labels == ["normal"] * 2 + ["reduce"] + ["normal"] * 2 + ["reduce"] + ["normal"] * 2
    assert search_space(model) == {}


def test_loose_end_cells_size_the_next_cell():
    with model_context(genotype_to_arch(GENOTYPES["amoebanet-a"])):
        model = AmoebaNet(width=4, num_cells=3)
    first = model.stages[0][0]
    assert first.output_node_indices == [2, 3, 4]  # nodes 4, 5, 6 of the genotype's normal_concat
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)


def test_imagenet_stem_and_aux_head():
    with model_context(genotype_to_arch(GENOTYPES["darts-v2"])):
        model = DARTS(width=8, num_cells=3, dataset="imagenet", auxiliary_loss=True)
    logits, aux = model(torch.randn(2, 3, 224, 224))
    assert logits.shape == aux.shape == (2, 1000)
    model.eval()
    assert model(torch.randn(1, 3, 224, 224)).shape == (1, 1000)


def test_drop_path_wraps_non_identity_ops_and_can_be_changed():
    with model_context(genotype_to_arch(GENOTYPES["darts-v2"])):
        model = DARTS(width=4, num_cells=3, drop_path_prob=0.2)
    model.set_drop_path_prob(0.3)
    probs = {m.drop_prob for m in model.modules() if type(m).__name__ == "DropPath"}
    assert probs == {0.3}


def test_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="unknown operation"):
        NDS(["sep_conv_9x9"])
    with pytest.raises(ValueError, match="dataset must be"):
        DARTS(dataset="mnist")


def test_freeze_matches_model_context_build():
    space = PNAS(width=4, num_cells=3)
    arch = search_space(space).sample(seed=1)
    frozen = space.freeze(arch)
    with model_context(arch):
        direct = PNAS(width=4, num_cells=3)
    assert _params(frozen) == _params(direct)
    assert [n for n, _ in frozen.named_parameters()] == [n for n, _ in direct.named_parameters()]


@pytest.mark.parametrize("cls", [DARTS, NASNet, ENAS, AmoebaNet, PNAS])
def test_search_form_runs_default(cls):
    space = cls(width=4, num_cells=3)
    assert space(torch.randn(2, 3, 16, 16)).shape == (2, 10)


@pytest.mark.parametrize(
    "name, published", [("darts-v2", 4.7e6), ("p-darts", 4.9e6), ("pc-darts", 5.3e6)]
)
def test_imagenet_mobile_setting_parameter_counts(name, published):
    # DARTS / P-DARTS / PC-DARTS papers, ImageNet mobile setting: 48 channels, 14 cells, 224x224;
    # counts given to 2 digits (1% tolerance), without the auxiliary head.
    with model_context(genotype_to_arch(GENOTYPES[name])):
        model = DARTS(width=48, num_cells=14, dataset="imagenet", auxiliary_loss=True)
    assert _params(model) == pytest.approx(published, rel=0.01)
