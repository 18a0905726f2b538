"""The SpineNet space (Du et al., CVPR 2020): scale-permuted backbones with cross-scale connections.

A fixed stem (7x7 stride-2 conv, max pool, two level-2 bottleneck blocks) is followed by 15
searched blocks. Block ``i`` (labels ``block<i>/...``) chooses:

- ``type``: ``'bottleneck'`` (ResNet 1x1-3x3-1x1, 4x expansion) or ``'residual'`` (3x3-3x3);
- ``level``: its feature level 2..7 (resolution ``input / 2**level``), for the first 10 blocks;
  the last 5 blocks are the outputs P3..P7, in the order given by ``output_levels`` (a
  permutation of ``[3, 4, 5, 6, 7]``);
- ``parents``: two earlier feature maps (0 and 1 are the stem blocks, ``2 + j`` is block ``j``),
  each resampled to the block's level and width (1x1 conv scaled by ``resample_alpha``, stride-2
  conv and max pools or nearest upsampling, 1x1 conv) and summed.

As in the reference implementation, an output block also sums every earlier block that nothing
has read yet and that already has its level and width. Each output level goes through a 1x1
conv to ``endpoints_num_filters`` channels; ``forward`` returns ``{"p3": ..., ..., "p7": ...}`` (in that order)
and the module has ``out_channels``, so it plugs into torchvision's ``RetinaNet`` as a backbone.
:data:`SPINENET_49` is the published architecture; ``scaling`` gives 49S/49/96/143.

    >>> import torch
    >>> from nasx.space import model_context
    >>> with model_context(SPINENET_49):
    ...     backbone = SpineNet(scaling='49S').eval()
    >>> {k: tuple(v.shape[1:]) for k, v in backbone(torch.randn(1, 3, 128, 128)).items()}
    {'p3': (128, 16, 16), 'p4': (128, 8, 8), 'p5': (128, 4, 4), 'p6': (128, 2, 2), 'p7': (128, 1, 1)}
"""

import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..space import Categorical, CategoricalMultiple, ModelSpace, ensure_frozen

NUM_BLOCKS = 15
NUM_OUTPUTS = 5
OUTPUT_LEVELS = (3, 4, 5, 6, 7)
BLOCK_TYPES = ("bottleneck", "residual")
FILTERS = {2: 64, 3: 128, 4: 256, 5: 256, 6: 256, 7: 256}  # base filters of a block at each level

SCALINGS = {
    # endpoints_num_filters, filter_size_scale, resample_alpha, block_repeats (SpineNet paper, Table 1)
    "49S": (128, 0.65, 0.5, 1),
    "49": (256, 1.0, 0.5, 1),
    "96": (256, 1.0, 0.5, 2),
    "143": (256, 1.0, 1.0, 3),
}


