"""Minitron's pruning on a Hugging Face ``LlamaForCausalLM``, in place of its own modules: the
pruned child is a ``LlamaForCausalLM`` with a smaller ``LlamaConfig`` (``save_pretrained`` writes
it, ``from_pretrained`` loads it), so nothing converts on the way in or out.

Why the HF modules and not a Llama-shaped space: a Llama checkpoint holds one width per kind
(``intermediate_size``, ``num_key_value_heads`` for every layer), so the candidates a user can
save are uniform anyway; pruning the HF modules keeps every Llama detail the checkpoint relies on
(RMSNorm, rotary positions and their scaling, grouped-query attention, tied or untied
embeddings, biases) exactly as ``transformers`` computes it, and the child *is* the saved model.

What is pruned (the four sizes of a Llama arch, :data:`LLAMA_SIZES`):

- ``num_hidden_layers``: whole decoder layers (the kept ones in their order);
- ``intermediate_size``: MLP neurons, the rows of ``gate_proj`` and ``up_proj`` and the columns
  of ``down_proj`` together;
- ``num_key_value_heads``: attention heads in whole key-value groups (a group's ``k``/``v`` head
  and the query heads that read it), so the query-per-kv ratio stays what the parent's is;
- ``hidden_size``: embedding channels, in every matrix touching the residual stream and in every
  RMSNorm weight (``head_dim`` is kept: the heads' width does not follow ``hidden_size``).

Importance is :mod:`nasx.lm.prune`'s, on the Llama's modules: channels from every RMSNorm's
output, a kv group from the norms of its query heads' outputs (``o_proj``'s input), neurons from
``down_proj``'s input, layers from ``1 - cos(input, output)``.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from .hf import UnsupportedModelError
from .prune import Importance, PrunedCandidate, _keep, rank_candidates, select
from .targets import LatencyFn, Targets, measure_lm_latency
from .training import Batch

__all__ = [
    "LLAMA_SIZES",
    "LlamaLogits",
    "UnsupportedModelError",
    "llama_arch",
    "llama_importance",
    "llama_param_count",
    "llama_prune_search",
    "llama_prune_space",
    "prune_llama",
]

LLAMA_SIZES = ("hidden_size", "num_hidden_layers", "num_key_value_heads", "intermediate_size")

# the transformers classes a LlamaForCausalLM is built of (everything else is named in an error)
_LLAMA_MODULES = {
    "LlamaForCausalLM",
    "LlamaModel",
    "LlamaDecoderLayer",
    "LlamaAttention",
    "LlamaSdpaAttention",  # transformers < 4.48: the attention's kernels were subclasses
    "LlamaFlashAttention2",
    "LlamaMLP",
    "LlamaRMSNorm",
    "LlamaRotaryEmbedding",
}
_TORCH_MODULES = (nn.Linear, nn.Embedding, nn.ModuleList, nn.SiLU, nn.GELU, nn.Identity)


def _check_llama(model: nn.Module) -> Any:
    """``model``'s config, or UnsupportedModelError naming the first module not understood."""
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    odd = next(
        (
            f"{name or '<root>'} ({type(m).__name__})"
            for name, m in model.named_modules()
            if type(m).__name__ not in _LLAMA_MODULES
            and not isinstance(m, _TORCH_MODULES)
            and not type(m).__module__.startswith("transformers.activations")
        ),
        None,
    )
    if model_type != "llama" or odd is not None:
        why = f"model_type {model_type!r}" if model_type != "llama" else "not a Llama module"
        raise UnsupportedModelError(
            f"{type(model).__name__}: module {odd or '<root> (' + type(model).__name__ + ')'} "
            f"is not understood ({why}); nasx.lm.llama prunes transformers' LlamaForCausalLM "
            "(GPT-2 goes through nasx.lm.hf)"
        )
    return config


