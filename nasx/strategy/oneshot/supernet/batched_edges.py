"""Edge-batched mixture forward of a :class:`~nasx.strategy.oneshot.supernet.mixed_cell.MixedCell`.

In DARTS mixture mode a cell runs every candidate op on every edge: 14 edges x 7 ops of a few
small layers each, tens of thousands of tiny kernels per search step, so a GPU step is bound by
launching them (issue 12). Edges that leave the same states at the same time are independent
and identical in structure, so each candidate op can run on all of them at once as ONE wide
layer stack: inputs concatenated along channels ``[B, E*C, H, W]``, convolutions with E times
the groups (their weights concatenated, ``[E*C_out, C_in/g, k, k]``), batch norm over E*C
channels (per-channel statistics are per-edge statistics), pooling and ReLU unchanged. The
result is the same function with several times fewer, larger kernels.

Edges are batched in stages: first every edge leaving a cell input (they are ready at once),
then, as each node is computed, the edges leaving it. Within a stage, edges whose op modules
differ in structure (a stride-2 edge of a reduction cell next to a stride-1 one) form separate
groups. An op made of layers this module does not know (any other module class, or batch norm
with ``momentum=None``) runs edge by edge inside its group, so every space keeps working; the
hub's DARTS ops (``sep_conv``, ``dil_conv``, pools, ``skip_connect``) batch fully except
``FactorizedReduce`` on stride-2 skip edges.

Parameters and buffers stay in each edge's own modules (state dicts, export and subnet
inheritance are unchanged): weights are concatenated at every forward (one kernel each; their
gradients flow back as views), and batch-norm running statistics are written back with one
multi-tensor copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch
import torch.nn as nn
import torch.nn.functional as F

Signature = tuple[Any, ...]


def signature(module: nn.Module) -> Signature | None:
    """A hashable description of ``module``'s structure, or None when it cannot be batched.

    >>> signature(nn.Sequential(nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False)))
    ('seq', (('relu',), ('conv', 4, 4, (3, 3), (1, 1), (1, 1), (1, 1), 4, False)))
    >>> signature(nn.Linear(2, 2)) is None
    True
    """
    if type(module) is nn.Sequential or (
        isinstance(module, nn.Sequential) and type(module).forward is nn.Sequential.forward
    ):
        parts = [signature(m) for m in module]
        return None if any(p is None for p in parts) else ("seq", tuple(parts))
    if type(module) is nn.ReLU:
        return ("relu",)
    if type(module) is nn.Identity:
        return ("id",)
    if type(module) is nn.Conv2d:
        c = module
        if c.padding_mode != "zeros" or isinstance(c.padding, str):
            return None
        bias = c.bias is not None
        return ("conv", c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding) + (
            c.dilation,
            c.groups,
            bias,
        )
    if type(module) is nn.BatchNorm2d:
        bn = module
        if bn.momentum is None:  # cumulative averaging reads num_batches_tracked
            return None
        return ("bn", bn.num_features, bn.eps, bn.momentum, bn.affine, bn.track_running_stats)
    if type(module) is nn.MaxPool2d and not module.return_indices:
        mp = module
        return ("maxpool", mp.kernel_size, mp.stride, mp.padding, mp.dilation, mp.ceil_mode)
    if type(module) is nn.AvgPool2d:
        ap = module
        return ("avgpool", ap.kernel_size, ap.stride, ap.padding, ap.ceil_mode) + (
            ap.count_include_pad,
            ap.divisor_override,
        )
    return None


def run_batched(
    modules: Sequence[nn.Module], x: torch.Tensor, sig: Signature, start: int = 0
) -> torch.Tensor:
    """Apply ``modules`` (E modules of one signature) to the channel blocks of ``x``:
    ``[B, E*C_in, H, W] -> [B, E*C_out, H', W']``, block e through ``modules[e]`` (from layer
    ``start`` on, for a Sequential whose first layers were applied already)."""
    kind = sig[0]
    if kind == "seq":
        for i in range(start, len(sig[1])):
            x = run_batched([m[i] for m in modules], x, sig[1][i])  # type: ignore[index]
        return x
    if kind == "relu":
        return F.relu(x)
    if kind == "id":
        return x
    if kind in ("maxpool", "avgpool"):
        pooled: torch.Tensor = modules[0](x)  # pooling is per channel: one call covers every edge
        return pooled
    if kind == "conv":
        convs = cast(list[nn.Conv2d], list(modules))
        c0 = convs[0]
        weight = torch.cat([c.weight for c in convs])  # [E*C_out, C_in/g, k, k]
        bias = torch.cat([cast(torch.Tensor, c.bias) for c in convs]) if sig[-1] else None
        padding = cast(tuple[int, int], c0.padding)  # never a string: signature() refuses those
        return F.conv2d(x, weight, bias, c0.stride, padding, c0.dilation, c0.groups * len(convs))
    if kind == "bn":
        return _batch_norm(cast(list[nn.BatchNorm2d], list(modules)), x)
    raise ValueError(f"unknown layer kind {kind!r}")


def _batch_norm(bns: list[nn.BatchNorm2d], x: torch.Tensor) -> torch.Tensor:
    b0 = bns[0]
    momentum = cast(float, b0.momentum)  # never None: signature() refuses cumulative averaging
    weight = torch.cat([b.weight for b in bns]) if b0.affine else None
    bias = torch.cat([b.bias for b in bns]) if b0.affine else None
    if not (b0.track_running_stats and b0.running_mean is not None):
        return F.batch_norm(x, None, None, weight, bias, True, 0.0, b0.eps)
    means = [cast(torch.Tensor, b.running_mean) for b in bns]
    variances = [cast(torch.Tensor, b.running_var) for b in bns]
    running_mean, running_var = torch.cat(means), torch.cat(variances)
    out = F.batch_norm(x, running_mean, running_var, weight, bias, b0.training, momentum, b0.eps)
    if b0.training:  # the running statistics moved: back into each edge's own buffers
        c = b0.num_features
        with torch.no_grad():
            torch._foreach_copy_(
                means + variances,
                list(torch.split(running_mean, c)) + list(torch.split(running_var, c)),
            )
            counts = [cast(torch.Tensor, b.num_batches_tracked) for b in bns]
            torch._foreach_add_(counts, 1)
    return out


class EdgeGroup:
    """Edges ``[(target node i, source state j)]`` of one stage whose ops share a structure."""

    def __init__(self, edges: list[tuple[int, int]], signatures: list[Signature | None]):
        self.edges = edges
        self.signatures = signatures  # per op value (None: runs edge by edge)


def plan_groups(cell: Any, edges: list[tuple[int, int]]) -> list[EdgeGroup]:
    """Split one stage's ``edges`` into groups of identical op structure (order kept)."""
    groups: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
    sigs: dict[tuple[Any, ...], list[Signature | None]] = {}
    for i, j in edges:
        per_op = [signature(cell.op(i, j, v)) for v in cell.values]
        # unbatchable ops still group by identity of their class, so their edges stay together
        key = tuple(
            s if s is not None else ("edge-by-edge", type(cell.op(i, j, v)).__name__)
            for s, v in zip(per_op, cell.values, strict=True)
        )
        groups.setdefault(key, []).append((i, j))
        sigs[key] = per_op
    return [EdgeGroup(g, sigs[k]) for k, g in groups.items()]


