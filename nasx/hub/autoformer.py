"""The AutoFormer space (Chen et al., ICCV 2021): a ViT whose width, depth, heads and MLP ratios
are searched, NNI's ``nni.nas.hub.pytorch.AutoFormer``.

An image is cut into ``patch_size`` patches (a strided conv to ``embed_dim`` channels), a class
token is prepended and an absolute position embedding added, then ``depth`` transformer layers
run, each with ``num_head_<i>`` heads of 64 dimensions (AutoFormer keeps the head dimension fixed,
so heads set the width of q, k, v) and an MLP ``mlp_ratio_<i>`` times ``embed_dim`` wide; a final
LayerNorm and a linear classifier on the mean of the patch tokens (``global_pooling``) or the class
token. Relative position encoding (``rpe``, on by default as in AutoFormer's released models) adds
learned 2-D row/column distance embeddings to the attention scores and values.

Labels are NNI's: ``embed_dim``, ``depth``, ``mlp_ratio_<i>`` and ``num_head_<i>`` for every
layer ``i`` of the deepest stack (the layers past the chosen depth keep their labels, as in NNI),
so NNI's archs port unchanged. :data:`AUTOFORMER_TINY` / ``_SMALL`` / ``_BASE`` are the searched
models of NNI's ``load_searched_model('autoformer-tiny' | '-small' | '-base')`` (AutoFormer's
released subnets), built at :meth:`AutoFormer.preset` sizes.

    >>> from nasx.space import search_space
    >>> ss = search_space(AutoFormer())
    >>> ss['embed_dim'].values, ss['depth'].values, len(ss)
    ([192, 216, 240], [12, 13, 14], 30)
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..space import (
    Categorical,
    ModelSpace,
    MutableConv2d,
    MutableExpression,
    MutableLayerNorm,
    MutableLinear,
    Repeat,
    model_context,
    mutable_layer,
)
from .ops import DropPath

HEAD_DIM = 64  # AutoFormer's fixed per-head width


def _searched(embed_dim: int, depth: int, mlp_ratio: list[float], heads: list[int]) -> dict:
    arch: dict[str, Any] = {"embed_dim": embed_dim, "depth": depth}
    for i, (r, h) in enumerate(zip(mlp_ratio, heads, strict=True)):
        arch[f"mlp_ratio_{i}"], arch[f"num_head_{i}"] = r, h
    return arch


# AutoFormer's released subnets as NNI gives them (the values past the depth are unused).
AUTOFORMER_TINY = _searched(
    192,
    13,
    [3.5, 3.5, 3.0, 3.5, 3.0, 3.0, 4.0, 4.0, 3.5, 4.0, 3.5, 4.0, 3.5, 3.0],
    [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 3, 3, 3],
)
"""AutoFormer-T (the paper's 5.7M parameters), in the ``preset('tiny')`` space."""
AUTOFORMER_SMALL = _searched(
    384,
    13,
    [3.0, 3.5, 3.0, 3.5, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 3.5, 4.0, 3.0],
    [6, 6, 5, 7, 5, 5, 5, 6, 6, 7, 7, 6, 7, 5],
)
"""AutoFormer-S (the paper's 22.9M parameters), in the ``preset('small')`` space."""
AUTOFORMER_BASE = _searched(
    576,
    14,
    [3.5, 3.5, 4.0, 3.5, 4.0, 3.5, 3.5, 3.0, 4.0, 4.0, 3.0, 4.0, 3.0, 3.5, 3.0, 3.0],
    [9, 9, 9, 9, 9, 10, 9, 9, 10, 9, 10, 9, 9, 10, 8, 8],
)
"""AutoFormer-B (the paper's 54M parameters), in the ``preset('base')`` space."""

PRESETS: dict[str, dict[str, tuple[Any, ...]]] = {
    "tiny": {
        "search_embed_dim": (192, 216, 240),
        "search_mlp_ratio": (3.0, 3.5, 4.0),
        "search_num_heads": (3, 4),
        "search_depth": (12, 13, 14),
    },
    "small": {
        "search_embed_dim": (320, 384, 448),
        "search_mlp_ratio": (3.0, 3.5, 4.0),
        "search_num_heads": (5, 6, 7),
        "search_depth": (12, 13, 14),
    },
    "base": {
        "search_embed_dim": (528, 576, 624),
        "search_mlp_ratio": (3.0, 3.5, 4.0),
        "search_num_heads": (8, 9, 10),
        "search_depth": (14, 15, 16),
    },
}


SEARCHED: dict[str, tuple[str, dict[str, Any]]] = {
    "autoformer-tiny": ("tiny", AUTOFORMER_TINY),
    "autoformer-small": ("small", AUTOFORMER_SMALL),
    "autoformer-base": ("base", AUTOFORMER_BASE),
}
"""NNI's ``load_searched_model`` names -> (preset, arch)."""


class RelativePosition2D(nn.Module):
    """Learned embeddings of the row and column distance between two patches (clipped to
    ``length``), summed: ``forward(n, n) -> [n, n, head_embed_dim]`` for ``n`` tokens, the first
    being the class token (index 0 of both tables, no distance).

    Example:
        >>> RelativePosition2D(8, length=4)(17, 17).shape
        torch.Size([17, 17, 8])
    """

    def __init__(self, head_embed_dim: int, length: int = 14):
        super().__init__()
        self.head_embed_dim = head_embed_dim
        self.length = length
        # rows 1 .. 2 * length + 1: distances -length .. length; row 0: the class token
        self.embeddings_table_v = nn.Parameter(torch.empty(length * 2 + 2, head_embed_dim))
        self.embeddings_table_h = nn.Parameter(torch.empty(length * 2 + 2, head_embed_dim))
        nn.init.trunc_normal_(self.embeddings_table_v, std=0.02)
        nn.init.trunc_normal_(self.embeddings_table_h, std=0.02)

    def _index(self, pos: torch.Tensor) -> torch.Tensor:
        dist = (pos[None, :] - pos[:, None]).clamp(-self.length, self.length) + self.length + 1
        return F.pad(dist, (1, 0, 1, 0))  # zeros: the class token's row and column

    def forward(self, length_q: int, length_k: int) -> torch.Tensor:
        n = length_q - 1  # patches, on a square grid
        side = int(math.sqrt(float(n)))
        ids = torch.arange(n, device=self.embeddings_table_v.device)
        rows = self._index(torch.div(ids, side, rounding_mode="floor"))
        cols = self._index(ids % side)
        return self.embeddings_table_v[rows] + self.embeddings_table_h[cols]


class RelativePositionSelfAttention(nn.Module):
    """Self-attention with ``num_heads`` heads of ``head_dim`` each (so q, k, v are
    ``head_dim * num_heads`` wide whatever ``embed_dim`` is), optionally with
    :class:`RelativePosition2D` terms on the scores and values; ``[B, N, E] -> [B, N, E]``.

    ``embed_dim`` and ``num_heads`` may be choices (the projections are ``MutableLinear``).

    Example:
        >>> attn = RelativePositionSelfAttention(32, 2, rpe=True, rpe_length=2)
        >>> attn(torch.randn(1, 5, 32)).shape
        torch.Size([1, 5, 32])
    """

    def __init__(
        self,
        embed_dim: int | Categorical,
        num_heads: int | Categorical,
        head_dim: int = HEAD_DIM,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
        qkv_bias: bool = False,
        qk_scale: float | None = None,
        rpe: bool = False,
        rpe_length: int = 14,
    ):
        super().__init__()
        if not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim <= 0:
            raise ValueError(
                f"head_dim must be a positive int (AutoFormer fixes it; heads are searched), "
                f"got {head_dim!r}"
            )
        self.head_dim = head_dim
        self.scale = qk_scale or head_dim**-0.5
        inner = num_heads * head_dim
        self.q = MutableLinear(embed_dim, inner, bias=qkv_bias)
        self.k = MutableLinear(embed_dim, inner, bias=qkv_bias)
        self.v = MutableLinear(embed_dim, inner, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = MutableLinear(inner, embed_dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.rpe = rpe
        if rpe:
            self.rel_pos_embed_k = RelativePosition2D(head_dim, rpe_length)
            self.rel_pos_embed_v = RelativePosition2D(head_dim, rpe_length)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n = x.shape[0], x.shape[1]
        # [B, H, N, D]; the head count is read off the projection's width (it may be searched)
        q = self.q(x).reshape(b, n, -1, self.head_dim).transpose(1, 2)
        k = self.k(x).reshape(b, n, -1, self.head_dim).transpose(1, 2)
        v = self.v(x).reshape(b, n, -1, self.head_dim).transpose(1, 2)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        if hasattr(self, "rel_pos_embed_k"):  # resolved when scripting
            attn = attn + torch.einsum("bhqd,qkd->bhqk", q, self.rel_pos_embed_k(n, n)) * self.scale
        attn = self.attn_drop(attn.softmax(dim=-1))
        out = attn @ v
        if hasattr(self, "rel_pos_embed_v"):
            out = out + torch.einsum("bhqk,qkd->bhqd", attn, self.rel_pos_embed_v(n, n))
        out = out.transpose(1, 2).reshape(b, n, -1)
        return self.proj_drop(self.proj(out))


class TransformerEncoderLayer(nn.Module):
    """Attention then MLP, each with a residual, LayerNorm before (``pre_norm``) or after, dropout
    and drop-path; ``**kwargs`` go to :class:`RelativePositionSelfAttention`.

    Example:
        >>> TransformerEncoderLayer(32, 2, mlp_ratio=2.0)(torch.randn(1, 5, 32)).shape
        torch.Size([1, 5, 32])
    """

    def __init__(
        self,
        embed_dim: int | Categorical,
        num_heads: int | Categorical,
        mlp_ratio: float | Categorical = 4.0,
        drop_path: float = 0.0,
        drop_rate: float = 0.0,
        pre_norm: bool = True,
        **kwargs: Any,
    ):
        super().__init__()
        self.normalize_before = pre_norm
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.attn = RelativePositionSelfAttention(embed_dim, num_heads, **kwargs)
        self.attn_layer_norm = MutableLayerNorm(embed_dim)
        self.ffn_layer_norm = MutableLayerNorm(embed_dim)
        self.activation_fn = nn.GELU()
        self.dropout = nn.Dropout(drop_rate)
        hidden = MutableExpression.to_int(embed_dim * mlp_ratio)
        self.fc1 = MutableLinear(embed_dim, hidden)
        self.fc2 = MutableLinear(hidden, embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        residual = x
        if self.normalize_before:
            x = self.attn_layer_norm(x)
        x = self.drop_path(self.dropout(self.attn(x)))
        x = residual + x
        if not self.normalize_before:
            x = self.attn_layer_norm(x)
        residual = x
        if self.normalize_before:
            x = self.ffn_layer_norm(x)
        x = self.dropout(self.activation_fn(self.fc1(x)))
        x = self.drop_path(self.dropout(self.fc2(x)))
        x = residual + x
        if not self.normalize_before:
            x = self.ffn_layer_norm(x)
        return x


class ClassToken(nn.Module):
    """Prepend a learned class token: ``[B, N, E] -> [B, N + 1, E]``.

    Example:
        >>> ClassToken(8)(torch.zeros(2, 4, 8)).shape
        torch.Size([2, 5, 8])
    """

    # one-shot: the supernet keeps the largest token and slices its leading features
    nasx_sliced_parameters = {"cls_token": "embed_dim"}

    def __init__(self, embed_dim: int):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        nn.init.trunc_normal_(self.cls_token, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)


class AbsolutePositionEmbedding(nn.Module):
    """Add a learned embedding per position: ``[B, length, E] -> [B, length, E]``.

    Example:
        >>> AbsolutePositionEmbedding(5, 8)(torch.zeros(2, 5, 8)).shape
        torch.Size([2, 5, 8])
    """

    nasx_sliced_parameters = {"pos_embed": "embed_dim"}

    def __init__(self, length: int, embed_dim: int):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, length, embed_dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.pos_embed


# Their search forms: ``embed_dim`` may be a choice (plain modules under ``model_context``).
MutableClassToken = mutable_layer(ClassToken)
MutableAbsolutePositionEmbedding = mutable_layer(AbsolutePositionEmbedding)
for _cls in (MutableClassToken, MutableAbsolutePositionEmbedding):  # picklable from here
    _cls.__module__ = __name__


class AutoFormer(ModelSpace):
    """NNI's ``AutoFormer`` (AutoFormer's ViT space; see the module doc).

    Args:
        search_embed_dim, search_mlp_ratio, search_num_heads, search_depth: the values of
            ``embed_dim``, every ``mlp_ratio_<i>``, every ``num_head_<i>`` and ``depth``.
        img_size, patch_size, in_channels: the input image and its patches (square).
        num_labels: classes of the classifier (0: no classifier, the pooled features).
        qkv_bias: bias in the q, k, v projections.
        drop_rate, attn_drop_rate, drop_path_rate: dropout after the projections and in the MLP,
            on the attention weights, and the stochastic-depth rate (growing linearly to it).
        pre_norm: LayerNorm before attention and MLP (and a final LayerNorm); else after.
        global_pooling: classify the mean of the patch tokens; else the class token.
        absolute_position: add a learned absolute position embedding.
        qk_scale: the attention scores' scale (default ``head_dim ** -0.5``).
        rpe: relative position encoding in every attention.
        in_chans, num_classes, global_pool, abs_pos: NNI 2.x's names of the arguments above.

    Example:
        >>> from nasx.space import search_space
        >>> space = AutoFormer((16, 32), (1.0, 2.0), (1, 2), (1, 2), img_size=32, patch_size=8,
        ...                    num_labels=10)
        >>> model = space.freeze({**search_space(space).default(), 'embed_dim': 32})
        >>> model(torch.randn(2, 3, 32, 32)).shape
        torch.Size([2, 10])
    """

    def __init__(
        self,
        search_embed_dim: tuple[int, ...] = (192, 216, 240),
        search_mlp_ratio: tuple[float, ...] = (3.0, 3.5, 4.0),
        search_num_heads: tuple[int, ...] = (3, 4),
        search_depth: tuple[int, ...] = (12, 13, 14),
        img_size: int = 224,
        patch_size: int = 16,
        in_channels: int = 3,
        num_labels: int = 1000,
        qkv_bias: bool = True,
        drop_rate: float = 0.0,
        attn_drop_rate: float = 0.0,
        drop_path_rate: float = 0.1,
        pre_norm: bool = True,
        global_pooling: bool = True,
        absolute_position: bool = True,
        qk_scale: float | None = None,
        rpe: bool = True,
        *,
        in_chans: int | None = None,
        num_classes: int | None = None,
        global_pool: bool | None = None,
        abs_pos: bool | None = None,
    ):
        super().__init__()
        in_channels = in_channels if in_chans is None else in_chans
        num_labels = num_labels if num_classes is None else num_classes
        global_pooling = global_pooling if global_pool is None else global_pool
        absolute_position = absolute_position if abs_pos is None else abs_pos
        if img_size % patch_size:
            raise ValueError(f"img_size {img_size} must be a multiple of patch_size {patch_size}")
        max_depth = max(search_depth)
        embed_dim = Categorical(list(search_embed_dim), label="embed_dim")
        depth = Categorical(list(search_depth), label="depth")
        ratios = [
            Categorical(list(search_mlp_ratio), label=f"mlp_ratio_{i}") for i in range(max_depth)
        ]
        heads = [
            Categorical(list(search_num_heads), label=f"num_head_{i}") for i in range(max_depth)
        ]

        self.patch_embed = MutableConv2d(
            in_channels, embed_dim, kernel_size=patch_size, stride=patch_size
        )
        self.patches_num = (img_size // patch_size) ** 2
        self.global_pooling = global_pooling
        self.cls_token = MutableClassToken(embed_dim)
        self.pos_embed = (
            MutableAbsolutePositionEmbedding(self.patches_num + 1, embed_dim)
            if absolute_position
            else nn.Identity()
        )
        # stochastic depth grows linearly from 0 to drop_path_rate over the deepest stack
        dpr = [drop_path_rate * i / max(max_depth - 1, 1) for i in range(max_depth)]
        self.blocks = Repeat(
            lambda i: TransformerEncoderLayer(
                embed_dim,
                heads[i],
                mlp_ratio=ratios[i],
                drop_path=dpr[i],
                drop_rate=drop_rate,
                pre_norm=pre_norm,
                qkv_bias=qkv_bias,
                attn_drop=attn_drop_rate,
                rpe_length=img_size // patch_size,
                qk_scale=qk_scale,
                rpe=rpe,
            ),
            depth,
        )
        self.norm = MutableLayerNorm(embed_dim) if pre_norm else nn.Identity()
        self.head = MutableLinear(embed_dim, num_labels) if num_labels > 0 else nn.Identity()

    @classmethod
    def preset(cls, name: str) -> dict[str, Any]:
        """The paper's search ranges for ``'tiny'``, ``'small'`` or ``'base'`` (NNI's ``preset``).

        >>> AutoFormer.preset('small')['search_embed_dim']
        (320, 384, 448)
        """
        key = name.lower()
        if key not in PRESETS:
            raise ValueError(f"unknown AutoFormer preset {name!r}; available: {list(PRESETS)}")
        return dict(PRESETS[key])

    @classmethod
    def load_searched_model(
        cls, name: str, pretrained: bool = False, download: bool = True, progress: bool = True
    ) -> nn.Module:
        """NNI's ``'autoformer-tiny'``, ``'autoformer-small'`` or ``'autoformer-base'``: the
        searched arch rebuilt in its :meth:`preset` space, freshly initialised (nasx hosts no
        AutoFormer weights; load a state dict with :func:`nasx.hub.pretrained.load_weights`).

        >>> model = AutoFormer.load_searched_model('autoformer-tiny')
        >>> len(model.blocks), model.head.in_features
        (13, 192)
        """
        if name not in SEARCHED:
            raise ValueError(f"unknown AutoFormer model {name!r}; available: {list(SEARCHED)}")
        if pretrained:
            raise NotImplementedError(
                f"nasx hosts no weights for {name!r}: build it with pretrained=False and load a "
                "state dict (NNI's names) with nasx.hub.pretrained.load_weights(model, path)"
            )
        preset, arch = SEARCHED[name]
        with model_context(arch):
            return cls(**cls.preset(preset))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)  # [B, patches, E], row by row
        x = self.pos_embed(self.cls_token(x))
        x = self.norm(self.blocks(x))
        x = x[:, 1:].mean(dim=1) if self.global_pooling else x[:, 0]
        return self.head(x)


AutoformerSpace = AutoFormer  # NNI 2.x's name
