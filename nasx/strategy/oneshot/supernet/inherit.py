"""Copy supernet weights into the fixed model of one arch (``space.freeze(arch)``).

The fixed model has the supernet's module tree except at choices: a LayerChoice child
``name.<value>.w`` becomes ``name.w``, a Repeat keeps its first ``depth`` blocks, and a cell op
``ops.<n>.<k>.w`` comes from the edge the arch picks, ``edges.<i>_<j>.<value>.w``.

    >>> import torch.nn as nn
    >>> from nasx.space import LayerChoice, ModelSpace
    >>> from nasx.strategy.oneshot import Supernet
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.op = LayerChoice([nn.Linear(2, 2), nn.Linear(2, 2, bias=False)], label='op')
    >>> supernet = Supernet(Net())
    >>> fixed_state_keys(supernet, {'op': 1})
    {'op.weight': 'op.1.weight'}

The map goes from fixed key to supernet key: a node may take the same op from the same input
twice (both ``dil_conv_5x5`` of input 1), and then both fixed ops start from the one shared edge.

A cell with ``merge_op='loose_end'`` concatenates every node in the supernet but only the nodes
no other node reads in the fixed model, so the layers reading it (named by the model's
``cell_readers()``, as :class:`nasx.hub.NDS` has) get the input-channel blocks of those nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import torch
import torch.nn as nn

from nasx.space import Cell, ModelSpace, SearchSpace

from .mixed import MixedInput, MixedLayer, MixedRepeat, submodule
from .mixed_cell import MixedCell
from .mixed_value import MixedSwitch, value_ops


class SupernetLike(Protocol):
    """What :func:`subnet` and :func:`inherit_weights` read of a supernet: a
    :class:`~nasx.strategy.oneshot.supernet.Supernet` is one (the protocol names it without
    importing it, since the supernet's ``freeze`` calls :func:`subnet`)."""

    @property
    def model(self) -> nn.Module: ...
    @property
    def search_space(self) -> SearchSpace: ...
    @property
    def source_space(self) -> nn.Module: ...
    def modules(self) -> Iterator[nn.Module]: ...


def _own_state(module: nn.Module) -> list[str]:
    names = [n for n, p in module._parameters.items() if p is not None]
    names += [
        n
        for n, b in module._buffers.items()
        if b is not None and n not in module._non_persistent_buffers_set
    ]
    return names


def _map(module: nn.Module, src: str, dst: str, arch: dict[str, Any], out: dict[str, str]) -> None:
    if isinstance(module, MixedSwitch):  # children named child_name(value), not str(value)
        value = arch[module.label]
        name = next(n for n, m in module.named_children() if m is module.candidate(value))
        _map(module.candidate(value), f"{src}{name}.", dst, arch, out)
        return
    if isinstance(module, MixedLayer):
        value = arch[module.label]
        _map(module.candidate(value), f"{src}{value}.", dst, arch, out)
        return
    if isinstance(module, MixedInput):
        return
    if isinstance(module, MixedRepeat):
        for i in range(arch[module.label]):
            _map(submodule(module, str(i)), f"{src}{i}.", f"{dst}{i}.", arch, out)
        return
    if isinstance(module, MixedCell):
        _map_cell(module, src, dst, arch, out)
        return
    for name in _own_state(module):
        out[dst + name] = src + name
    for name, child in module._modules.items():
        if child is not None:
            _map(child, f"{src}{name}.", f"{dst}{name}.", arch, out)


def _map_cell(
    cell: MixedCell, src: str, dst: str, arch: dict[str, Any], out: dict[str, str]
) -> None:
    """A cell's pre- and postprocessor as they are; fixed op ``ops.<n>.<k>`` from the edge
    ``edges.<i>_<j>.<value>`` that the arch's op and input choices of node ``i`` pick."""
    for name in ("preprocessor", "postprocessor"):
        _map(submodule(cell, name), f"{src}{name}.", f"{dst}{name}.", arch, out)
    for n, i in enumerate(cell.node_indices):
        for k in range(cell.num_ops_per_node):
            value, (j,) = arch[f"{cell.label}/op_{i}_{k}"], arch[f"{cell.label}/input_{i}_{k}"]
            _map(
                cell.op(i, j, value),
                f"{src}edges.{i}_{j}.{value}.",
                f"{dst}ops.{n}.{k}.",
                arch,
                out,
            )


def fixed_state_keys(supernet: SupernetLike, arch: dict[str, Any]) -> dict[str, str]:
    """``{fixed-model state key: supernet.model state key}`` for ``arch``."""
    arch = supernet.search_space.validate(arch)
    out: dict[str, str] = {}
    _map(supernet.model, "", "", arch, out)
    return out


def _loose_end_slice(
    key: str,
    weight: torch.Tensor,
    shape: torch.Size,
    supernet: SupernetLike,
    model: nn.Module,
    readers: dict[str, str],
) -> torch.Tensor | None:
    """The input-channel blocks of ``weight`` (a supernet parameter read from a cell that
    concatenates every node) that belong to the loose-end nodes of that cell in ``model``, in the
    fixed cell's concatenation order; None when ``key`` is not such a parameter."""
    layer = max((p for p in readers if key.startswith(p + ".")), key=len, default=None)
    if (
        layer is None
        or weight.dim() < 2
        or weight.shape[:1] + weight.shape[2:] != (shape[:1] + shape[2:])
    ):
        return None
    try:
        fixed_cell = model.get_submodule(readers[layer])
        super_cell = supernet.model.get_submodule(readers[layer])
    except AttributeError:  # a cell the other model does not have (another depth)
        return None
    if not isinstance(fixed_cell, Cell) or not isinstance(super_cell, MixedCell):
        return None
    block, rest = divmod(weight.shape[1], super_cell.num_nodes)
    loose = fixed_cell.output_node_indices
    if rest or block * len(loose) != shape[1]:
        return None
    index = torch.cat([torch.arange(n * block, (n + 1) * block) for n in loose])
    return weight.index_select(1, index.to(weight.device))


def inherit_weights(
    supernet: SupernetLike, model: nn.Module, arch: dict[str, Any], strict: bool = True
) -> nn.Module:
    """Load the supernet's weights for ``arch`` into ``model`` (built by ``space.freeze(arch)``
    or under ``model_context(arch)``) and return it. ``strict`` requires every key to match."""
    arch = supernet.search_space.validate(arch)
    mapping = fixed_state_keys(supernet, arch)
    src = supernet.model.state_dict()
    for name, op in value_ops(supernet.model):  # value choices: the arch's slice of the weight
        src.update({f"{name}.{k}": t for k, t in op.sliced_state(arch).items()})
    state = {dst: src[s].detach().clone() for dst, s in mapping.items()}
    own = model.state_dict()
    mismatched = [k for k in state if k in own and state[k].shape != own[k].shape]
    # Loose-end cells: the layers after a cell read only its loose-end nodes in the fixed model
    # but every node in the supernet (which cannot know the arch): take those nodes' channels.
    readers_of = getattr(model, "cell_readers", None)
    readers: dict[str, str] = readers_of() if callable(readers_of) else {}
    for k in list(mismatched):
        sliced = _loose_end_slice(k, state[k], own[k].shape, supernet, model, readers)
        if sliced is not None:
            state[k] = sliced
            mismatched.remove(k)
    if mismatched:
        loose = any(
            isinstance(m, MixedCell) and m.merge_op == "loose_end" for m in supernet.modules()
        )
        why = (
            " (its cells concatenate only their loose-end nodes, so the layers after a cell have "
            "as many input channels as the arch leaves loose ends; the space does not say which "
            "cell each such layer reads (a cell_readers() method, as nasx.hub.NDS has), so the "
            "supernet's weights cannot be inherited; train the exported arch from scratch with "
            "space.freeze(arch))"
            if loose
            else ""
        )
        k = mismatched[0]
        raise ValueError(
            f"supernet weights do not fit the fixed model of this arch{why}: {len(mismatched)} "
            f"shape mismatch(es), e.g. {k}: supernet {tuple(state[k].shape)} vs model "
            f"{tuple(own[k].shape)}"
        )
    missing, unexpected = model.load_state_dict(state, strict=False)
    if strict and (missing or unexpected):
        raise KeyError(
            f"supernet weights do not fit the fixed model of this arch: missing {missing[:5]!r}, "
            f"unexpected {unexpected[:5]!r}; was the model built from the same space and arch?"
        )
    return model


def subnet(supernet: SupernetLike, arch: dict[str, Any]) -> nn.Module:
    """``space.freeze(arch)`` with the supernet's weights for ``arch`` loaded into it."""
    space = supernet.source_space
    if not isinstance(space, ModelSpace):
        raise TypeError(
            f"rebuilding a subnet needs the supernet built from a ModelSpace, got {type(space).__name__}"
        )
    model = space.freeze(arch)
    device = next(iter(supernet.model.parameters()), torch.empty(0)).device
    return inherit_weights(supernet, model.to(device), arch)
