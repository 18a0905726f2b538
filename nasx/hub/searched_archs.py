"""Published cell architectures (genotypes) of the DARTS family, as data with their sources.

Each genotype lists ``(operation, input_node)`` pairs, two per node (nodes 0 and 1 are the cell's
inputs), and the nodes concatenated into the cell output. Convert with
:func:`nasx.hub.genotypes.genotype_to_arch` to get an arch for the matching space.

    >>> from nasx.hub.genotypes import genotype_to_arch
    >>> genotype_to_arch(DARTS_V2)['reduce/op_2_0']
    'max_pool_3x3'
"""

from __future__ import annotations

from .genotypes import Genotype

# Liu, Simonyan, Yang, "DARTS: Differentiable Architecture Search", ICLR 2019; cells as released in
# github.com/quark0/darts cnn/genotypes.py (DARTS_V1: first-order search, DARTS_V2: second-order).
DARTS_V1 = Genotype(
    normal=[
        ("sep_conv_3x3", 1),
        ("sep_conv_3x3", 0),
        ("skip_connect", 0),
        ("sep_conv_3x3", 1),
        ("skip_connect", 0),
        ("sep_conv_3x3", 1),
        ("sep_conv_3x3", 0),
        ("skip_connect", 2),
    ],
    normal_concat=[2, 3, 4, 5],
    reduce=[
        ("max_pool_3x3", 0),
        ("max_pool_3x3", 1),
        ("skip_connect", 2),
        ("max_pool_3x3", 0),
        ("max_pool_3x3", 0),
        ("skip_connect", 2),
        ("skip_connect", 2),
        ("avg_pool_3x3", 0),
    ],
    reduce_concat=[2, 3, 4, 5],
)
DARTS_V2 = Genotype(
    normal=[
        ("sep_conv_3x3", 0),
        ("sep_conv_3x3", 1),
        ("sep_conv_3x3", 0),
        ("sep_conv_3x3", 1),
        ("sep_conv_3x3", 1),
        ("skip_connect", 0),
        ("skip_connect", 0),
        ("dil_conv_3x3", 2),
    ],
    normal_concat=[2, 3, 4, 5],
    reduce=[
        ("max_pool_3x3", 0),
        ("max_pool_3x3", 1),
        ("skip_connect", 2),
        ("max_pool_3x3", 1),
        ("max_pool_3x3", 0),
        ("skip_connect", 2),
        ("skip_connect", 2),
        ("max_pool_3x3", 1),
    ],
    reduce_concat=[2, 3, 4, 5],
)

# Xu et al., "PC-DARTS: Partial Channel Connections for Memory-Efficient Architecture Search",
# ICLR 2020; the CIFAR-10 cell of github.com/yuhuixu1993/PC-DARTS genotypes.py (PC_DARTS_cifar).
PC_DARTS = Genotype(
    normal=[
        ("sep_conv_3x3", 1),
        ("skip_connect", 0),
        ("sep_conv_3x3", 0),
        ("dil_conv_3x3", 1),
        ("sep_conv_5x5", 0),
        ("sep_conv_3x3", 1),
        ("avg_pool_3x3", 0),
        ("dil_conv_3x3", 1),
    ],
    normal_concat=[2, 3, 4, 5],
    reduce=[
        ("sep_conv_5x5", 1),
        ("max_pool_3x3", 0),
        ("sep_conv_5x5", 1),
        ("sep_conv_5x5", 2),
        ("sep_conv_3x3", 0),
        ("sep_conv_3x3", 3),
        ("sep_conv_3x3", 1),
        ("sep_conv_3x3", 2),
    ],
    reduce_concat=[2, 3, 4, 5],
)

# Chen et al., "Progressive Differentiable Architecture Search", ICCV 2019; the CIFAR-10 cell of
# github.com/chenxin061/pdarts genotypes.py (PDARTS).
P_DARTS = Genotype(
    normal=[
        ("skip_connect", 0),
        ("dil_conv_3x3", 1),
        ("skip_connect", 0),
        ("sep_conv_3x3", 1),
        ("sep_conv_3x3", 1),
        ("sep_conv_3x3", 3),
        ("sep_conv_3x3", 0),
        ("dil_conv_5x5", 4),
    ],
    normal_concat=[2, 3, 4, 5],
    reduce=[
        ("avg_pool_3x3", 0),
        ("sep_conv_5x5", 1),
        ("sep_conv_3x3", 0),
        ("dil_conv_5x5", 2),
        ("max_pool_3x3", 0),
        ("dil_conv_3x3", 1),
        ("dil_conv_3x3", 1),
        ("dil_conv_5x5", 3),
    ],
    reduce_concat=[2, 3, 4, 5],
)