def llama_arch(model: nn.Module) -> dict[str, int]:
    """The four prunable sizes (:data:`LLAMA_SIZES`) of a ``LlamaForCausalLM``.

    Example:
        >>> import transformers
        >>> config = transformers.LlamaConfig(vocab_size=16, hidden_size=8, intermediate_size=16,
        ...     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
        >>> llama_arch(transformers.LlamaForCausalLM(config))
        {'hidden_size': 8, 'num_hidden_layers': 2, 'num_key_value_heads': 2, 'intermediate_size': 16}
    """
    config = _check_llama(model)
    return {size: int(getattr(config, size)) for size in LLAMA_SIZES}


def _head_dim(config: Any) -> int:
    return int(
        getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    )


class LlamaLogits(nn.Module):
    """``[B, T]`` token ids to ``[B, T, vocab]`` logits of a ``LlamaForCausalLM`` (the interface
    of :mod:`nasx.lm.training`'s loops); its ``llama`` is trained in place.

    Example:
        >>> import transformers
        >>> config = transformers.LlamaConfig(vocab_size=16, hidden_size=8, intermediate_size=16,
        ...     num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)
        >>> LlamaLogits(transformers.LlamaForCausalLM(config))(torch.zeros(1, 3, dtype=torch.long)).shape
        torch.Size([1, 3, 16])
    """

    def __init__(self, llama: nn.Module):
        super().__init__()
        self.llama = llama

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.llama(input_ids=idx, use_cache=False).logits


@torch.no_grad()
def llama_importance(model: nn.Module, loader: Iterable[Batch], batches: int = 8) -> Importance:
    """Minitron's activation importance of a ``LlamaForCausalLM`` over ``batches`` calibration
    batches; ``heads[i]`` scores layer ``i``'s key-value groups (``[num_key_value_heads]``).

    Example:
        >>> import transformers
        >>> config = transformers.LlamaConfig(vocab_size=16, hidden_size=8, intermediate_size=16,
        ...     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
        >>> imp = llama_importance(transformers.LlamaForCausalLM(config),
        ...                        [(torch.randint(0, 16, (2, 5)), None)])
        >>> imp.embed.shape, imp.heads[0].shape, imp.neurons[1].shape, imp.layers.shape
        (torch.Size([8]), torch.Size([2]), torch.Size([16]), torch.Size([2]))
    """
    config = _check_llama(model)
    layers_ = list(model.get_submodule("model.layers").children())[: config.num_hidden_layers]
    d, kv = _head_dim(config), config.num_key_value_heads
    per_group = config.num_attention_heads // kv
    device = next(model.parameters()).device
    embed = torch.zeros(config.hidden_size, device=device)
    heads = [torch.zeros(kv, device=device) for _ in layers_]
    neurons = [torch.zeros(config.intermediate_size, device=device) for _ in layers_]
    layers = torch.zeros(len(layers_), device=device)

    def on_norm(_m: nn.Module, _inp: Any, out: torch.Tensor) -> None:
        embed.add_(out.float().abs().mean(dim=(0, 1)))  # [B, T, E] -> [E]

    def on_o_proj(i: int) -> Any:
        def hook(_m: nn.Module, inp: tuple[torch.Tensor, ...]) -> None:
            b, t = inp[0].shape[:2]
            per_head = inp[0].float().reshape(b, t, kv, per_group, d)  # query heads by kv group
            heads[i].add_(per_head.norm(dim=-1).mean(dim=(0, 1)).sum(dim=-1))  # [KV]

        return hook

    def on_down(i: int) -> Any:
        def hook(_m: nn.Module, inp: tuple[torch.Tensor, ...]) -> None:
            neurons[i].add_(inp[0].float().abs().mean(dim=(0, 1)))  # [B, T, I] -> [I]

        return hook

    def on_layer(i: int) -> Any:
        def hook(_m: nn.Module, args: tuple, kwargs: dict, out: Any) -> None:
            x = args[0] if args else kwargs["hidden_states"]
            y = out[0] if isinstance(out, tuple) else out
            layers[i] += (1 - F.cosine_similarity(x.float(), y.float(), dim=-1)).mean()

        return hook

    norms = [m for m in model.modules() if type(m).__name__ == "LlamaRMSNorm"]
    handles = [n.register_forward_hook(on_norm) for n in norms]
    for i, layer in enumerate(layers_):
        o_proj, down_proj = (
            layer.get_submodule("self_attn.o_proj"),
            layer.get_submodule("mlp.down_proj"),
        )
        handles.append(o_proj.register_forward_pre_hook(on_o_proj(i)))
        handles.append(down_proj.register_forward_pre_hook(on_down(i)))
        handles.append(layer.register_forward_hook(on_layer(i), with_kwargs=True))
    was_training = model.training
    model.eval()
    try:
        seen = 0
        for x, _ in itertools.islice(loader, batches):
            model(input_ids=x.to(device), use_cache=False)
            seen += 1
        if seen == 0:
            raise ValueError("the calibration loader yields no batch")
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return Importance(embed, heads, neurons, layers)


