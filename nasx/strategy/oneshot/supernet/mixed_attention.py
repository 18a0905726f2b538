"""Weight sharing over ``MutableMultiheadAttention``'s number of heads and embedding width (NNI's
``MixedMultiHeadAttention``).

The supernet keeps one attention of the largest ``embed_dim`` E. A width ``e`` uses the leading
``e`` rows and columns of each of the query, key and value projections (``in_proj`` ``[3E, E]``:
rows ``[0, e)``, ``[E, E + e)``, ``[2E, 2E + e)``, columns ``[0, e)``) and of ``out_proj``, as
AutoFormer's weight entanglement does; heads only split the width differently, so every head
count shares the same weights. A path runs the chosen width and head count; DARTS-family
mixtures weight the outputs of every (width, heads) outcome by its probability, each zero-padded
to E (exact, as for ``MixedLayerNorm``); Proxyless gates each label with the outputs of its other
values. A searched ``kdim``/``vdim`` other than ``embed_dim`` is refused, naming it.

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
from .value_args import (
    MutableLayerLike,
    all_archs,
    check_input,
    fit_channels,
    largest,
    value_of,
)

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
    """Replaces a ``MutableMultiheadAttention`` whose ``num_heads`` and/or ``embed_dim`` are
    searched (see the module doc)."""

    size_args = ("embed_dim", "num_heads")  # gated in Proxyless
    in_arg, dim = "embed_dim", -1

    def __init__(self, source: MutableLayerLike, state: ArchState):
        super().__init__(source, state)
        searched = [k for k, leaves in self._leaves.items() if leaves and k not in self.size_args]
        archs = all_archs(self.labels())
        embed_of = [value_of(self.args["embed_dim"], arch) for arch in archs]
        # keys and values of the query's width (torch's packed in_proj_weight), as nn's own check
        fixed_kv = all(
            value_of(self.args[k], arch) in (None, e)
            for k in ("kdim", "vdim")
            for arch, e in zip(archs, embed_of, strict=True)
        )
        if searched or not fixed_kv:
            what = ", ".join(searched) or "kdim/vdim other than embed_dim"
            raise NotImplementedError(
                f"one-shot strategies share MutableMultiheadAttention's weights over embed_dim "
                f"and num_heads only; this one also searches {what}. Search it with a "
                "LayerChoice of attentions, or use a multi-trial strategy"
            )
        for arch, embed in zip(archs, embed_of, strict=True):
            heads = value_of(self.args["num_heads"], arch)
            if embed % heads:
                raise ValueError(
                    f"MutableMultiheadAttention: embed_dim {embed} is not divisible by the head "
                    f"count {heads} of the arch {arch}"
                )
        self.embed_max = largest(self.args["embed_dim"], "embed_dim", "MixedMultiheadAttention")
        # one attention's weights, at the largest width, under nn.MultiheadAttention's own names
        # (so a rebuilt subnet of that width loads them as they are); heads split them at run time
        fixed = {"embed_dim": self.embed_max, "num_heads": 1, "kdim": None, "vdim": None}
        like = _build({**self.values(archs[0]), **fixed})
        self.in_proj_weight, self.in_proj_bias = like.in_proj_weight, like.in_proj_bias
        self.bias_k, self.bias_v, self.out_proj = like.bias_k, like.bias_v, like.out_proj
        self.dropout = like.dropout
        self.add_zero_attn, self.batch_first = like.add_zero_attn, like.batch_first

    def _weights(self, e: int) -> dict[str, torch.Tensor | None]:
        """The weights of width ``e`` under nn.MultiheadAttention's state names."""
        big = self.embed_max
        w: torch.Tensor = self.in_proj_weight
        b: torch.Tensor | None = self.in_proj_bias
        if e != big:  # the leading e rows of each of q, k, v; the leading e columns
            w = torch.cat([w[i * big : i * big + e, :e] for i in range(3)])
            b = None if b is None else torch.cat([b[i * big : i * big + e] for i in range(3)])
        out_b = self.out_proj.bias
        return {
            "in_proj_weight": w,
            "in_proj_bias": b,
            "bias_k": None if self.bias_k is None else self.bias_k[..., :e],
            "bias_v": None if self.bias_v is None else self.bias_v[..., :e],
            "out_proj.weight": self.out_proj.weight[:e, :e],
            "out_proj.bias": None if out_b is None else out_b[:e],
        }

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
        for label, c in self.labels().items():
            if st.gates and label in st.gates and arch is not None:
                out = gated(out, st, label, self._alternative_of(x, arch, label, c.grid(), out))
        return out, weights

    def _alternative_of(
        self, x: Any, arch: Mapping[str, Any], label: str, grid: list[Any], out: torch.Tensor
    ) -> Callable[[int], torch.Tensor]:
        """``k -> output with label's k-th value`` (Proxyless's alternatives), its input and
        output fitted to that value's width and the chosen output's."""
        width = out.shape[-1]

        def alt(k: int) -> torch.Tensor:
            v = self.values({**arch, label: grid[k]})
            query, key, value, call = x
            fitted = tuple(fit_channels(t, v["embed_dim"], -1) for t in (query, key, value))
            return fit_channels(self.run((*fitted, call), v)[0], width, -1)

        return alt

    def run(self, x: Any, v: dict[str, Any]) -> Any:
        query, key, value, call = x
        e = int(v["embed_dim"])
        check_input("MixedMultiheadAttention", query.shape[-1], e, "features")
        w = self._weights(e)
        out_weight = w["out_proj.weight"]
        assert out_weight is not None  # nn.MultiheadAttention always has one
        if self.batch_first:  # the functional form takes [L, N, E]
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query,
            key,
            value,
            e,
            int(v["num_heads"]),
            w["in_proj_weight"],
            w["in_proj_bias"],
            w["bias_k"],
            w["bias_v"],
            self.add_zero_attn,
            self.dropout,
            out_weight,
            w["out_proj.bias"],
            training=self.training,
            **call,
        )
        return (out.transpose(0, 1) if self.batch_first else out), weights

    def run_mixture(self, x: Any) -> Any:
        # sum over the (width, heads) outcomes of p(outcome) * output, zero-padded to the largest
        # width: exact; the input is the largest width's (the layers before mix the same way)
        query, key, value, call = x
        check_input(
            "MixedMultiheadAttention (mixture)", query.shape[-1], self.embed_max, "features"
        )
        labels = self.labels()
        total: torch.Tensor | None = None
        for arch in all_archs(labels):
            p = torch.stack(
                [self._state.weight(lb)[c.grid().index(arch[lb])] for lb, c in labels.items()]
            ).prod()
            v = self.values(arch)
            e = int(v["embed_dim"])
            out = self.run((query[..., :e], key[..., :e], value[..., :e], call), v)[0]
            term = p * F.pad(out, (0, self.embed_max - e))
            total = term if total is None else total + term
        return total, None

    def sliced_state(self, arch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        """The weights of ``arch``'s width (all of them when the width is not searched)."""
        weights = self._weights(int(self.values(arch)["embed_dim"]))
        return {name: t for name, t in weights.items() if t is not None}


def _build(v: dict[str, Any]) -> nn.MultiheadAttention:
    return nn.MultiheadAttention(**{k: val for k, val in v.items() if k != "self"})