def batched_mixture(cell: Any, states: list[torch.Tensor], state: Any) -> list[torch.Tensor]:
    """The mixture-mode node values of ``cell`` (a MixedCell) from its preprocessed inputs,
    ``states`` (each ``[B, C, H, W]``): the states list with every node appended."""
    plans = cell.batch_plans
    if plans is None:
        plans = cell.batch_plans = _plan_stages(cell)
    nodes = list(cell.node_indices)
    partial: dict[int, list[torch.Tensor]] = {i: [] for i in nodes}
    for stage_source, groups in plans:
        if stage_source is not None:  # this stage's edges leave node `stage_source`
            terms = partial.pop(stage_source)
            node = terms[0]
            for t in terms[1:]:
                node = node + t
            states.append(node)
        for group in groups:
            for (i, _), out in zip(
                group.edges, _run_group(cell, group, states, state), strict=True
            ):
                partial[i].append(out)
    return states


def _plan_stages(cell: Any) -> list[tuple[int | None, list[EdgeGroup]]]:
    """``[(node computed before the stage, groups of the edges leaving it)]``; the first stage
    holds the edges leaving the cell inputs; the last one only computes the last node."""
    nodes = list(cell.node_indices)
    first = [(i, j) for j in range(cell.num_predecessors) for i in nodes]
    stages: list[tuple[int | None, list[EdgeGroup]]] = [(None, plan_groups(cell, first))]
    for n in nodes:
        leaving = [(i, n) for i in nodes if i > n]
        stages.append((n, plan_groups(cell, leaving) if leaving else []))
    return stages


def _run_group(
    cell: Any, group: EdgeGroup, states: list[torch.Tensor], state: Any
) -> list[torch.Tensor]:
    """Mixture outputs ``[B, C, H', W']`` of the group's edges, in order."""
    edges, e = group.edges, len(group.edges)
    x = torch.cat([states[j] for _, j in edges], 1)  # [B, E*C, H, W]
    relu_x: torch.Tensor | None = None
    weights = torch.stack([state.weight(cell.edge_key(i, j)) for i, j in edges])  # [E, n_ops]
    mixed: torch.Tensor | None = None
    for k, value in enumerate(cell.values):
        if cell._skip[k]:
            continue
        sig = group.signatures[k]
        modules = [cell.op(i, j, value) for i, j in edges]
        if sig is None:  # edge by edge, then side by side
            out = torch.cat([m(states[j]) for m, (_, j) in zip(modules, edges, strict=True)], 1)
        elif sig[0] == "seq" and sig[1] and sig[1][0] == ("relu",):
            if relu_x is None:
                relu_x = F.relu(x)  # shared by every op that starts with a ReLU
            out = run_batched(modules, relu_x, sig, start=1)
        else:
            out = run_batched(modules, x, sig)
        b, _, h, w = out.shape
        term = out.view(b, e, -1, h, w)  # [B, E, C, H', W']
        w_k = weights[:, k].to(term.dtype).view(1, e, 1, 1, 1)
        mixed = term * w_k if mixed is None else torch.addcmul(mixed, term, w_k)
    if mixed is None:  # every op is 'none': zeros of the right shape, as MixedLayer does
        zero = cell.op(*edges[0], cell.values[0])
        return [zero(states[j]) for _, j in edges]
    return list(mixed.unbind(1))