def _check_arch(parent_arch: dict[str, int], arch: dict[str, Any]) -> dict[str, int]:
    unknown = sorted(set(arch) - set(LLAMA_SIZES))
    if unknown:
        raise ValueError(f"unknown Llama sizes {unknown}; the arch's keys are {list(LLAMA_SIZES)}")
    full = {**parent_arch, **arch}
    for size in LLAMA_SIZES:
        value = full[size]
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 0 < value <= parent_arch[size]
        ):
            raise ValueError(
                f"{size} must be an int from 1 to the parent's {parent_arch[size]}, got {value!r}"
            )
    return full


@torch.no_grad()
def prune_llama(parent: nn.Module, arch: dict[str, Any], imp: Importance) -> nn.Module:
    """A ``LlamaForCausalLM`` of ``arch``'s sizes (``hidden_size``, ``num_hidden_layers``,
    ``num_key_value_heads``, ``intermediate_size``; missing ones the parent's) holding the
    parent's most important layers, kv groups, neurons and channels.

    Example:
        >>> import transformers
        >>> config = transformers.LlamaConfig(vocab_size=16, hidden_size=8, intermediate_size=16,
        ...     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
        >>> parent = transformers.LlamaForCausalLM(config)
        >>> imp = llama_importance(parent, [(torch.randint(0, 16, (2, 5)), None)])
        >>> child = prune_llama(parent, {'num_key_value_heads': 1, 'intermediate_size': 8}, imp)
        >>> child.config.num_attention_heads, child.config.intermediate_size
        (2, 8)
    """
    config = _check_llama(parent)
    sizes = _check_arch(llama_arch(parent), arch)
    d, per_group = _head_dim(config), config.num_attention_heads // config.num_key_value_heads
    child_config = copy.deepcopy(config)
    for size, value in sizes.items():
        setattr(child_config, size, value)
    child_config.num_attention_heads = sizes["num_key_value_heads"] * per_group
    child_config.head_dim = d  # explicit: hidden_size // heads no longer gives it
    child = type(parent)(child_config).to(next(parent.parameters()).dtype)

    ch = _keep(imp.embed, sizes["hidden_size"], "embedding channels")
    kept_layers = _keep(imp.layers, sizes["num_hidden_layers"], "layers").tolist()
    src = {k: v.detach() for k, v in parent.state_dict().items()}
    every = slice(None)

    def cut(name: str, rows: Any, cols: Any = None) -> torch.Tensor:
        t = src[name][rows]
        return t if cols is None else t[:, cols]

    sd = {
        "model.embed_tokens.weight": cut("model.embed_tokens.weight", every, ch),  # [V, E]
        "model.norm.weight": cut("model.norm.weight", ch),
    }
    if "lm_head.weight" in src:
        sd["lm_head.weight"] = cut("lm_head.weight", every, ch)  # [V, E] (tied: the same cut)
    for j, i in enumerate(kept_layers):
        s, t = f"model.layers.{i}.", f"model.layers.{j}."
        groups = _keep(imp.heads[i], sizes["num_key_value_heads"], f"kv groups of layer {i}")
        kv_rows = (groups[:, None] * d + torch.arange(d)).flatten()  # [KV' * D]
        q_heads = (groups[:, None] * per_group + torch.arange(per_group)).flatten()
        q_rows = (q_heads[:, None] * d + torch.arange(d)).flatten()  # [H' * D]
        neurons = _keep(imp.neurons[i], sizes["intermediate_size"], f"neurons of layer {i}")
        plan = {  # parameter -> (rows, columns) kept; Linear weights are [out, in]
            "input_layernorm.weight": (ch, None),
            "post_attention_layernorm.weight": (ch, None),
            "self_attn.q_proj.weight": (q_rows, ch),
            "self_attn.q_proj.bias": (q_rows, None),
            "self_attn.k_proj.weight": (kv_rows, ch),
            "self_attn.k_proj.bias": (kv_rows, None),
            "self_attn.v_proj.weight": (kv_rows, ch),
            "self_attn.v_proj.bias": (kv_rows, None),
            "self_attn.o_proj.weight": (ch, q_rows),
            "self_attn.o_proj.bias": (ch, None),
            "mlp.gate_proj.weight": (neurons, ch),
            "mlp.gate_proj.bias": (neurons, None),
            "mlp.up_proj.weight": (neurons, ch),
            "mlp.up_proj.bias": (neurons, None),
            "mlp.down_proj.weight": (ch, neurons),
            "mlp.down_proj.bias": (ch, None),
        }
        for name, (r, c) in plan.items():
            if s + name in src:  # biases only where the config has them
                sd[t + name] = cut(s + name, r, c)
    missing, unexpected = child.load_state_dict(
        {k: v.contiguous() for k, v in sd.items()}, strict=False
    )
    tied = getattr(child_config, "tie_word_embeddings", False)
    missing = [k for k in missing if not (tied and k == "lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(
            f"Llama state dict mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    return child.to(next(parent.parameters()).device).train(parent.training)


def llama_prune_space(
    parent: nn.Module,
    hidden_sizes: Sequence[int] | None = None,
    depths: Sequence[int] | None = None,
    kv_heads: Sequence[int] | None = None,
    intermediate_sizes: Sequence[int] | None = None,
) -> list[dict[str, int]]:
    """Every combination of the given sizes (each default: the parent's, then 3/4 and 1/2 of
    it) that fits in the parent, sorted by parameter count.

    Example:
        >>> import transformers
        >>> config = transformers.LlamaConfig(vocab_size=16, hidden_size=8, intermediate_size=16,
        ...     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
        >>> archs = llama_prune_space(transformers.LlamaForCausalLM(config), depths=(1, 2))
        >>> len(archs), archs[0]
        (36, {'hidden_size': 4, 'num_hidden_layers': 1, 'num_key_value_heads': 1, 'intermediate_size': 8})
    """
    p = llama_arch(parent)

    def default(size: str, given: Sequence[int] | None) -> list[int]:
        values = given if given is not None else {p[size], p[size] * 3 // 4, p[size] // 2}
        bad = [v for v in values if not 0 < v <= p[size]]
        if bad:
            raise ValueError(f"{size} values {bad} are not from 1 to the parent's {p[size]}")
        return sorted(set(values))

    grid = [
        default(size, given)
        for size, given in zip(
            LLAMA_SIZES, (hidden_sizes, depths, kv_heads, intermediate_sizes), strict=True
        )
    ]
    archs = [dict(zip(LLAMA_SIZES, values, strict=True)) for values in itertools.product(*grid)]
    return sorted(archs, key=lambda a: llama_param_count(parent, a))


def llama_param_count(parent: nn.Module, arch: dict[str, Any]) -> int:
    """Parameters of ``parent`` pruned to ``arch`` (counted on the meta device: nothing built).

    Example:
        >>> import transformers
        >>> config = transformers.LlamaConfig(vocab_size=16, hidden_size=8, intermediate_size=16,
        ...     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
        >>> parent = transformers.LlamaForCausalLM(config)
        >>> llama_param_count(parent, {}) == sum(p.numel() for p in parent.parameters())
        True
    """
    config = copy.deepcopy(_check_llama(parent))
    per_group = config.num_attention_heads // config.num_key_value_heads
    head_dim = _head_dim(config)
    for size, value in _check_arch(llama_arch(parent), arch).items():
        setattr(config, size, value)
    config.num_attention_heads = config.num_key_value_heads * per_group
    config.head_dim = head_dim
    with torch.device("meta"):
        return sum(p.numel() for p in type(parent)(config).parameters())


def llama_prune_search(
    parent: nn.Module,
    calibration: Iterable[Batch],
    train: Iterable[Batch],
    validation: Sequence[Batch],
    target_params: float | None = None,
    tolerance: float = 0.1,
    max_candidates: int = 4,
    distill_steps: int = 50,
    lr: float = 1e-3,
    calibration_batches: int = 8,
    val_batches: int | None = None,
    *,
    target_latency_ms: float | None = None,
    target_memory_bytes: int | None = None,
    context: int | None = None,
    batch_size: int = 1,
    latency: LatencyFn | None = None,
    archs: Sequence[dict[str, int]] | None = None,
) -> list[PrunedCandidate]:
    """:func:`~nasx.lm.prune_search` on a ``LlamaForCausalLM``: importance on ``calibration``,
    the ``archs`` (default :func:`llama_prune_space`'s) that meet the targets, each pruned by
    :func:`prune_llama` and distilled from the parent's logits, ranked by validation loss after
    distillation (best first). Each candidate's ``model`` is a ``LlamaForCausalLM``, ready for
    ``save_pretrained``. Targets, ``context`` (default ``max_position_embeddings``; set it to
    the length you serve at), ``batch_size`` and ``latency`` are as in ``prune_search``; the KV
    cache counts ``num_key_value_heads * head_dim`` per layer for keys and for values.

    Example:
        >>> import transformers
        >>> config = transformers.LlamaConfig(vocab_size=16, hidden_size=8, intermediate_size=16,
        ...     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
        >>> parent = transformers.LlamaForCausalLM(config)
        >>> data = [(torch.randint(0, 16, (2, 6)), torch.randint(0, 16, (2, 6)))]
        >>> best = llama_prune_search(parent, data, data, data, target_memory_bytes=2000,
        ...                           context=8, max_candidates=2, distill_steps=2)[0]
        >>> best.memory_bytes <= 2000, type(best.model).__name__
        (True, 'LlamaForCausalLM')
    """
    config = _check_llama(parent)
    context = config.max_position_embeddings if context is None else context
    targets = Targets(
        target_params, target_latency_ms, target_memory_bytes, tolerance, context, batch_size
    )
    imp = llama_importance(parent, calibration, calibration_batches)
    kv_width = _head_dim(config)
    sized = [
        (
            dict(a),
            llama_param_count(parent, a),
            [a.get("num_key_value_heads", config.num_key_value_heads) * kv_width]
            * a.get("num_hidden_layers", config.num_hidden_layers),
        )
        for a in (archs if archs is not None else llama_prune_space(parent))
    ]
    vocab = config.vocab_size
    measure = latency or (lambda m: measure_lm_latency(m, vocab, context, batch_size))
    return rank_candidates(
        parent,
        select(sized, targets, next(parent.parameters()).element_size()),
        lambda arch: prune_llama(parent, arch, imp),
        targets,
        measure,
        train,
        validation,
        max_candidates,
        distill_steps,
        lr,
        val_batches,
        logits=LlamaLogits,
    )
