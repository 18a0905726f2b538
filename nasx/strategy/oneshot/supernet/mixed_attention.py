"""Weight sharing over ``MutableMultiheadAttention``'s number of heads (NNI's
``MixedMultiHeadAttention`` for searched heads).

With ``embed_dim`` fixed, every head count uses the same projections (``in_proj`` ``[3E, E]`` and
``out_proj`` ``[E, E]``): heads only split the embedding differently. So the supernet keeps one
attention's weights, a path runs them with the chosen head count, DARTS-family mixtures weight
the outputs of every head count by its probability (exact: the output shape never changes), and
Proxyless gates the head label with the other head counts' outputs. A searched ``embed_dim`` (or
``kdim``/``vdim``, AutoFormer's sliced projections) is refused, naming the argument.

    >>> import torch
    >>> from nasx.space import Categorical, ModelSpace, MutableMultiheadAttention
    >>> from nasx.strategy.oneshot import Supernet
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.attn = MutableMultiheadAttention(8, Categorical([1, 2], label='heads'))
    ...     def forward(self, x):
    ...         return self.attn(x, x, x)[0]
    >>> net = Supernet(Net(), mode='path', alphas=False)
    >>> net.use_arch({'heads': 2})
    >>> net(torch.randn(1, 4, 8)).shape
    torch.Size([1, 4, 8])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .mixed_value import MixedValueOp
from .state import ArchState, gated
from .value_args import MutableLayerLike

# forward(query, key, value, ...) arguments after the three tensors, with nn.MultiheadAttention's
# defaults; the mixed layer takes the same call.
_CALL_DEFAULTS = {
    "key_padding_mask": None,
    "need_weights": True,
    "attn_mask": None,
    "average_attn_weights": True,
    "is_causal": False,
}


class MixedMultiheadAttention(MixedValueOp):
    """Replaces a ``MutableMultiheadAttention`` whose ``num_heads`` is searched (see module doc)."""

    size_args = ("num_heads",)  # gated in Proxyless (heads change the output, not its shape)
    in_arg, dim = "embed_dim", -1

    def __init__(self, source: MutableLayerLike, state: ArchState):
        super().__init__(source, state)
        searched = [k for k, leaves in self._leaves.items() if leaves and k != "num_heads"]
        # keys and values of the query's width (torch's packed in_proj_weight), as nn's own check
        fixed_kv = all(self.args[k] in (None, self.args["embed_dim"]) for k in ("kdim", "vdim"))
        if searched or not fixed_kv:
            what = ", ".join(searched) or "kdim/vdim other than embed_dim"
            raise NotImplementedError(
                f"one-shot strategies share MutableMultiheadAttention's weights over num_heads "
                f"only; this one also searches {what}. Search the width with a LayerChoice of "
                "attentions, or use a multi-trial strategy"
            )
        # one attention's weights, shared by every head count, under nn.MultiheadAttention's own
        # names (so a rebuilt subnet loads them as they are)
        like = _build(self.values(self._max_arch_of("num_heads")))
        self.in_proj_weight, self.in_proj_bias = like.in_proj_weight, like.in_proj_bias
        self.bias_k, self.bias_v, self.out_proj = like.bias_k, like.bias_v, like.out_proj
        self.embed_dim, self.dropout = like.embed_dim, like.dropout
        self.add_zero_attn, self.batch_first = like.add_zero_attn, like.batch_first
        embed = self.embed_dim
        for _, heads in self._outcomes["num_heads"]:
            if embed % heads:
                raise ValueError(
                    f"MutableMultiheadAttention: embed_dim {embed} is not divisible by the head "
                    f"count {heads} that label(s) {sorted(self._leaves['num_heads'])} allow"
                )

    def _max_arch_of(self, arg: str) -> dict[str, Any]:
        return {label: c.grid()[-1] for label, c in self._leaves[arg].items()}

    def forward(  # type: ignore[override]  # attention's call: (query, key, value, ...)
        self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *args: Any, **kwargs: Any
    ) -> Any:
        call = dict(zip(_CALL_DEFAULTS, args))
        call = {**_CALL_DEFAULTS, **call, **kwargs}
        x = (query, key, value, call)
        if not self._state.path_mode:
            return self.run_mixture(x)
        out, weights = self.run(x, self.values())
        st, arch = self._state, self._state.arch
        for label, c in self._leaves["num_heads"].items():
            if st.gates and label in st.gates and arch is not None:
                out = gated(out, st, label, self._other_heads(x, arch, label, c.grid()))
        return out, weights

    def _other_heads(
        self, x: Any, arch: Mapping[str, Any], label: str, grid: list[Any]
    ) -> Callable[[int], torch.Tensor]:
        """``k -> output with label's k-th value`` (Proxyless's alternatives; same shape)."""
        return lambda k: self.run(x, self.values({**arch, label: grid[k]}))[0]

    def run(self, x: Any, v: dict[str, Any]) -> Any:
        query, key, value, call = x
        a = self
        if a.batch_first:  # the functional form takes [L, N, E]
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query,
            key,
            value,
            a.embed_dim,
            int(v["num_heads"]),
            a.in_proj_weight,
            a.in_proj_bias,
            a.bias_k,
            a.bias_v,
            a.add_zero_attn,
            a.dropout,
            a.out_proj.weight,
            a.out_proj.bias,
            training=self.training,
            **call,
        )
        return (out.transpose(0, 1) if a.batch_first else out), weights

    def run_mixture(self, x: Any) -> Any:
        # sum over the head counts of p(count) * output: exact, the output shape never changes
        labels = list(self._leaves["num_heads"])
        weights = [self._state.weight(label) for label in labels]
        total: torch.Tensor | None = None
        for index, heads in self._outcomes["num_heads"]:
            p = weights[0][index[labels[0]]]
            for w, label in zip(weights[1:], labels[1:], strict=True):
                p = p * w[index[label]]
            out = self.run(x, {"num_heads": heads})[0]
            total = out * p if total is None else total + out * p
        return total, None

    def sliced_state(self, arch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        # every head count uses all of the weights (found by name, as this layer holds them)
        return {}


def _build(v: dict[str, Any]) -> nn.MultiheadAttention:
    return nn.MultiheadAttention(**{k: val for k, val in v.items() if k != "self"})
