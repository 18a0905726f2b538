"""Minitron's recipe on a trained parent of the GPT space: activation importance on a calibration
set, candidates pruned to a parameter target, short distillation, candidates ranked after it.

Importance (Muralidharan et al. 2024, "Compact Language Models via Pruning and Knowledge
Distillation"), each summed over the calibration tokens:

- **embedding channels** ``[E]``: mean ``|LayerNorm output|`` per channel, summed over every
  LayerNorm (``ln1``, ``ln2`` of each block, ``ln_f``);
- **heads** ``[H]`` per layer: the L2 norm of each head's output (the attention projection's
  input, ``head_dim`` wide per head), mean over tokens;
- **MLP neurons** ``[hidden]`` per layer: mean ``|activation|`` after the GELU;
- **layers** ``[L]``: block importance, ``1 - cos(input, output)`` of the block, mean over tokens
  (a block that changes its input little matters little).

:func:`prune` keeps the most important of each (in their original order) for a smaller arch of
the same space; :func:`prune_search` does the whole recipe and returns the ranked candidates.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..hub.gpt import Block, GPTSpace, gpt_arch
from .targets import LatencyFn, Targets, measure_lm_latency, memory_bytes
from .training import Batch, distill, evaluate_loss

__all__ = ["Importance", "PrunedCandidate", "importance", "prune", "prune_search", "prune_space"]

log = logging.getLogger("nasx.lm")


@dataclass
class Importance:
    """Activation importance of a parent (see the module doc); larger is more important."""

    embed: torch.Tensor  # [E]
    heads: list[torch.Tensor]  # per layer: [H_l]
    neurons: list[torch.Tensor]  # per layer: [hidden_l]
    layers: torch.Tensor  # [L]


@dataclass
class PrunedCandidate:
    """One pruned child: its arch, parameters, the model, validation loss before and after
    distillation (``None`` until measured), latency (ms, when a latency target was given) and
    memory (bytes of weights plus KV cache at the search's context and batch)."""

    arch: dict[str, Any]
    params: int
    model: nn.Module = field(repr=False)
    loss_pruned: float | None = None
    loss_distilled: float | None = None
    latency_ms: float | None = None
    memory_bytes: int | None = None


def _blocks(model: nn.Module) -> list[Block]:
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, nn.Module) or not all(
        isinstance(b, Block) for b in blocks.children()
    ):
        raise TypeError(
            f"{type(model).__name__} is not a model of nasx.hub.gpt.GPTSpace (no .blocks of "
            "Block layers); Hugging Face models go through nasx.lm.hf"
        )
    return list(cast(Iterable[Block], blocks.children()))


