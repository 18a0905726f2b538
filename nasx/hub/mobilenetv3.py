"""A MobileNetV3 space (Howard et al., ICCV 2019): the searched choices of MobileNetV3's blocks
over a stage skeleton, with MobileNetV3-Large and -Small as archs.

A 3x3 stride-2 stem (16 channels, h-swish), stages of inverted residuals, a 1x1 conv to
``head[0]`` channels (h-swish), pooling, a linear layer to ``head[1]`` (h-swish), dropout and the
classifier. Per stage ``i`` (labels): ``s<i>/depth`` (the published depth and one less or more),
``s<i>/width`` (0.75x, 1x or 1.25x the skeleton's width with ``make_divisible``; the first stage keeps the
stem's 16), ``s<i>/se`` (SE gates on or off), ``s<i>/act`` (``'relu'`` or ``'hswish'``); per
layer ``j``: ``s<i>_<j>/kernel`` (3, 5, 7) and ``s<i>_<j>/expand``, the expansion ratio from
:data:`EXPANDS` (MobileNetV3's expansion sizes over the input width; rounded with
``make_divisible``).

    >>> from nasx.space import search_space
    >>> space = search_space(MobileNetV3Space())
    >>> space['s2/width'].values, space['s1_0/expand'].values[:4]
    ([24, 32], [1.0, 2.3, 2.5, 3.0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
import torch.nn as nn

from ..space import Categorical, ModelSpace, MutableLinear, Repeat
from . import layer_costs as lc
from .mobile_blocks import InvertedResidual, activation, conv_bn, make_divisible

STEM = 16
EXPANDS = (1.0, 2.3, 2.5, 3.0, 11 / 3, 4.0, 4.5, 6.0)
"""Expansion ratios: every expansion size of MobileNetV3-Large and -Small over its input width
(e.g. 184 = 80 x 2.3, 88 = make_divisible(24 x 11/3))."""


class Stage(NamedTuple):
    width: int  # output channels at 1x
    stride: int  # of the first layer
    depth: int  # published layers


LARGE_STAGES = (
    Stage(16, 1, 1),
    Stage(24, 2, 2),
    Stage(40, 2, 3),
    Stage(80, 2, 4),
    Stage(112, 1, 2),
    Stage(160, 2, 3),
)
SMALL_STAGES = (
    Stage(16, 2, 1),
    Stage(24, 2, 2),
    Stage(40, 2, 3),
    Stage(48, 1, 2),
    Stage(96, 2, 3),
)
LARGE_HEAD = (960, 1280)
SMALL_HEAD = (576, 1024)
SKELETONS = {"large": (LARGE_STAGES, LARGE_HEAD), "small": (SMALL_STAGES, SMALL_HEAD)}
"""Skeleton name -> (stages, head): MobileNetV3-Large's and -Small's stage layout."""


WIDTH_MULTIPLIERS = (0.75, 1.0, 1.25)
"""The default multipliers of a stage's width (its ``s<i>/width`` values)."""


def width_choices(width: int, multipliers: Sequence[float] = WIDTH_MULTIPLIERS) -> list[int]:
    """``width`` times each multiplier (0.75x, 1x and 1.25x by default), rounded to multiples of 8.

    Example:
        >>> width_choices(40), width_choices(40, (0.5, 1.0))
        ([32, 40, 48], [24, 40])
    """
    return sorted({make_divisible(width * m) for m in multipliers})


_NNI_ONLY = (
    "base_widths",
    "expand_ratios",
    "squeeze_excite",
    "depth_range",
    "stride",
    "activation",
    "se_from_exp",
    "bn_eps",
    "bn_momentum",
)