def _conv_bn(
    c_in: int, c_out: int, kernel: int = 1, stride: int = 1, relu: bool = True
) -> nn.Sequential:
    layers = [
        nn.Conv2d(c_in, c_out, kernel, stride, kernel // 2, bias=False),
        nn.BatchNorm2d(c_out),
    ]
    return nn.Sequential(*layers, nn.ReLU(inplace=True)) if relu else nn.Sequential(*layers)


class ResBlock(nn.Module):
    """A ResNet block: ``'bottleneck'`` outputs ``4 * filters`` channels, ``'residual'`` ``filters``.

    Example:
        >>> ResBlock(8, 4, 'bottleneck')(torch.randn(1, 8, 5, 5)).shape
        torch.Size([1, 16, 5, 5])
    """

    def __init__(self, c_in: int, filters: int, block_type: str):
        super().__init__()
        if block_type == "bottleneck":
            c_out = 4 * filters
            self.body = nn.Sequential(
                _conv_bn(c_in, filters, 1),
                _conv_bn(filters, filters, 3),
                _conv_bn(filters, c_out, 1, relu=False),
            )
        elif block_type == "residual":
            c_out = filters
            self.body = nn.Sequential(
                _conv_bn(c_in, filters, 3), _conv_bn(filters, filters, 3, relu=False)
            )
        else:
            raise ValueError(f"block type must be one of {BLOCK_TYPES}, got {block_type!r}")
        self.shortcut = _conv_bn(c_in, c_out, 1, relu=False) if c_in != c_out else nn.Identity()
        self.out_channels = c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


def block_group(c_in: int, filters: int, block_type: str, repeats: int) -> nn.Sequential:
    """``repeats`` blocks; the first adapts the channels (SpineNet-96/143 repeat every block)."""
    blocks = []
    for _ in range(repeats):
        blocks.append(ResBlock(c_in, filters, block_type))
        c_in = blocks[-1].out_channels
    return nn.Sequential(*blocks)


class Resample(nn.Module):
    """Bring a parent feature map to a block's level and width.

    ``[N, c_in, H/2**l_in, .] -> [N, c_out, H/2**l_out, .]``: 1x1 conv to ``alpha`` x the parent's
    base filters, then a stride-2 3x3 conv and max pools (down) or nearest upsampling (up), then a
    1x1 conv (BN, no ReLU) to the block's input width.

    Example:
        >>> r = Resample(c_in=16, base_in=4, level_in=3, level_out=5, c_out=8, alpha=0.5).eval()
        >>> r(torch.randn(1, 16, 8, 8), size=(2, 2)).shape
        torch.Size([1, 8, 2, 2])
    """

    def __init__(
        self, c_in: int, base_in: int, level_in: int, level_out: int, c_out: int, alpha: float
    ):
        super().__init__()
        mid = int(base_in * alpha)
        self.reduce = _conv_bn(c_in, mid, 1)
        self.num_pools = max(0, level_out - level_in - 1)
        self.downsample = _conv_bn(mid, mid, 3, stride=2) if level_out > level_in else nn.Identity()
        self.expand = _conv_bn(mid, c_out, 1, relu=False)

    def forward(self, x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        x = self.downsample(self.reduce(x))
        for _ in range(self.num_pools):
            x = F.max_pool2d(x, 3, 2, 1)
        if x.shape[-2:] != size:  # a parent at a coarser level: nearest-neighbour upsampling
            x = F.interpolate(x, size=size, mode="nearest")
        return self.expand(x)


def _check_widths(
    endpoint_filters: int, scale: float, alpha: float, repeats: int, stem_filters: int
) -> None:
    """Refuse widths that would build a layer with no channels (named, with what is allowed)."""
    if int(endpoint_filters) < 1 or int(stem_filters) < 1 or int(repeats) < 1:
        raise ValueError(
            "endpoints_num_filters, stem_filters and block_repeats must be >= 1, got "
            f"{endpoint_filters}, {stem_filters}, {repeats}"
        )
    # the narrowest layer is a resampling 1x1 conv: int(int(64 * scale) * alpha) channels
    if int(int(min(FILTERS.values()) * scale) * alpha) < 1:
        raise ValueError(
            f"filter_size_scale={scale} with resample_alpha={alpha} leaves a resampling layer "
            f"with no channels: need int(int(64 * scale) * alpha) >= 1"
        )


class SpineNet(ModelSpace):
    """The SpineNet search space; a multi-level detection backbone.

    Args:
        scaling: ``'49S'``, ``'49'``, ``'96'`` or ``'143'``: endpoint width, filter scale,
            resampling ratio and block repeats of the published models (the arch is the same).
        endpoints_num_filters, filter_size_scale, resample_alpha, block_repeats: override one
            of the scaling's four values (the TF Model Garden's names), e.g. a narrow
            ``filter_size_scale=0.125, endpoints_num_filters=16`` for a CPU smoke run.
        stem_filters: channels of the stem's 7x7 convolution (64 in every published model).

    Attributes:
        out_channels: channels of every output level (what torchvision's detectors read).

    Example:
        >>> from nasx.space import search_space
        >>> space = search_space(SpineNet())
        >>> len(space), space['output_levels'].default
        (41, [3, 4, 5, 6, 7])
    """

    # Declared here so TorchScript knows their types (an empty inner list has none to infer);
    # evaluated annotations (this module has no `from __future__ import annotations`), as
    # TorchScript does not read class annotations written as strings.
    block_levels: list[int]
    block_parents: list[list[int]]
    block_extras: list[list[int]]
    output_blocks: dict[int, int]

    def __init__(
        self,
        scaling: str = "49",
        *,
        endpoints_num_filters: int | None = None,
        filter_size_scale: float | None = None,
        resample_alpha: float | None = None,
        block_repeats: int | None = None,
        stem_filters: int = 64,
    ):
        super().__init__()
        if scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {sorted(SCALINGS)}, got {scaling!r}")
        self.scaling = scaling
        default_endpoints, default_scale, default_alpha, default_repeats = SCALINGS[scaling]
        endpoint_filters = int(
            endpoints_num_filters if endpoints_num_filters is not None else default_endpoints
        )
        scale = float(filter_size_scale if filter_size_scale is not None else default_scale)
        alpha = float(resample_alpha if resample_alpha is not None else default_alpha)
        repeats = int(block_repeats if block_repeats is not None else default_repeats)
        _check_widths(endpoint_filters, scale, alpha, repeats, stem_filters)
        self.out_channels = endpoint_filters

        def filters(level: int) -> int:
            return int(FILTERS[level] * scale)

        # 7x7 stride 2 then max pool: level 2 (input / 4); two level-2 bottleneck groups.
        self.stem = nn.Sequential(
            nn.Conv2d(3, stem_filters, 7, 2, 3, bias=False),
            nn.BatchNorm2d(stem_filters),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        )
        self.stem_blocks = nn.ModuleList(
            [block_group(stem_filters, filters(2), "bottleneck", repeats)]
        )
        self.stem_blocks.append(block_group(4 * filters(2), filters(2), "bottleneck", repeats))
        # Per feature map (stem blocks first): level, channels, base filters, times read.
        levels, channels, bases = [2, 2], [4 * filters(2)] * 2, [filters(2)] * 2
        readers = [0, 0]

        output_order = ensure_frozen(
            Categorical(
                [list(p) for p in itertools.permutations(OUTPUT_LEVELS)], label="output_levels"
            )
        )
        self.resamples = nn.ModuleList()
        self.blocks = nn.ModuleList()
        self.block_levels: list[int] = []
        self.block_parents: list[list[int]] = []
        self.block_extras: list[list[int]] = []  # unread same-shape maps summed into output blocks
        self.output_blocks: dict[int, int] = {}  # output level -> block index
        for i in range(NUM_BLOCKS):
            block_type = ensure_frozen(Categorical(list(BLOCK_TYPES), label=f"block{i}/type"))
            is_output = i >= NUM_BLOCKS - NUM_OUTPUTS
            if is_output:
                level = output_order[i - (NUM_BLOCKS - NUM_OUTPUTS)]
            else:
                level = ensure_frozen(Categorical(list(range(2, 8)), label=f"block{i}/level"))
            parents = ensure_frozen(
                CategoricalMultiple(list(range(i + 2)), n_chosen=2, label=f"block{i}/parents")
            )
            c_block = (4 if block_type == "bottleneck" else 1) * filters(level)
            self.resamples.append(
                nn.ModuleList(
                    Resample(channels[p], bases[p], levels[p], level, c_block, alpha)
                    for p in parents
                )
            )
            for p in parents:
                readers[p] += 1
            extras = []
            if is_output:
                extras = [
                    j
                    for j in range(len(levels))
                    if readers[j] == 0 and levels[j] == level and channels[j] == c_block
                ]
                for j in extras:
                    readers[j] += 1
                self.output_blocks[level] = i
            self.blocks.append(block_group(c_block, filters(level), block_type, repeats))
            self.block_levels.append(level)
            self.block_parents.append(list(parents))
            self.block_extras.append(extras)
            levels.append(level)
            channels.append(c_block)
            bases.append(filters(level))
            readers.append(0)

        self.endpoints = nn.ModuleDict(
            {
                f"p{level}": _conv_bn(channels[2 + self.output_blocks[level]], endpoint_filters, 1)
                for level in OUTPUT_LEVELS
            }
        )

    @classmethod
    def load_searched_model(
        cls, name: str, pretrained: bool = False, download: bool = True, progress: bool = True
    ) -> nn.Module:
        """NNI's spelling of :func:`nasx.hub.load_searched_model`, limited to this space's models."""
        from .pretrained import searched_model_of

        return searched_model_of(cls, name, pretrained, download, progress)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h, w = x.shape[-2], x.shape[-1]
        feats = [self.stem_blocks[0](self.stem(x))]  # [N, 4*64*scale, H/4, W/4]
        feats.append(self.stem_blocks[1](feats[0]))
        # Loops over modules with enumerate and per-block lists read by index: the forms TorchScript
        # compiles (no zip over lists of modules, no sum of a generator).
        for i, (resample, block) in enumerate(zip(self.resamples, self.blocks)):
            level = self.block_levels[i]
            size = (math.ceil(h / 2**level), math.ceil(w / 2**level))
            merged = torch.zeros(0)
            for k, r in enumerate(resample):  # type: ignore
                term = r(feats[self.block_parents[i][k]], size)
                merged = term if k == 0 else merged + term
            for j in self.block_extras[i]:
                merged = merged + feats[j]
            feats.append(block(torch.relu(merged)))
        out: dict[str, torch.Tensor] = {}  # ordered p3 ... p7, as the endpoints
        for name, conv in self.endpoints.items():
            out[name] = conv(feats[2 + self.output_blocks[int(name[1:])]])
        return out


def _arch(rows: list[tuple[str, int | None, tuple[int, int]]], output_levels: list[int]) -> dict:
    arch: dict = {"output_levels": output_levels}
    for i, (block_type, level, parents) in enumerate(rows):
        arch[f"block{i}/type"] = block_type
        if level is not None:
            arch[f"block{i}/level"] = level
        arch[f"block{i}/parents"] = list(parents)
    return arch


# SpineNet-49, Fig. 4 of Du et al., "SpineNet: Learning Scale-Permuted Backbone for Recognition and
# Localization", CVPR 2020, as released in the TF Model Garden (SPINENET_BLOCK_SPECS in
# official/vision/modeling/backbones/spinenet.py): (type, level, parents); outputs have no level
# of their own, their levels are the ``output_levels`` order.
#: SpineNet-49, the paper's searched scale-permuted backbone, as an arch of :class:`SpineNet`.
SPINENET_49 = _arch(
    [
        ("bottleneck", 2, (0, 1)),
        ("residual", 4, (0, 1)),
        ("bottleneck", 3, (2, 3)),
        ("bottleneck", 4, (2, 4)),
        ("residual", 6, (3, 5)),
        ("bottleneck", 4, (3, 5)),
        ("residual", 5, (6, 7)),
        ("residual", 7, (6, 8)),
        ("bottleneck", 5, (8, 9)),
        ("bottleneck", 5, (8, 10)),
        ("bottleneck", None, (5, 10)),
        ("bottleneck", None, (4, 10)),
        ("bottleneck", None, (7, 12)),
        ("bottleneck", None, (5, 14)),
        ("bottleneck", None, (12, 14)),
    ],
    output_levels=[4, 3, 5, 7, 6],
)