def model_arch(model: nn.Module) -> dict[str, Any]:
    """The arch of a model built from :class:`~nasx.hub.gpt.GPTSpace`, read off its layers.

    Example:
        >>> space = GPTSpace(block_size=4, search_embed_dim=(8,), search_depth=(2,),
        ...                  search_num_heads=(2,), search_mlp_ratio=(2.0,), head_dim=4)
        >>> model_arch(space.freeze(gpt_arch(8, [2, 2], [2.0, 2.0])))['num_head_1']
        2
    """
    blocks = _blocks(model)
    embed = model.get_parameter("tok_emb.weight").shape[1]
    heads = [b.attn.q.out_features // b.attn.head_dim for b in blocks]
    ratios = [b.fc1.out_features / embed for b in blocks]
    return gpt_arch(embed, heads, ratios)


@torch.no_grad()
def importance(model: nn.Module, loader: Iterable[Batch], batches: int = 8) -> Importance:
    """Minitron's activation importance of ``model`` over ``batches`` calibration batches.

    Example:
        >>> space = GPTSpace(block_size=8, search_embed_dim=(8,), search_depth=(2,),
        ...                  search_num_heads=(2,), search_mlp_ratio=(2.0,), head_dim=4)
        >>> data = [(torch.randint(0, 256, (2, 8)), None)]
        >>> imp = importance(space.freeze(gpt_arch(8, [2, 2], [2.0, 2.0])), data)
        >>> imp.embed.shape, imp.heads[0].shape, imp.neurons[1].shape, imp.layers.shape
        (torch.Size([8]), torch.Size([2]), torch.Size([16]), torch.Size([2]))
    """
    blocks = _blocks(model)
    embed_dim = model.get_parameter("tok_emb.weight").shape[1]
    device = next(model.parameters()).device
    embed = torch.zeros(embed_dim, device=device)
    heads = [torch.zeros(b.attn.q.out_features // b.attn.head_dim, device=device) for b in blocks]
    neurons = [torch.zeros(b.fc1.out_features, device=device) for b in blocks]
    layers = torch.zeros(len(blocks), device=device)
    norms = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]

    def on_norm(_m: nn.Module, _inp: Any, out: torch.Tensor) -> None:
        embed.add_(out.abs().mean(dim=(0, 1)))  # [B, T, E] -> [E]

    def on_proj(i: int, d: int) -> Any:
        def hook(_m: nn.Module, inp: tuple[torch.Tensor, ...]) -> None:
            b, t = inp[0].shape[:2]
            per_head = inp[0].reshape(b, t, -1, d)  # [B, T, H, D]
            heads[i].add_(per_head.norm(dim=-1).mean(dim=(0, 1)))

        return hook

    def on_fc2(i: int) -> Any:
        def hook(_m: nn.Module, inp: tuple[torch.Tensor, ...]) -> None:
            neurons[i].add_(inp[0].abs().mean(dim=(0, 1)))  # [B, T, hidden] -> [hidden]

        return hook

    def on_block(i: int) -> Any:
        def hook(_m: nn.Module, inp: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
            cos = F.cosine_similarity(inp[0], out, dim=-1)  # [B, T]
            layers[i] += (1 - cos).mean()

        return hook

    handles = [n.register_forward_hook(on_norm) for n in norms]
    for i, b in enumerate(blocks):
        handles.append(b.attn.proj.register_forward_pre_hook(on_proj(i, b.attn.head_dim)))
        handles.append(b.fc2.register_forward_pre_hook(on_fc2(i)))
        handles.append(b.register_forward_hook(on_block(i)))
    was_training = model.training
    model.eval()
    try:
        seen = 0
        for x, _ in itertools.islice(loader, batches):
            model(x.to(device))
            seen += 1
        if seen == 0:
            raise ValueError("the calibration loader yields no batch")
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return Importance(embed, heads, neurons, layers)


def _keep(scores: torch.Tensor, k: int, what: str) -> torch.Tensor:
    """Indices of the ``k`` largest ``scores``, in their original order."""
    if not 0 < k <= len(scores):
        raise ValueError(f"cannot keep {k} {what} of {len(scores)}")
    return scores.topk(k).indices.sort().values


@torch.no_grad()
def prune(parent: nn.Module, space: GPTSpace, arch: dict[str, Any], imp: Importance) -> nn.Module:
    """``space.freeze(arch)`` holding the parent's most important channels, heads, neurons and
    layers (``imp``): every width of ``arch`` must be at most the parent's.

    Example:
        >>> space = GPTSpace(block_size=8, search_embed_dim=(4, 8), search_depth=(1, 2),
        ...                  search_num_heads=(1, 2), search_mlp_ratio=(1.0, 2.0), head_dim=4)
        >>> parent = space.freeze(gpt_arch(8, [2, 2], [2.0, 2.0]))
        >>> imp = importance(parent, [(torch.randint(0, 256, (2, 8)), None)])
        >>> child = prune(parent, space, gpt_arch(4, [1], [1.0]), imp)
        >>> child(torch.zeros(1, 8, dtype=torch.long)).shape
        torch.Size([1, 8, 256])
    """
    parent_blocks = _blocks(parent)
    child = space.freeze(complete_arch(space, arch))
    child_blocks = _blocks(child)
    ch = _keep(imp.embed, child.get_parameter("tok_emb.weight").shape[1], "embedding channels")
    kept_layers = _keep(imp.layers, len(child_blocks), "layers").tolist()

    def take(name: str, rows: Any, cols: Any = None, src_name: str | None = None) -> None:
        """child's ``name`` <- parent's (``src_name``) rows ``rows`` and columns ``cols``."""
        src = parent.get_parameter(src_name or name)[rows]
        src = src if cols is None else src[:, cols]
        dst = child.get_parameter(name)
        dst.copy_(src.to(dst.dtype))

    every = slice(None)
    take("tok_emb.weight", every, ch)  # [V, E]
    take("pos_emb.weight", every, ch)  # [T, E]
    take("ln_f.weight", ch)
    take("ln_f.bias", ch)
    take("head.weight", every, ch)  # [V, E]
    for j, (dst, i) in enumerate(zip(child_blocks, kept_layers, strict=True)):
        d = parent_blocks[i].attn.head_dim
        head_ids = _keep(imp.heads[i], dst.attn.q.out_features // d, f"heads of layer {i}")
        rows = (head_ids[:, None] * d + torch.arange(d)).flatten()  # the kept heads' q/k/v rows
        neurons = _keep(imp.neurons[i], dst.fc1.out_features, f"neurons of layer {i}")
        cut = {  # parameter -> (rows, columns) kept; weights are [out, in]
            "ln1.weight": (ch, None),
            "ln1.bias": (ch, None),
            "ln2.weight": (ch, None),
            "ln2.bias": (ch, None),
            **{f"attn.{n}.weight": (rows, ch) for n in "qkv"},
            **{f"attn.{n}.bias": (rows, None) for n in "qkv"},
            "attn.proj.weight": (ch, rows),
            "attn.proj.bias": (ch, None),
            "fc1.weight": (neurons, ch),
            "fc1.bias": (neurons, None),
            "fc2.weight": (ch, neurons),
            "fc2.bias": (ch, None),
        }
        for name, (r, c) in cut.items():
            take(f"blocks.{j}.{name}", r, c, src_name=f"blocks.{i}.{name}")
    return child.to(next(parent.parameters()).device)


def complete_arch(space: GPTSpace, arch: dict[str, Any]) -> dict[str, Any]:
    """``arch`` with the labels of the layers past its depth (unused) at their first value, so
    that ``space.freeze`` takes an arch written for its depth only.

    Example:
        >>> space = GPTSpace(block_size=4, search_depth=(1, 2), head_dim=4)
        >>> complete_arch(space, gpt_arch(128, [2], [2.0]))['num_head_1']
        2
    """
    full = dict(arch)
    for label, choice in _space_values(space).items():
        full.setdefault(label, choice.values[0])
    return full


def _param_count(space: GPTSpace, arch: dict[str, Any]) -> int:
    with torch.device("meta"):  # no memory, no initialisation: a count only
        return sum(p.numel() for p in space.freeze(complete_arch(space, arch)).parameters())


def prune_space(parent: nn.Module, space: GPTSpace) -> list[dict[str, Any]]:
    """The archs of ``space`` a parent can be pruned to: Minitron's uniform candidates (one head
    count and MLP ratio for every layer), every width at most the parent's, sorted by size.

    Example:
        >>> space = GPTSpace(block_size=4, search_embed_dim=(4, 8), search_depth=(1, 2),
        ...                  search_num_heads=(1, 2), search_mlp_ratio=(1.0, 2.0), head_dim=4)
        >>> parent = space.freeze(gpt_arch(8, [2, 2], [1.0, 1.0]))
        >>> len(prune_space(parent, space))  # MLP widths e * r at most the parent's 8: 3 (e, r) x 2 x 2
        12
    """
    p = model_arch(parent)
    depth = p["depth"]
    ss = {label: list(choice.values) for label, choice in _space_values(space).items()}
    archs = []
    for e, d, h, r in itertools.product(
        ss["embed_dim"], ss["depth"], ss["num_head_0"], ss["mlp_ratio_0"]
    ):
        fits = e <= p["embed_dim"] and d <= depth
        fits = fits and all(h <= p[f"num_head_{i}"] for i in range(depth))
        fits = fits and all(
            int(e * r) <= int(p["embed_dim"] * p[f"mlp_ratio_{i}"]) for i in range(depth)
        )
        if fits:
            archs.append(complete_arch(space, gpt_arch(e, [h] * d, [r] * d)))
    return sorted(archs, key=lambda a: _param_count(space, a))


def _space_values(space: GPTSpace) -> dict[str, Any]:
    from ..space import search_space

    return dict(search_space(space).items())


def prune_search(
    parent: nn.Module,
    space: GPTSpace,
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
) -> list[PrunedCandidate]:
    """Minitron's search: importance on ``calibration``, the :func:`prune_space` archs that meet
    the targets (the ``max_candidates`` preferred ones), each pruned and distilled from the
    parent's logits for ``distill_steps`` on ``train``, ranked by validation loss after
    distillation (best first).

    Targets (at least one; every one given must hold, see :class:`~nasx.lm.targets.Targets`):
    ``target_params`` (within ``tolerance``; candidates nearest to it first),
    ``target_latency_ms`` (at most; ``latency(model)`` in ms, default
    :func:`~nasx.lm.targets.measure_lm_latency` on this machine, one thread) and
    ``target_memory_bytes`` (at most: weights plus KV cache, computed). Latency and memory are
    taken at ``batch_size`` sequences of ``context`` tokens (default the space's
    ``block_size``). Without a parameter target the largest candidates that meet the others
    come first.

    Raises ValueError naming the target when it is not a positive number, when no arch of the
    space meets the parameter and memory targets (naming the nearest sizes there are), and
    when none that does meets the latency target (naming the fastest measured).
    """
    if target_params is not None and not (
        isinstance(target_params, int | float)
        and not isinstance(target_params, bool)
        and target_params > 0
    ):
        raise ValueError(f"target_params must be positive, got {target_params!r}")
    context = space.block_size if context is None else context
    targets = Targets(
        target_params, target_latency_ms, target_memory_bytes, tolerance, context, batch_size
    )
    if context > space.block_size:
        raise ValueError(
            f"context must be at most the space's block_size={space.block_size}, got {context}"
        )
    imp = importance(parent, calibration, calibration_batches)
    sized = [
        (
            a,
            _param_count(space, a),
            [a[f"num_head_{i}"] * space.head_dim for i in range(a["depth"])],
        )
        for a in prune_space(parent, space)
    ]
    measure = latency or (lambda m: measure_lm_latency(m, space.vocab_size, context, batch_size))
    return rank_candidates(
        parent,
        select(sized, targets, _bytes_per_value(parent)),
        lambda arch: prune(parent, space, arch, imp),
        targets,
        measure,
        train,
        validation,
        max_candidates,
        distill_steps,
        lr,
        val_batches,
    )


def _bytes_per_value(model: nn.Module) -> int:
    return next(model.parameters()).element_size()


Sized = tuple[dict[str, Any], int, list[int]]  # (arch, parameters, kv width of every layer)


def select(sized: Sequence[Sized], targets: Targets, bytes_per_value: int) -> list[Sized]:
    """The archs that meet ``targets``' parameter and memory targets, preferred ones first.

    Example:
        >>> archs = [({'a': 1}, 100, [4]), ({'a': 2}, 200, [8])]
        >>> [a for a, _, _ in select(archs, Targets(target_params=190), 4)]
        [{'a': 2}]
    """
    ok = [
        s
        for s in sized
        if targets.params_ok(s[1]) and targets.memory_ok(s[1], s[2], bytes_per_value)
    ]
    if not ok:
        wanted = []
        if targets.target_params is not None:
            wanted.append(f"within {targets.tolerance:.0%} of {targets.target_params} parameters")
        if targets.target_memory_bytes is not None:
            wanted.append(
                f"at most {targets.target_memory_bytes} bytes of weights and KV cache (context "
                f"{targets.context}, batch {targets.batch_size})"
            )
        ref = targets.target_params
        near = sorted(
            sized,
            key=lambda s: abs(s[1] - ref) if ref is not None else s[1],
        )[:3]
        described = [
            f"{n} params, "
            f"{memory_bytes(n, kv, targets.context, targets.batch_size, bytes_per_value)} bytes"
            for _, n, kv in near
        ]
        raise ValueError(
            f"no arch of the space is {' and '.join(wanted)}; the nearest have {described}: "
            "change the targets, tolerance or the space's values"
        )
    return sorted(ok, key=lambda s: targets.preference(s[1]))


def rank_candidates(
    parent: nn.Module,
    ordered: Sequence[Sized],
    build: Any,
    targets: Targets,
    latency: LatencyFn,
    train: Iterable[Batch],
    validation: Sequence[Batch],
    max_candidates: int,
    distill_steps: int,
    lr: float,
    val_batches: int | None,
    logits: Any = None,
) -> list[PrunedCandidate]:
    """Build (``build(arch)``) the ``ordered`` archs until ``max_candidates`` meet the latency
    target, distil each from ``parent``, and rank them by validation loss after it (best first).
    ``logits(model)`` is the model as the training loops see it (ids to logits; default itself).
    """
    as_logits = logits or (lambda m: m)
    teacher = as_logits(parent)
    bpv = _bytes_per_value(parent)
    candidates: list[PrunedCandidate] = []
    measured: list[float] = []
    for arch, n, kv in ordered:
        if len(candidates) >= max_candidates:
            break
        model = build(arch)
        ms = None
        if targets.target_latency_ms is not None:
            ms = float(latency(as_logits(model)))
            measured.append(ms)
            if ms > targets.target_latency_ms:
                log.info("candidate %s: %.3f ms, over the latency target", arch, ms)
                continue
        student = as_logits(model)
        cand = PrunedCandidate(
            arch,
            n,
            model,
            loss_pruned=evaluate_loss(student, validation, val_batches),
            latency_ms=ms,
            memory_bytes=memory_bytes(n, kv, targets.context, targets.batch_size, bpv),
        )
        distill(student, teacher, train, distill_steps, lr)
        cand.loss_distilled = evaluate_loss(student, validation, val_batches)
        log.info(
            "candidate %s (%d params): %.4f pruned, %.4f distilled",
            arch,
            n,
            cand.loss_pruned,
            cand.loss_distilled,
        )
        candidates.append(cand)
    if not candidates:
        raise ValueError(
            f"no candidate meets target_latency_ms={targets.target_latency_ms}: the "
            f"{len(measured)} measured take {min(measured):.3f} ms or more (batch "
            f"{targets.batch_size} x {targets.context} tokens); raise the target or add smaller "
            "values to the space"
        )
    return sorted(candidates, key=lambda c: cast(float, c.loss_distilled))