class MobileNetV3Space(ModelSpace):
    """MobileNetV3's block choices over a stage skeleton (``skeleton``: Large or Small).

    Args:
        num_classes: classifier outputs.
        skeleton: ``'large'`` or ``'small'``: the stages (``Stage(width, stride, depth)`` each)
            and head channels (last conv, linear layer before the classifier) of MobileNetV3-Large
            or -Small.
        dropout: dropout before the classifier (0.2 in the paper).
        width_multipliers: NNI's argument: the multipliers of each stage's width that
            ``s<i>/width`` chooses among (default ``(0.75, 1.0, 1.25)``); one number fixes every
            width (no ``s<i>/width`` labels). The published archs need 1.0 among them.
        num_labels, dropout_rate: NNI's names of ``num_classes`` and ``dropout``.

    NNI's other arguments (``base_widths``, ``expand_ratios``, ``squeeze_excite``,
    ``depth_range``, ``stride``, ``activation``, ...) describe NNI's own skeleton; this space
    follows the paper's (``skeleton=``) and refuses them, saying so.

    Example:
        >>> import torch
        >>> from nasx.space import model_context
        >>> with model_context(MOBILENETV3_SMALL):
        ...     model = MobileNetV3Space(10, skeleton='small')
        >>> model(torch.randn(2, 3, 32, 32)).shape
        torch.Size([2, 10])
    """

    def __init__(
        self,
        num_classes: int = 1000,
        skeleton: str = "large",
        dropout: float = 0.2,
        width_multipliers: Sequence[float] | float = WIDTH_MULTIPLIERS,
        *,
        num_labels: int | None = None,
        dropout_rate: float | None = None,
        **nni_only: Any,
    ):
        super().__init__()
        if nni_only:
            unknown = [k for k in nni_only if k not in _NNI_ONLY]
            if unknown:
                raise TypeError(f"MobileNetV3Space got unexpected argument(s) {unknown}")
            raise TypeError(
                f"MobileNetV3Space: NNI's argument(s) {sorted(nni_only)} are not provided: they "
                "describe NNI's own skeleton, and this space follows the paper's (skeleton="
                "'large' or 'small'); widths are searched with width_multipliers="
            )
        if skeleton not in SKELETONS:
            raise ValueError(
                f"MobileNetV3Space skeleton must be one of {list(SKELETONS)}, got {skeleton!r}"
            )
        multipliers = _multipliers(width_multipliers)
        num_classes = num_labels if num_labels is not None else num_classes
        dropout = dropout_rate if dropout_rate is not None else dropout
        self.skeleton = skeleton
        stages, head = SKELETONS[skeleton]
        self.stem = nn.Sequential(*conv_bn(3, STEM, 3, 2), activation("hswish"))
        c_in: int | Categorical = STEM
        blocks = []
        stage_widths: list[int] = []  # each stage's fixed width; 0 where it is searched
        for i, stage in enumerate(stages, start=1):
            widths = width_choices(stage.width, multipliers)
            c_out: int | Categorical
            if i == 1:
                c_out = STEM
            elif len(widths) == 1:
                c_out = widths[0]
            else:
                c_out = Categorical(widths, label=f"s{i}/width")
            stage_widths.append(c_out if isinstance(c_out, int) else 0)
            se = Categorical([False, True], label=f"s{i}/se")
            act = Categorical(["relu", "hswish"], label=f"s{i}/act")

            def layer(j: int, i=i, c_in=c_in, c_out=c_out, stride=stage.stride, se=se, act=act):
                return InvertedResidual(
                    c_in if j == 0 else c_out,
                    c_out,
                    stride if j == 0 else 1,
                    Categorical(list(EXPANDS), label=f"s{i}_{j}/expand"),
                    Categorical([3, 5, 7], label=f"s{i}_{j}/kernel"),
                    se,
                    act,
                    divisible=True,
                )

            depth = (max(1, stage.depth - 1), stage.depth + 1)
            blocks.append(Repeat(layer, depth, label=f"s{i}/depth"))
            c_in = c_out
        self.stage_widths = stage_widths
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(*conv_bn(c_in, head[0]), activation("hswish"))
        self.pre_classifier = nn.Sequential(MutableLinear(head[0], head[1]), nn.Hardswish())
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(head[1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.head(self.blocks(self.stem(x))).mean((2, 3))  # [N, head[0]]
        return self.classifier(self.dropout(self.pre_classifier(x)))

    def analytic_cost(self, arch: dict[str, Any], input_shape: tuple[int, ...]) -> tuple[int, int]:
        """``(params, MACs)`` of ``arch`` for one ``(3, H, W)`` input, from per-layer formulas
        (:mod:`nasx.hub.layer_costs`, each layer cached by its choices and input size), no model
        built: what :func:`nasx.hardware.cost.arch_cost` uses for this space. MACs count conv and
        linear layers, as :func:`nasx.profiler.count_macs` does (activations and gates: none).

        >>> MobileNetV3Space().analytic_cost(MOBILENETV3_LARGE, (3, 224, 224))  # 5.4M, 219M
        (5483032, 216589760)
        """
        h, w = lc.input_size(input_shape, "MobileNetV3Space")
        stages, head = SKELETONS[self.skeleton]
        h, w = lc.conv_out(h, 3, 2), lc.conv_out(w, 3, 2)
        params, macs = lc.conv_bn(3, STEM, 3, h, w)
        c_in = STEM
        for i, stage in enumerate(stages, start=1):
            fixed = self.stage_widths[i - 1]
            c_out, se = fixed or arch[f"s{i}/width"], arch[f"s{i}/se"]
            for j in range(arch[f"s{i}/depth"]):
                expand = arch[f"s{i}_{j}/expand"]
                mid = make_divisible(c_in * expand)
                p, m, h, w = lc.inverted_residual(
                    c_in, mid, c_out, arch[f"s{i}_{j}/kernel"], stage.stride if j == 0 else 1,
                    h, w, expand != 1, make_divisible(mid // 4) if se else 0,
                )  # fmt: skip
                params, macs, c_in = params + p, macs + m, c_out
        parts = (
            lc.conv_bn(c_in, head[0], 1, h, w),
            lc.linear(head[0], head[1]),
            lc.linear(head[1], self.classifier.out_features),
        )
        for p, m in parts:
            params, macs = params + p, macs + m
        return params, macs


def _multipliers(value: Sequence[float] | float) -> tuple[float, ...]:
    items = (value,) if isinstance(value, (int, float)) else tuple(value)
    if not items or any(
        isinstance(m, bool) or not isinstance(m, (int, float)) or m <= 0 for m in items
    ):
        raise ValueError(
            "MobileNetV3Space width_multipliers must be a positive number or a non-empty sequence "
            f"of them, got {value!r}"
        )
    return tuple(float(m) for m in items)


def _arch(stages: tuple[Stage, ...], rows: list[tuple[bool, str, list[tuple[int, float]]]]) -> dict:
    """Arch from one ``(se, act, [(kernel, expand) per layer])`` row per stage, widths at 1x."""
    arch: dict = {}
    for i, (stage, (se, act, layers)) in enumerate(zip(stages, rows, strict=True), start=1):
        arch.update({f"s{i}/depth": len(layers), f"s{i}/se": se, f"s{i}/act": act})
        if i > 1:
            arch[f"s{i}/width"] = stage.width
        for j in range(stage.depth + 1):
            kernel, expand = layers[j] if j < len(layers) else (3, EXPANDS[0])
            arch[f"s{i}_{j}/kernel"], arch[f"s{i}_{j}/expand"] = kernel, expand
    return arch


# MobileNetV3-Large and -Small, Tables 1 and 2 of Howard et al., "Searching for MobileNetV3",
# ICCV 2019: kernel, expansion size (here over the input width), SE, activation of every bneck.
# Large: 5.4M parameters, 219M MACs; Small: 2.5M, 56M (Table 3).
#: MobileNetV3-Large as an arch of ``MobileNetV3Space(skeleton='large')`` (5.4M parameters,
#: 219M MACs).
MOBILENETV3_LARGE = _arch(
    LARGE_STAGES,
    [
        (False, "relu", [(3, 1.0)]),
        (False, "relu", [(3, 4.0), (3, 3.0)]),
        (True, "relu", [(5, 3.0), (5, 3.0), (5, 3.0)]),
        (False, "hswish", [(3, 6.0), (3, 2.5), (3, 2.3), (3, 2.3)]),
        (True, "hswish", [(3, 6.0), (3, 6.0)]),
        (True, "hswish", [(5, 6.0), (5, 6.0), (5, 6.0)]),
    ],
)
#: MobileNetV3-Small as an arch of ``MobileNetV3Space(skeleton='small')`` (2.5M parameters,
#: 56M MACs).
MOBILENETV3_SMALL = _arch(
    SMALL_STAGES,
    [
        (True, "relu", [(3, 1.0)]),
        (False, "relu", [(3, 4.5), (3, 11 / 3)]),
        (True, "hswish", [(5, 4.0), (5, 6.0), (5, 6.0)]),
        (True, "hswish", [(5, 3.0), (5, 3.0)]),
        (True, "hswish", [(5, 6.0), (5, 6.0), (5, 6.0)]),
    ],
)
