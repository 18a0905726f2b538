"""Famous building blocks of search spaces, where NNI has them (``nni.nas.hub.pytorch.modules``).

``AutoActivation`` and ``NasBench101Cell`` live in :mod:`nasx.space` and are the same objects
here; :class:`NasBench201Cell` is NNI's general NAS-Bench-201 cell (any operations, any widths).

    >>> import torch, torch.nn as nn
    >>> from nasx.space import model_context, search_space
    >>> ops = {'conv': lambda c_in, c_out: nn.Conv2d(c_in, c_out, 3, padding=1),
    ...        'skip': lambda c_in, c_out: nn.Identity()}
    >>> cell = NasBench201Cell(ops, 4, 4, num_tensors=3, label='cell')
    >>> list(search_space(cell)), cell.label
    (['cell/0_1', 'cell/0_2', 'cell/1_2'], 'cell')
    >>> cell(torch.randn(1, 4, 8, 8)).shape
    torch.Size([1, 4, 8, 8])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
import torch.nn as nn

from ..space import AutoActivation, LayerChoice, NasBench101Cell, label_scope
from ..space.labels import current_path

__all__ = ["AutoActivation", "NasBench101Cell", "NasBench201Cell"]

OpFactory = Callable[[int, int], nn.Module]


class NasBench201Cell(nn.Module):
    """NNI's NAS-Bench-201 cell: a dense DAG of ``num_tensors`` nodes (the input included) where
    every edge ``j -> i`` (``j < i``) applies one of ``op_candidates`` and node ``i`` sums them.

    Args:
        op_candidates: ``{name: factory(in_features, out_features) -> module}``, or a list of
            factories (named ``'0'``, ``'1'``, ... as in NNI).
        in_features, out_features: the channels of the input (node 0) and of every other node.
        num_tensors: nodes, the input included (4 in NAS-Bench-201).
        label: the cell's label scope: edges are labelled ``<label>/<j>_<i>`` (NNI's); without
            one, the enclosing scope's next number. ``cell.label`` is the scope's full name
            (``'model/cell'`` inside a space whose ``label_prefix`` is ``'model'``), as NNI's.

    ``[N, in_features, *] -> [N, out_features, *]``. :class:`nasx.hub.NasBench201` is the
    benchmark's whole space, with the benchmark's five operations.
    """

    def __init__(
        self,
        op_candidates: Mapping[str, OpFactory] | Sequence[OpFactory],
        in_features: int,
        out_features: int,
        num_tensors: int = 4,
        label: str | None = None,
    ):
        super().__init__()
        if isinstance(op_candidates, Mapping):
            factories = dict(op_candidates)
        else:
            factories = {str(i): f for i, f in enumerate(op_candidates)}
        if not factories or not all(callable(f) for f in factories.values()):
            raise ValueError(
                "NasBench201Cell needs op_candidates: factories(in_features, out_features) -> "
                f"module, in a dict or a list; got {op_candidates!r}"
            )
        if num_tensors < 2:
            raise ValueError(f"NasBench201Cell needs num_tensors >= 2, got {num_tensors}")
        self.in_features, self.out_features, self.num_tensors = (
            in_features,
            out_features,
            num_tensors,
        )
        self.layers = nn.ModuleList()  # layers[i - 1][j]: the op on edge j -> i
        with label_scope() if label is None else label_scope(label):
            self.label = "/".join(current_path())
            for i in range(1, num_tensors):
                node_ops = nn.ModuleList()
                for j in range(i):
                    width = in_features if j == 0 else out_features
                    ops = {name: make(width, out_features) for name, make in factories.items()}
                    node_ops.append(LayerChoice(ops, label=f"{j}_{i}"))
                self.layers.append(node_ops)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        tensors = [inputs]
        for node_ops in self.layers:
            # a loop, not sum(generator): TorchScript compiles neither
            node = torch.zeros(0)
            # node_ops is a ModuleList, typed as Module by torch; the ignore stays bare: TorchScript
            # parses any text after it as a type annotation (and fails to script the cell)
            for j, op in enumerate(node_ops):  # type: ignore
                out = op(tensors[j])
                node = out if j == 0 else node + out
            tensors.append(node)
        return tensors[-1]
