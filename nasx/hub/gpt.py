"""An elastic decoder-only transformer (GPT-style) language-model space: width, depth, heads and
MLP ratio per layer, searched with value-choice weight sharing (AutoFormer's scheme, on text).

Tokens (``[B, T]`` ids) go through a token and a learned position embedding ``embed_dim`` wide,
``depth`` pre-norm blocks (causal self-attention with ``num_head_<i>`` heads of ``head_dim``
each, so heads set the width of q, k and v; an MLP ``mlp_ratio_<i> * embed_dim`` wide with a
tanh-GELU, as GPT-2), a final LayerNorm and a linear head to ``vocab_size`` logits
(``[B, T, vocab_size]``). Every width is a leading slice of the largest one in a one-shot
supernet (``MutableLinear`` / ``MutableLayerNorm``, and ``nasx_sliced_parameters`` for the
embeddings), so a subnet is the rebuilt model with the supernet's leading weights; the layers
past ``depth`` are dropped, as in OFA and Flextron's elastic depth.

Labels: ``embed_dim``, ``depth``, ``num_head_<i>`` and ``mlp_ratio_<i>`` for every layer ``i`` of
the deepest stack (layers past the chosen depth keep their labels, as in AutoFormer).

    >>> from nasx.space import search_space
    >>> space = GPTSpace(vocab_size=256, block_size=16, search_embed_dim=(32, 64),
    ...                  search_depth=(1, 2), search_num_heads=(1, 2), search_mlp_ratio=(2.0, 4.0),
    ...                  head_dim=16)
    >>> sorted(search_space(space))
    ['depth', 'embed_dim', 'mlp_ratio_0', 'mlp_ratio_1', 'num_head_0', 'num_head_1']
    >>> model = space.freeze({**search_space(space).default(), 'embed_dim': 64, 'depth': 2})
    >>> model(torch.zeros(3, 16, dtype=torch.long)).shape
    torch.Size([3, 16, 256])
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..space import (
    Categorical,
    ModelSpace,
    MutableExpression,
    MutableLayerNorm,
    MutableLinear,
    Repeat,
    mutable_layer,
)

__all__ = ["GPTSpace", "gpt_arch", "largest_arch", "smallest_arch"]


class TokenEmbedding(nn.Module):
    """Token ids to vectors: ``[B, T] -> [B, T, embed_dim]`` (a raw weight, so the supernet can
    slice its width).

    Example:
        >>> TokenEmbedding(10, 4)(torch.tensor([[1, 2]])).shape
        torch.Size([1, 2, 4])
    """

    nasx_sliced_parameters = {"weight": "embed_dim"}

    def __init__(self, vocab_size: int, embed_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab_size, embed_dim) * 0.02)  # [V, E]

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return F.embedding(idx, self.weight)


class PositionEmbedding(nn.Module):
    """Add a learned vector per position to ``[B, T, E]`` (``T <= block_size``).

    Example:
        >>> PositionEmbedding(8, 4)(torch.zeros(2, 5, 4)).shape
        torch.Size([2, 5, 4])
    """

    nasx_sliced_parameters = {"weight": "embed_dim"}

    def __init__(self, block_size: int, embed_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(block_size, embed_dim) * 0.02)  # [T_max, E]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] > self.weight.shape[0]:
            raise ValueError(
                f"sequence of {x.shape[1]} tokens is longer than block_size={self.weight.shape[0]}"
            )
        return x + self.weight[: x.shape[1]]


MutableTokenEmbedding = mutable_layer(TokenEmbedding)
MutablePositionEmbedding = mutable_layer(PositionEmbedding)
for _cls in (MutableTokenEmbedding, MutablePositionEmbedding):  # picklable from here
    _cls.__module__ = __name__


class CausalSelfAttention(nn.Module):
    """Causal self-attention with ``num_heads`` heads of ``head_dim`` (q, k, v are
    ``num_heads * head_dim`` wide whatever ``embed_dim`` is): ``[B, T, E] -> [B, T, E]``.

    Example:
        >>> CausalSelfAttention(8, 2, head_dim=4)(torch.randn(1, 3, 8)).shape
        torch.Size([1, 3, 8])
    """

    def __init__(self, embed_dim: int | Categorical, num_heads: int | Categorical, head_dim: int):
        super().__init__()
        self.head_dim = head_dim
        inner = num_heads * head_dim
        self.q = MutableLinear(embed_dim, inner)
        self.k = MutableLinear(embed_dim, inner)
        self.v = MutableLinear(embed_dim, inner)
        self.proj = MutableLinear(inner, embed_dim)

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        """The heads' outputs before the projection: ``[B, T, E] -> [B, H, T, head_dim]``."""
        q, k, v = self._split(self.q(x)), self._split(self.k(x)), self._split(self.v(x))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        """One projection into heads: ``[B, T, H * D] -> [B, H, T, D]`` (written out, not as a
        loop over the three projections, so that TorchScript compiles it)."""
        return x.reshape(x.shape[0], x.shape[1], -1, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.heads(x)  # [B, H, T, D]
        return self.proj(out.transpose(1, 2).flatten(2))  # [B, T, H * D] -> [B, T, E]


class Block(nn.Module):
    """A pre-norm GPT block: ``x + attn(ln1(x))``, then ``x + fc2(gelu(fc1(ln2(x))))``.

    Example:
        >>> Block(8, 2, 2.0, head_dim=4)(torch.randn(1, 3, 8)).shape
        torch.Size([1, 3, 8])
    """

    def __init__(
        self,
        embed_dim: int | Categorical,
        num_heads: int | Categorical,
        mlp_ratio: float | Categorical,
        head_dim: int,
    ):
        super().__init__()
        self.ln1 = MutableLayerNorm(embed_dim)
        self.attn = CausalSelfAttention(embed_dim, num_heads, head_dim)
        self.ln2 = MutableLayerNorm(embed_dim)
        hidden = MutableExpression.to_int(embed_dim * mlp_ratio)
        self.fc1 = MutableLinear(embed_dim, hidden)
        self.fc2 = MutableLinear(hidden, embed_dim)

    def mlp_hidden(self, x: torch.Tensor) -> torch.Tensor:
        """The MLP's neurons after the activation: ``[B, T, E] -> [B, T, hidden]``."""
        return F.gelu(self.fc1(x), approximate="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.mlp_hidden(self.ln2(x)))


class GPTSpace(ModelSpace):
    """The elastic GPT space (see the module doc).

    Args:
        vocab_size: tokens of the vocabulary (256 for :mod:`nasx.datasets.text`'s bytes).
        block_size: the longest sequence (positions of the position embedding).
        search_embed_dim, search_depth, search_num_heads, search_mlp_ratio: the values of
            ``embed_dim``, ``depth``, every ``num_head_<i>`` and every ``mlp_ratio_<i>``.
        head_dim: the fixed width of one head.
    """

    def __init__(
        self,
        vocab_size: int = 256,
        block_size: int = 128,
        search_embed_dim: tuple[int, ...] = (128, 192, 256),
        search_depth: tuple[int, ...] = (2, 3, 4),
        search_num_heads: tuple[int, ...] = (2, 3, 4),
        search_mlp_ratio: tuple[float, ...] = (2.0, 3.0, 4.0),
        head_dim: int = 64,
    ):
        super().__init__()
        for name, values in (
            ("search_embed_dim", search_embed_dim),
            ("search_depth", search_depth),
            ("search_num_heads", search_num_heads),
            ("search_mlp_ratio", search_mlp_ratio),
        ):
            if not values or any(v <= 0 for v in values):
                raise ValueError(
                    f"{name} must be a non-empty tuple of positive values, got {values!r}"
                )
        self.vocab_size, self.block_size, self.head_dim = vocab_size, block_size, head_dim
        max_depth = max(search_depth)
        embed_dim = Categorical(list(search_embed_dim), label="embed_dim")
        depth = Categorical(list(search_depth), label="depth")
        heads = [
            Categorical(list(search_num_heads), label=f"num_head_{i}") for i in range(max_depth)
        ]
        ratios = [
            Categorical(list(search_mlp_ratio), label=f"mlp_ratio_{i}") for i in range(max_depth)
        ]
        self.tok_emb = MutableTokenEmbedding(vocab_size, embed_dim)
        self.pos_emb = MutablePositionEmbedding(block_size, embed_dim)
        self.blocks = Repeat(lambda i: Block(embed_dim, heads[i], ratios[i], head_dim), depth)
        self.ln_f = MutableLayerNorm(embed_dim)
        self.head = MutableLinear(embed_dim, vocab_size, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.pos_emb(self.tok_emb(idx))  # [B, T, E]
        return self.head(self.ln_f(self.blocks(x)))  # [B, T, vocab]


def gpt_arch(embed_dim: int, heads: list[int], mlp_ratios: list[float]) -> dict[str, Any]:
    """The arch dict of a model ``len(heads)`` layers deep (labels past it are not needed when
    the space's deepest stack is that deep; :func:`largest_arch` fills them in otherwise).

    Example:
        >>> gpt_arch(64, [2, 1], [4.0, 2.0])
        {'embed_dim': 64, 'depth': 2, 'num_head_0': 2, 'mlp_ratio_0': 4.0, 'num_head_1': 1, 'mlp_ratio_1': 2.0}
    """
    if len(heads) != len(mlp_ratios):
        raise ValueError(f"one head count and one MLP ratio per layer: {heads} vs {mlp_ratios}")
    arch: dict[str, Any] = {"embed_dim": embed_dim, "depth": len(heads)}
    for i, (h, r) in enumerate(zip(heads, mlp_ratios, strict=True)):
        arch[f"num_head_{i}"], arch[f"mlp_ratio_{i}"] = h, r
    return arch


def _extreme_arch(search_space: Any, pick: Any) -> dict[str, Any]:
    return {label: pick(choice.values) for label, choice in search_space.items()}


def largest_arch(search_space: Any) -> dict[str, Any]:
    """Every choice at its largest value: the sandwich rule's top (OFA, Flextron).

    Example:
        >>> from nasx.space import search_space
        >>> space = GPTSpace(block_size=4, search_embed_dim=(8, 16), search_depth=(1, 2), head_dim=4)
        >>> largest_arch(search_space(space))['embed_dim'], smallest_arch(search_space(space))['depth']
        (16, 1)
    """
    return _extreme_arch(search_space, max)


def smallest_arch(search_space: Any) -> dict[str, Any]:
    """Every choice at its smallest value: the sandwich rule's bottom."""
    return _extreme_arch(search_space, min)
