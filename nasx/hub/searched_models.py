"""The registry of pre-searched models: which space, at which published size, with which arch.

:data:`SEARCHED_MODELS` maps a name (``'darts-v2'``, ``'enas'``, ``'mnasnet-a1'`` ...) to a
:class:`SearchedModel`: the space class, its published width and depth, the arch, the paper it
comes from, the paper's own size figures and, where nasx's count differs from them, why.
:mod:`nasx.hub.pretrained` builds the models and loads their weights.

    >>> entry = SEARCHED_MODELS['darts-v2']
    >>> entry.space, entry.paper_params
    ('nasx.hub.nds:DARTS', '3.3M')
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch.nn as nn

from ..space import model_context

__all__ = ["SEARCHED_MODELS", "SearchedModel", "available_models"]


@dataclass
class SearchedModel:
    """One pre-searched model: which space, at which size, with which arch, and where weights live."""

    name: str
    space: str  # "module:Class" of the space, imported when the model is built
    kwargs: dict[str, Any]  # the published width/depth/dataset
    arch: Callable[[], dict[str, Any]]  # the arch (a function, so data modules load lazily)
    source: str  # paper / repository the arch comes from
    url: str | None = None  # where published weights can be downloaded, when configured
    sha256: str | None = None  # checksum (or a prefix of at least 8 hex digits) of those weights
    filename: str = field(default="")
    # The source's own size figures, as printed ("3.3M", "312M"; None where it prints none), and
    # why nasx's count differs from them at their printed precision, with the evidence.
    # tests/hub/test_counts.py checks every model's count against these.
    paper_params: str | None = None
    paper_macs: str | None = None
    size_note: str = ""

    def __post_init__(self):
        if not self.filename:
            self.filename = f"{self.name}.pth"

    def build(self) -> nn.Module:
        """The model with freshly initialised weights."""
        cls = _space_class(self)
        with model_context(self.arch()):
            return cls(**self.kwargs)


def _genotype_arch(name: str) -> Callable[[], dict[str, Any]]:
    def arch() -> dict[str, Any]:
        from .genotypes import genotype_to_arch
        from .searched_archs import GENOTYPES

        return genotype_to_arch(GENOTYPES[name])

    return arch


def _named_arch(module: str, attr: str) -> Callable[[], dict[str, Any]]:
    return lambda: dict(getattr(importlib.import_module(module), attr))


_CIFAR_20 = {"width": 36, "num_cells": 20, "dataset": "cifar"}
SEARCHED_MODELS: dict[str, SearchedModel] = {
    m.name: m
    for m in [
        SearchedModel(
            "darts-v1",
            "nasx.hub.nds:DARTS",
            _CIFAR_20,
            _genotype_arch("darts-v1"),
            "Liu et al., DARTS, ICLR 2019 (first order), github.com/quark0/darts",
            paper_params="3.3M",
            size_note=(
                "3.17 M: Table 1 prints 3.3 M for both search orders, but the first-order normal "
                "cell has one convolution fewer than the second-order one (5 separable convs "
                "against 5 and a dilated one: cnn/genotypes.py, DARTS_V1 and DARTS_V2); the same "
                "builder counts DARTS-V2 at 3.35 M, the paper's 3.3 M"
            ),
        ),
        SearchedModel(
            "darts-v2",
            "nasx.hub.nds:DARTS",
            _CIFAR_20,
            _genotype_arch("darts-v2"),
            "Liu et al., DARTS, ICLR 2019 (second order), github.com/quark0/darts",
            paper_params="3.3M",
        ),
        SearchedModel(
            "pc-darts",
            "nasx.hub.nds:DARTS",
            _CIFAR_20,
            _genotype_arch("pc-darts"),
            "Xu et al., PC-DARTS, ICLR 2020, github.com/yuhuixu1993/PC-DARTS",
            paper_params="3.6M",
        ),
        SearchedModel(
            "p-darts",
            "nasx.hub.nds:DARTS",
            _CIFAR_20,
            _genotype_arch("p-darts"),
            "Chen et al., P-DARTS, ICCV 2019, github.com/chenxin061/pdarts",
            paper_params="3.4M",
        ),
        # NASNet-A (6 @ 768) on CIFAR-10: N=6 cells per stack and 32 initial filters.
        SearchedModel(
            "nasnet-a",
            "nasx.hub.nds:NASNet",
            {"width": 32, "num_cells": 20, "dataset": "cifar"},
            _genotype_arch("nasnet-a"),
            "Zoph et al., NASNet, CVPR 2018",
            paper_params="3.3M",
            size_note=(
                "3.06 M: the cell as DARTS's cnn/genotypes.py transcribes it, in DARTS's skeleton; "
                "the paper's normal cell also concatenates its input h_(i-1) into its output "
                "(nasx/hub/searched_archs.py), so each next cell's input projection is wider "
                "there. Not reconciled to the digit"
            ),
        ),
        # AmoebaNet-A (N=6, F=36) on CIFAR-10.
        SearchedModel(
            "amoebanet-a",
            "nasx.hub.nds:AmoebaNet",
            _CIFAR_20,
            _genotype_arch("amoebanet-a"),
            "Real et al., AmoebaNet, AAAI 2019",
            paper_params="3.2M",
            size_note=(
                "3.15 M (1.7% under the paper's 3.2 M of Table 2): the cell as DARTS's "
                "cnn/genotypes.py transcribes it, in DARTS's skeleton rather than the paper's "
                "TensorFlow one. Not reconciled to the digit"
            ),
        ),
        # ENAS's final CIFAR-10 micro model: 15 normal layers + 2 reduction layers, 36 filters.
        SearchedModel(
            "enas",
            "nasx.hub.nds:ENAS",
            {"width": 36, "num_cells": 17, "dataset": "cifar"},
            _genotype_arch("enas"),
            "Pham et al., ENAS, ICML 2018, github.com/melodyguan/enas",
            paper_params="4.6M",
            size_note=(
                "3.73 M against Table 2's 4.6 M: nasx builds the searched cell in DARTS's skeleton "
                "(NDS's ENAS space). The released model (src/cifar10/micro_child.py with "
                "scripts/cifar10_micro_final.sh) has two things more: a ReLU-1x1 conv-BN "
                "('layer_base') on every cell's second input, 0.165 M at 36/72/144 channels, and, "
                "trained with --child_use_aux_heads, an auxiliary head after layer 12 (1x1 conv "
                "720->128, 2x2 conv 128->768, linear 768->10), 0.495 M. With both, 4.39 M; the "
                "last 0.2 M are not reconciled"
            ),
        ),
        SearchedModel(
            "mnasnet-a1",
            "nasx.hub.mnasnet:MnasNet",
            {"num_classes": 1000},
            _named_arch("nasx.hub.mnasnet", "MNASNET_A1"),
            "Tan et al., MnasNet, CVPR 2019 (Fig. 7)",
            paper_params="3.9M",
            paper_macs="312M",
        ),
        SearchedModel(
            "mobilenetv2",
            "nasx.hub.mnasnet:MnasNet",
            {"num_classes": 1000},
            _named_arch("nasx.hub.mnasnet", "MOBILENET_V2"),
            "Sandler et al., MobileNetV2, CVPR 2018 (Table 2)",
            paper_params="3.4M",
            paper_macs="300M",
            size_note=(
                "3.50 M and 300.8 M MACs, the counts of torchvision's mobilenet_v2 to the unit "
                "(tests/hub/test_counts.py compares them); Table 4 prints 3.4 M and 300 M"
            ),
        ),
        SearchedModel(
            "proxylessnas-mobile",
            "nasx.hub.proxylessnas:ProxylessNAS",
            {"num_classes": 1000},
            _named_arch("nasx.hub.proxylessnas", "PROXYLESSNAS_MOBILE"),
            "Cai et al., ProxylessNAS, ICLR 2019 (Fig. 4), github.com/mit-han-lab/proxylessnas",
            paper_params="4.1M",  # as the ProxylessNAS repository quotes its released networks
            paper_macs="320M",
        ),
        SearchedModel(
            "proxylessnas-gpu",
            "nasx.hub.proxylessnas:ProxylessNAS",
            {"num_classes": 1000, "widths": (40, 24, 32, 56, 112, 128, 256, 432, 1728)},
            _named_arch("nasx.hub.proxylessnas", "PROXYLESSNAS_GPU"),
            "Cai et al., ProxylessNAS, ICLR 2019 (Fig. 4), github.com/mit-han-lab/proxylessnas",
            paper_params="7.1M",
            paper_macs="465M",
        ),
        *(
            SearchedModel(
                f"mobilenetv3-{size}",
                "nasx.hub.mobilenetv3:MobileNetV3Space",
                {"num_classes": 1000, "skeleton": size},
                _named_arch("nasx.hub.mobilenetv3", f"MOBILENETV3_{size.upper()}"),
                "Howard et al., Searching for MobileNetV3, ICCV 2019 (Tables 1-2)",
                paper_params=params,
                paper_macs=macs,
                size_note=(
                    f"the counts of torchvision's mobilenet_v3_{size} to the unit "
                    "(tests/hub/test_counts.py compares them), which fall under the MACs of the "
                    f"paper's Table 3 ({macs}) by about 1%"
                ),
            )
            for size, params, macs in (("large", "5.4M", "219M"), ("small", "2.5M", "56M"))
        ),
        # SpineNet backbones (no detection head): the SpineNet-49 arch at the paper's four scalings.
        *(
            SearchedModel(
                f"spinenet-{scaling.lower()}",
                "nasx.hub.spinenet:SpineNet",
                {"scaling": scaling},
                _named_arch("nasx.hub.spinenet", "SPINENET_49"),
                "Du et al., SpineNet, CVPR 2020 (Fig. 4, Table 1)",
                size_note=(
                    "the backbone alone: the paper's figures (Table 1) count RetinaNet's heads too, "
                    "so none compares"
                ),
            )
            for scaling in ("49S", "49", "96", "143")
        ),
    ]
}
"""Name -> :class:`SearchedModel`."""


def available_models() -> list[str]:
    """Names accepted by :func:`load_searched_model`.

    Example:
        >>> 'darts-v2' in available_models()
        True
    """
    return sorted(SEARCHED_MODELS)


def _space_class(entry: SearchedModel) -> type:
    module_name, cls_name = entry.space.split(":")
    return getattr(importlib.import_module(module_name), cls_name)
