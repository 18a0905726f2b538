"""cell_graph reads the DAG of a cell out of NNI-style arch dicts, genotypes and NB201 archs."""

import pytest

from nasx.hub.genotypes import genotype_to_arch
from nasx.hub.nasbench201 import nb201_string_to_arch
from nasx.hub.searched_archs import DARTS_V2, NASNET_A
from nasx.plot.graph import cell_graph, cell_names


def test_darts_v2_normal_cell_matches_the_paper_genotype():
    # DARTS-V2 (Liu et al. 2019, genotypes.py): normal cell edges, two per node, all concatenated.
    g = cell_graph(DARTS_V2, "normal")
    assert g.inputs == ["c_{k-2}", "c_{k-1}"]
    assert g.nodes == ["0", "1", "2", "3"]
    assert g.edges == [
        ("c_{k-2}", "0", "sep_conv_3x3"),
        ("c_{k-1}", "0", "sep_conv_3x3"),
        ("c_{k-2}", "1", "sep_conv_3x3"),
        ("c_{k-1}", "1", "sep_conv_3x3"),
        ("c_{k-1}", "2", "sep_conv_3x3"),
        ("c_{k-2}", "2", "skip_connect"),
        ("c_{k-2}", "3", "skip_connect"),
        ("0", "3", "dil_conv_3x3"),
    ]
    assert g.outputs == ["0", "1", "2", "3"]


def test_bare_int_inputs_read_like_lists():
    arch = genotype_to_arch(DARTS_V2)
    bare = {k: (v[0] if isinstance(v, list) else v) for k, v in arch.items()}
    assert cell_graph(bare, "reduce") == cell_graph(arch, "reduce")


def test_loose_end_outputs_are_the_unread_nodes():
    # NASNet-A's reduction cell concatenates nodes 4, 5, 6 (Zoph et al. 2018): chosen nodes 2, 3, 4.
    g = cell_graph(NASNET_A, "reduce", merge_op="loose_end")
    assert g.outputs == ["2", "3", "4"]
    assert [str(n - 2) for n in NASNET_A.reduce_concat] == g.outputs


def test_nb201_drops_none_edges_and_ends_at_node_3():
    arch = nb201_string_to_arch(
        "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_1x1~2|"
    )
    g = cell_graph(arch)
    assert g.kind == "nb201" and g.output_node is None and g.outputs == ["3"]
    assert g.edges == [
        ("0", "1", "conv_3x3"),
        ("1", "2", "avg_pool_3x3"),
        ("0", "3", "skip_connect"),
        ("2", "3", "conv_1x1"),
    ]


def test_one_input_cell_without_input_label_for_node_1():
    # Cell(num_predecessors=1): node 1 has one possible input, so it has no input label.
    arch = {"c/op_1_0": "conv", "c/op_2_0": "pool", "c/input_2_0": [0]}
    g = cell_graph(arch)
    assert g.inputs == ["in_0"] and g.edges == [("in_0", "0", "conv"), ("in_0", "1", "pool")]


@pytest.mark.parametrize(
    ("arch", "cell", "message"),
    [
        ({"width": 16}, None, "no cell labels"),
        (genotype_to_arch(DARTS_V2), None, "several cells"),
        (genotype_to_arch(DARTS_V2), "fancy", "no cell 'fancy'"),
        ({"c/op_2_0": "a", "c/input_2_0": [0, 1]}, None, "must choose one input"),
        ({"c/op_2_0": "a", "c/input_2_0": [5]}, None, "reads node 5; allowed 0..1"),
        ({"c/op_2_0": "a"}, None, "no 'c/input_2_0'"),
    ],
)
def test_clear_errors(arch, cell, message):
    with pytest.raises(ValueError, match=message):
        cell_graph(arch, cell)


def test_cell_names_in_order_and_merge_op_checked():
    assert cell_names(genotype_to_arch(DARTS_V2)) == ["normal", "reduce"]
    with pytest.raises(ValueError, match="merge_op must be one of"):
        cell_graph(DARTS_V2, "normal", merge_op="sum")
    with pytest.raises(TypeError, match="arch must be a dict"):
        cell_graph([1, 2], "normal")