# Zoph et al., "Learning Transferable Architectures for Scalable Image Recognition", CVPR 2018
# (NASNet-A, Fig. 4), as transcribed into genotype form in DARTS's cnn/genotypes.py. The paper's
# normal cell also concatenates its input h_{i-1}; the NDS skeleton concatenates nodes only.
NASNET_A = Genotype(
    normal=[
        ("sep_conv_5x5", 1),
        ("sep_conv_3x3", 0),
        ("sep_conv_5x5", 0),
        ("sep_conv_3x3", 0),
        ("avg_pool_3x3", 1),
        ("skip_connect", 0),
        ("avg_pool_3x3", 0),
        ("avg_pool_3x3", 0),
        ("sep_conv_3x3", 1),
        ("skip_connect", 1),
    ],
    normal_concat=[2, 3, 4, 5, 6],
    reduce=[
        ("sep_conv_5x5", 1),
        ("sep_conv_7x7", 0),
        ("max_pool_3x3", 1),
        ("sep_conv_7x7", 0),
        ("avg_pool_3x3", 1),
        ("sep_conv_5x5", 0),
        ("skip_connect", 3),
        ("avg_pool_3x3", 2),
        ("sep_conv_3x3", 2),
        ("max_pool_3x3", 1),
    ],
    reduce_concat=[4, 5, 6],
)

# Real et al., "Regularized Evolution for Image Classifier Architecture Search", AAAI 2019
# (AmoebaNet-A, Fig. 4), as transcribed in DARTS's cnn/genotypes.py.
AMOEBANET_A = Genotype(
    normal=[
        ("avg_pool_3x3", 0),
        ("max_pool_3x3", 1),
        ("sep_conv_3x3", 0),
        ("sep_conv_5x5", 2),
        ("sep_conv_3x3", 0),
        ("avg_pool_3x3", 3),
        ("sep_conv_3x3", 1),
        ("skip_connect", 1),
        ("skip_connect", 0),
        ("avg_pool_3x3", 1),
    ],
    normal_concat=[4, 5, 6],
    reduce=[
        ("avg_pool_3x3", 0),
        ("sep_conv_3x3", 1),
        ("max_pool_3x3", 0),
        ("sep_conv_7x7", 2),
        ("sep_conv_7x7", 0),
        ("avg_pool_3x3", 1),
        ("max_pool_3x3", 0),
        ("max_pool_3x3", 1),
        ("conv_7x1_1x7", 0),
        ("sep_conv_3x3", 5),
    ],
    reduce_concat=[3, 4, 6],
)

# Pham et al., "Efficient Neural Architecture Search via Parameter Sharing", ICML 2018: the
# CIFAR-10 micro cell, the --child_fixed_arc of github.com/melodyguan/enas
# scripts/cifar10_micro_final.sh (first 20 numbers: normal cell, last 20: reduction cell). The
# genotype below is written out by hand and checked against this string by the tests.
ENAS_FIXED_ARC = (
    "0 2 0 0 0 4 0 1 0 4 1 1 1 0 0 1 0 2 1 1",
    "1 0 1 0 0 3 0 2 1 1 3 1 1 0 0 4 0 3 1 1",
)
ENAS = Genotype(
    normal=[
        ("avg_pool_3x3", 0),
        ("sep_conv_3x3", 0),
        ("skip_connect", 0),
        ("sep_conv_5x5", 0),
        ("skip_connect", 0),
        ("sep_conv_5x5", 1),
        ("sep_conv_3x3", 1),
        ("sep_conv_5x5", 0),
        ("avg_pool_3x3", 0),
        ("sep_conv_5x5", 1),
    ],
    normal_concat=[2, 3, 4, 5, 6],
    reduce=[
        ("sep_conv_3x3", 1),
        ("sep_conv_3x3", 1),
        ("max_pool_3x3", 0),
        ("avg_pool_3x3", 0),
        ("sep_conv_5x5", 1),
        ("sep_conv_5x5", 3),
        ("sep_conv_3x3", 1),
        ("skip_connect", 0),
        ("max_pool_3x3", 0),
        ("sep_conv_5x5", 1),
    ],
    reduce_concat=[2, 4, 5, 6],
)
# tests/hub/test_genotypes.py checks that ENAS is ENAS_FIXED_ARC decoded (no import-time work).

GENOTYPES: dict[str, Genotype] = {
    "darts-v1": DARTS_V1,
    "darts-v2": DARTS_V2,
    "pc-darts": PC_DARTS,
    "p-darts": P_DARTS,
    "nasnet-a": NASNET_A,
    "amoebanet-a": AMOEBANET_A,
    "enas": ENAS,
}
"""Searched-model name -> genotype."""
