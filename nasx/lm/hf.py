"""Hugging Face ``transformers`` causal LMs in and out of the GPT space (``pip install "nasx[lm]"``).

:func:`from_hf` turns a ``GPT2LMHeadModel`` into the equal model of :class:`~nasx.hub.gpt.GPTSpace`
(same logits), which :mod:`nasx.lm.prune` prunes and distils; :func:`to_hf` turns a (pruned)
model back into a ``GPT2LMHeadModel`` with a smaller config, which ``save_pretrained`` writes and
``from_pretrained`` loads. Other architectures get :class:`UnsupportedModelError` naming the first
module not understood. A ``LlamaForCausalLM`` is pruned as it is, without conversion, by
:mod:`nasx.lm.llama` (its RMSNorm, rotary positions and gated MLP have no counterpart in the GPT
space).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from .._errors import NasxError
from .._optional import optional_import
from ..hub.gpt import GPTSpace, gpt_arch
from .prune import _blocks, model_arch

__all__ = ["UnsupportedModelError", "from_hf", "to_hf"]

_GPT2_ACTIVATIONS = ("gelu_new", "gelu_pytorch_tanh")  # the tanh GELU of the GPT space


class UnsupportedModelError(NasxError, ValueError):
    """A Hugging Face model whose architecture nasx.lm does not understand (the module named)."""


def _unsupported(model: nn.Module, why: str) -> UnsupportedModelError:
    known = {"GPT2Block", "GPT2Attention", "GPT2MLP", "GPT2Model", "GPT2LMHeadModel"}
    odd = next(
        (
            f"{name or '<root>'} ({type(m).__name__})"
            for name, m in model.named_modules()
            if type(m).__name__ not in known and type(m).__module__.startswith("transformers")
        ),
        type(model).__name__,
    )
    return UnsupportedModelError(
        f"{type(model).__name__}: module {odd} is not understood ({why}); nasx.lm converts "
        "GPT-2 causal LMs (GPT2LMHeadModel) into the GPT space; a LlamaForCausalLM is pruned "
        "directly by nasx.lm.llama"
    )


def from_hf(model: nn.Module) -> tuple[GPTSpace, nn.Module]:
    """The GPT space of ``model``'s size and the equal model in it (weights copied).

    ``model`` is a ``transformers`` ``GPT2LMHeadModel``; the space's only values are the model's,
    so pass its ``head_dim`` and ``block_size`` to a wider :class:`GPTSpace` to search below it.

    Example:
        >>> import transformers
        >>> config = transformers.GPT2Config(vocab_size=16, n_positions=4, n_embd=8, n_layer=1,
        ...                                  n_head=2, bos_token_id=None, eos_token_id=None)
        >>> hf = transformers.GPT2LMHeadModel(config).eval()
        >>> space, ours = from_hf(hf)
        >>> x = torch.tensor([[1, 2, 3]])
        >>> torch.allclose(ours.eval()(x), hf(x).logits, atol=1e-5)
        True
    """
    config = getattr(model, "config", None)
    if getattr(config, "model_type", None) != "gpt2":
        raise _unsupported(model, f"model_type {getattr(config, 'model_type', None)!r}")
    assert config is not None
    if config.activation_function not in _GPT2_ACTIVATIONS:
        raise _unsupported(model, f"activation {config.activation_function!r}")
    if getattr(config, "scale_attn_by_inverse_layer_idx", False) or not getattr(
        config, "scale_attn_weights", True
    ):
        raise _unsupported(model, "attention scaling other than 1/sqrt(head_dim)")
    e, h, n = config.n_embd, config.n_head, config.n_layer
    hidden = config.n_inner or 4 * e
    space = GPTSpace(
        vocab_size=config.vocab_size,
        block_size=config.n_positions,
        search_embed_dim=(e,),
        search_depth=(n,),
        search_num_heads=(h,),
        search_mlp_ratio=(hidden / e,),
        head_dim=e // h,
    )
    ours = space.freeze(gpt_arch(e, [h] * n, [hidden / e] * n))
    if any(
        abs(m.eps - config.layer_norm_epsilon) > 0
        for m in ours.modules()
        if isinstance(m, nn.LayerNorm)
    ):
        for m in ours.modules():
            if isinstance(m, nn.LayerNorm):
                m.eps = config.layer_norm_epsilon
    sd = {k: v.detach() for k, v in model.state_dict().items()}
    with torch.no_grad():
        own = ours.state_dict()
        own["tok_emb.weight"].copy_(sd["transformer.wte.weight"])
        own["pos_emb.weight"].copy_(sd["transformer.wpe.weight"])
        own["ln_f.weight"].copy_(sd["transformer.ln_f.weight"])
        own["ln_f.bias"].copy_(sd["transformer.ln_f.bias"])
        own["head.weight"].copy_(sd.get("lm_head.weight", sd["transformer.wte.weight"]))
        for i in range(n):
            src, dst = f"transformer.h.{i}.", f"blocks.{i}."
            for a, b in (("ln_1", "ln1"), ("ln_2", "ln2")):
                own[dst + b + ".weight"].copy_(sd[src + a + ".weight"])
                own[dst + b + ".bias"].copy_(sd[src + a + ".bias"])
            # GPT-2's Conv1D holds [in, out]: transpose to Linear's [out, in]; c_attn is q|k|v
            qkv_w = sd[src + "attn.c_attn.weight"].T.split(e)
            qkv_b = sd[src + "attn.c_attn.bias"].split(e)
            for name, w, b_ in zip("qkv", qkv_w, qkv_b, strict=True):
                own[f"{dst}attn.{name}.weight"].copy_(w)
                own[f"{dst}attn.{name}.bias"].copy_(b_)
            own[dst + "attn.proj.weight"].copy_(sd[src + "attn.c_proj.weight"].T)
            own[dst + "attn.proj.bias"].copy_(sd[src + "attn.c_proj.bias"])
            own[dst + "fc1.weight"].copy_(sd[src + "mlp.c_fc.weight"].T)
            own[dst + "fc1.bias"].copy_(sd[src + "mlp.c_fc.bias"])
            own[dst + "fc2.weight"].copy_(sd[src + "mlp.c_proj.weight"].T)
            own[dst + "fc2.bias"].copy_(sd[src + "mlp.c_proj.bias"])
    return space, ours


def to_hf(model: nn.Module, family: str = "gpt2") -> Any:
    """A ``transformers`` ``GPT2LMHeadModel`` equal to ``model`` (a GPT-space model), with the
    smaller config of its arch and untied input and output embeddings (a pruned and distilled
    head is no longer the token embedding).

    GPT-2 has one head count and one MLP width for all layers and q, k, v as wide as the
    embedding: a model that differs gets a ValueError naming the layer.

    Example:
        >>> from nasx.hub.gpt import GPTSpace, gpt_arch
        >>> space = GPTSpace(vocab_size=16, block_size=4, search_embed_dim=(8,), search_depth=(1,),
        ...                  search_num_heads=(2,), search_mlp_ratio=(2.0,), head_dim=4)
        >>> to_hf(space.freeze(gpt_arch(8, [2], [2.0]))).config.n_inner
        16
    """
    if family != "gpt2":
        raise ValueError(f"family must be 'gpt2' (the one nasx.lm writes), got {family!r}")
    transformers = optional_import("transformers", "lm", "saving a transformers model")
    arch = model_arch(model)
    e, n = arch["embed_dim"], arch["depth"]
    blocks = _blocks(model)
    d = blocks[0].attn.head_dim
    h, hidden = arch["num_head_0"], blocks[0].fc1.out_features
    for i, block in enumerate(blocks):
        if arch[f"num_head_{i}"] != h or block.fc1.out_features != hidden:
            raise ValueError(
                f"layer {i} has {arch[f'num_head_{i}']} heads and {block.fc1.out_features} MLP "
                f"neurons, layer 0 {h} and {hidden}: GPT-2 needs them equal in every layer"
            )
    if h * d != e:
        raise ValueError(
            f"{h} heads of {d} make q, k, v {h * d} wide but the embedding is {e}: GPT-2 needs "
            "heads * head_dim == embed_dim (prune heads and embedding channels together)"
        )
    ln_eps = next(m.eps for m in model.modules() if isinstance(m, nn.LayerNorm))
    config = transformers.GPT2Config(
        vocab_size=model.get_parameter("tok_emb.weight").shape[0],
        n_positions=model.get_parameter("pos_emb.weight").shape[0],
        n_embd=e,
        n_layer=n,
        n_head=h,
        n_inner=hidden,
        activation_function="gelu_new",
        layer_norm_epsilon=ln_eps,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
    )
    hf = transformers.GPT2LMHeadModel(config)
    own = {k: v.detach() for k, v in model.state_dict().items()}
    sd = {
        "transformer.wte.weight": own["tok_emb.weight"],
        "transformer.wpe.weight": own["pos_emb.weight"],
        "transformer.ln_f.weight": own["ln_f.weight"],
        "transformer.ln_f.bias": own["ln_f.bias"],
        "lm_head.weight": own["head.weight"],
    }
    for i in range(n):
        src, dst = f"blocks.{i}.", f"transformer.h.{i}."
        for a, b in (("ln_1", "ln1"), ("ln_2", "ln2")):
            sd[dst + a + ".weight"], sd[dst + a + ".bias"] = (
                own[src + b + ".weight"],
                own[src + b + ".bias"],
            )
        sd[dst + "attn.c_attn.weight"] = torch.cat([own[f"{src}attn.{x}.weight"] for x in "qkv"]).T
        sd[dst + "attn.c_attn.bias"] = torch.cat([own[f"{src}attn.{x}.bias"] for x in "qkv"])
        sd[dst + "attn.c_proj.weight"] = own[src + "attn.proj.weight"].T
        sd[dst + "attn.c_proj.bias"] = own[src + "attn.proj.bias"]
        sd[dst + "mlp.c_fc.weight"] = own[src + "fc1.weight"].T
        sd[dst + "mlp.c_fc.bias"] = own[src + "fc1.bias"]
        sd[dst + "mlp.c_proj.weight"] = own[src + "fc2.weight"].T
        sd[dst + "mlp.c_proj.bias"] = own[src + "fc2.bias"]
    missing, unexpected = hf.load_state_dict(
        {k: v.contiguous() for k, v in sd.items()}, strict=False
    )
    missing = [k for k in missing if not k.endswith("attn.bias") and not k.endswith("masked_bias")]
    if missing or unexpected:
        raise RuntimeError(
            f"GPT-2 state dict mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    return hf.eval()
