"""Model spaces and pre-searched models: the DARTS family (NDS), NAS-Bench-101/201, MnasNet, SpineNet,
ProxylessNAS, MobileNetV3, ShuffleNet (SPOS), AutoFormer, an elastic GPT language model
(GPTSpace); NNI's building blocks in :mod:`nasx.hub.modules` (``NasBench101Cell``,
``NasBench201Cell``, ``AutoActivation``).

The hub imports only :mod:`nasx.space` (never strategies or evaluators).

    >>> from nasx.hub import DARTS
    >>> from nasx.space import search_space
    >>> 'normal/op_2_0' in search_space(DARTS())
    True
"""

from . import modules
from .autoformer import (
    AUTOFORMER_BASE,
    AUTOFORMER_SMALL,
    AUTOFORMER_TINY,
    AutoFormer,
    AutoformerSpace,
)
from .genotypes import Genotype, arch_to_genotype, genotype_to_arch
from .gpt import GPTSpace
from .mnasnet import MNASNET_A1, MOBILENET_V2, MnasNet
from .mobilenetv3 import MOBILENETV3_LARGE, MOBILENETV3_SMALL, MobileNetV3Space
from .nasbench101 import NasBench101, nb101_spec_to_arch
from .nasbench201 import NasBench201, arch_to_nb201_string, nb201_string_to_arch
from .nds import DARTS, ENAS, NDS, PNAS, AmoebaNet, NASNet
from .pretrained import available_models, configure_weights, load_searched_model, load_weights
from .proxylessnas import PROXYLESSNAS_GPU, PROXYLESSNAS_MOBILE, ProxylessNAS
from .registry import HubSpace, InputKind, list_spaces, space_entry
from .shufflenet import SPOS, ShuffleNetSpace
from .spinenet import SPINENET_49, SpineNet

__all__ = [
    "AUTOFORMER_BASE",
    "AUTOFORMER_SMALL",
    "AUTOFORMER_TINY",
    "AutoFormer",
    "AutoformerSpace",
    "DARTS",
    "ENAS",
    "NDS",
    "PNAS",
    "AmoebaNet",
    "Genotype",
    "GPTSpace",
    "HubSpace",
    "InputKind",
    "MNASNET_A1",
    "MOBILENET_V2",
    "MnasNet",
    "MOBILENETV3_LARGE",
    "MOBILENETV3_SMALL",
    "MobileNetV3Space",
    "PROXYLESSNAS_GPU",
    "PROXYLESSNAS_MOBILE",
    "ProxylessNAS",
    "NASNet",
    "NasBench101",
    "NasBench201",
    "SPINENET_49",
    "SPOS",
    "ShuffleNetSpace",
    "SpineNet",
    "arch_to_nb201_string",
    "nb201_string_to_arch",
    "nb101_spec_to_arch",
    "arch_to_genotype",
    "available_models",
    "list_spaces",
    "space_entry",
    "configure_weights",
    "load_searched_model",
    "load_weights",
    "genotype_to_arch",
    "modules",
]
