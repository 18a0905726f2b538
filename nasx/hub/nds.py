"""The DARTS family of cell-based spaces (the NDS spaces): DARTS, NASNet, ENAS, AmoebaNet, PNAS.

One network skeleton (Radosavovic et al., "On Network Design Spaces for Visual Recognition", 2019)
serves all five; they differ in their operation lists, nodes per cell and ``merge_op``:

    stem -> stage 0 (normal cells) -> stage 1 (reduce, normal...) -> stage 2 (reduce, normal...)
         -> global average pool -> linear

Every normal cell shares the labels ``normal/...`` and every reduction cell ``reduce/...``, with
NNI's names (``normal/op_2_0``, ``normal/input_2_0``); ``width`` and ``depth`` label the initial
channel count and the total number of cells when they are searched. An NNI arch for these spaces
is a nasx arch, unchanged.

    >>> from nasx.hub import DARTS
    >>> from nasx.space import search_space
    >>> space = search_space(DARTS(width=16, num_cells=8))
    >>> len(space), space['normal/op_2_0'].values[:3]
    (32, ['max_pool_3x3', 'avg_pool_3x3', 'skip_connect'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal, NamedTuple

import torch
import torch.nn as nn

from ..space import Cell, ModelSpace, choice
from .ops import OPS, DropPath, FactorizedReduce, ReLUConvBN

NUM_PREDECESSORS = 2  # every cell reads the two previous cells' outputs
NUM_OPS_PER_NODE = 2  # every node sums two operations


class CellPreprocessor(nn.Module):
    """Bring the two previous cells' outputs to ``c`` channels and the same resolution.

    After a reduction cell the older input (``pprev``) is twice as large: it is halved with a
    :class:`FactorizedReduce`; otherwise a 1x1 :class:`ReLUConvBN` fixes the channels.

    Example:
        >>> pre = CellPreprocessor(12, 16, 8, prev_was_reduction=True)
        >>> [tuple(t.shape) for t in pre([torch.randn(1, 12, 8, 8), torch.randn(1, 16, 4, 4)])]
        [(1, 8, 4, 4), (1, 8, 4, 4)]
    """

    def __init__(self, c_pprev: int, c_prev: int, c: int, prev_was_reduction: bool):
        super().__init__()
        self.pre0 = (
            FactorizedReduce(c_pprev, c) if prev_was_reduction else ReLUConvBN(c_pprev, c, 1, 1, 0)
        )
        self.pre1 = ReLUConvBN(c_prev, c, 1, 1, 0)

    def forward(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        pprev, prev = inputs
        return [self.pre0(pprev), self.pre1(prev)]


class CellPostprocessor(nn.Module):
    """Return ``[prev, this]`` so cells chain in an ``nn.Sequential`` as ``(s0, s1) -> (s1, out)``.

    Example:
        >>> CellPostprocessor()('out', ['s0', 's1'])
        ['s1', 'out']
    """

    def forward(self, this_cell: torch.Tensor, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        return [inputs[-1], this_cell]


class AuxiliaryHead(nn.Module):
    """Auxiliary classifier attached after the first cell of the last stage (DARTS/NASNet).

    Expects 8x8 features on CIFAR (pooled 5x5 stride 3 to 2x2) and 7x7 on ImageNet at 224x224
    (pooled 5x5 stride 2 to 2x2); a 2x2 conv then leaves 768 x 1 x 1.

    Example:
        >>> AuxiliaryHead(16, 10, 'cifar')(torch.randn(2, 16, 8, 8)).shape
        torch.Size([2, 10])
    """

    def __init__(self, c: int, num_classes: int, dataset: str):
        super().__init__()
        stride = 3 if dataset == "cifar" else 2
        self.features = nn.Sequential(
            nn.ReLU(inplace=True),
            nn.AvgPool2d(5, stride=stride, padding=0, count_include_pad=False),
            nn.Conv2d(c, 128, 1, bias=False),
            nn.BatchNorm2d(128),
            nn.ReLU(inplace=True),
            nn.Conv2d(128, 768, 2, bias=False),
            nn.BatchNorm2d(768),
            nn.ReLU(inplace=True),
        )
        self.classifier = nn.Linear(768, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)  # [N, 768, 1, 1]
        return self.classifier(x.flatten(1))


class _OpFactory:
    """``f(node_index, op_index, input_index) -> op`` for one operation name in one cell.

    In a reduction cell, edges that start at a cell input get stride 2; ``input_index`` is None in
    the search form (every op is built with stride 2 then, as the default inputs are cell inputs).
    A class rather than a closure so that spaces and models pickle.
    """

    def __init__(self, name: str, channels: int, reduction: bool, drop_path_prob: float):
        self.name, self.channels, self.reduction, self.drop_path_prob = (
            name,
            channels,
            reduction,
            drop_path_prob,
        )

    def __call__(self, node_index: int, op_index: int, input_index: int | None) -> nn.Module:
        from_cell_input = input_index is None or input_index < NUM_PREDECESSORS
        stride = 2 if self.reduction and from_cell_input else 1
        op = OPS[self.name](self.channels, stride, True)
        if self.drop_path_prob > 0 and not isinstance(op, nn.Identity):
            # DARTS never drops the identity path (skip connections stay).
            return nn.Sequential(op, DropPath(self.drop_path_prob))
        return op


def _check_arguments(op_candidates: Sequence[str], dataset: str) -> None:
    unknown = [op for op in op_candidates if op not in OPS]
    if unknown:
        raise ValueError(f"unknown operation(s) {unknown!r}; known operations: {sorted(OPS)}")
    if dataset not in ("cifar", "imagenet"):
        raise ValueError(f"dataset must be 'cifar' or 'imagenet', got {dataset!r}")


class NDS(ModelSpace):
    """The NDS cell-based space with any operation list (the base of :class:`DARTS` and friends).

    Args:
        op_candidates: operation names, keys of ``nasx.hub.ops.OPS`` (``'sep_conv_3x3'``,
            ``'max_pool_3x3'``, ``'skip_connect'``, ...).
        merge_op: ``'all'`` (concatenate every node) or ``'loose_end'`` (only nodes no other node
            reads); see :class:`~nasx.space.Cell`.
        num_nodes_per_cell: chosen nodes per cell.
        width: channels of the first stage's operations, or a tuple to search (label ``width``).
        num_cells: total cells, split over three stages as NNI does, or a tuple to search (label
            ``depth``).
        dataset: ``'cifar'`` (3x3 stem, 10 classes, 32x32 inputs) or ``'imagenet'`` (three
            stride-2 stem convs, 1000 classes).
        auxiliary_loss: add DARTS's auxiliary classifier (``auxiliary_head``, on the output of
            the second reduction cell); ``forward`` then returns ``(logits, aux_logits)`` in
            training mode.
        drop_path_prob: drop-path probability on every non-identity op (change it during
            training with :meth:`set_drop_path_prob`).
        num_classes: override the number of classes implied by ``dataset``.

    In the search form a searched ``width``/``depth`` takes its default (first) value; a model
    built under :func:`~nasx.space.model_context` takes the arch's. With ``merge_op='loose_end'``
    a cell's output width depends on the arch and is computed from the built cell.

    Example:
        >>> import torch
        >>> from nasx.hub.nds import NDS
        >>> space = NDS(['skip_connect', 'sep_conv_3x3'], num_nodes_per_cell=2, width=8, num_cells=3,
        ...             dataset='cifar')
        >>> space(torch.randn(2, 3, 32, 32)).shape
        torch.Size([2, 10])
    """

    def __init__(
        self,
        op_candidates: Sequence[str],
        merge_op: Literal["all", "loose_end"] = "all",
        num_nodes_per_cell: int = 4,
        width: int | tuple[int, ...] = 16,
        num_cells: int | tuple[int, ...] = 20,
        dataset: Literal["cifar", "imagenet"] = "imagenet",
        auxiliary_loss: bool = False,
        drop_path_prob: float = 0.0,
        num_classes: int | None = None,
    ):
        super().__init__()
        _check_arguments(op_candidates, dataset)
        self.op_candidates = list(op_candidates)
        self.merge_op = merge_op
        self.num_nodes_per_cell = num_nodes_per_cell
        self.dataset = dataset
        self.num_classes = (
            num_classes if num_classes is not None else (10 if dataset == "cifar" else 1000)
        )
        self.auxiliary_loss = auxiliary_loss
        self.drop_path_prob = drop_path_prob

        c = choice("width", list(width)) if isinstance(width, (tuple, list)) else width
        n_cells = (
            choice("depth", list(num_cells)) if isinstance(num_cells, (tuple, list)) else num_cells
        )
        if n_cells < 1:
            raise ValueError(f"num_cells must be >= 1, got {n_cells}")
        # NNI's split: 20 cells -> [6, 7, 7]; stages 1 and 2 start with a reduction cell.
        cells_per_stage = [(i + 1) * n_cells // 3 - i * n_cells // 3 for i in range(3)]

        c_stem, prev_reduction = self._make_stem(c, dataset)
        # Which cell's concatenated nodes each layer reads (None: the stem), for cell_readers().
        self._cell_readers: dict[str, str] = {}
        c_prev, last_cell, aux_input = self._make_stages(cells_per_stage, c, c_stem, prev_reduction)
        if auxiliary_loss:
            if aux_input is None:
                raise ValueError(
                    f"auxiliary_loss needs a third stage, but num_cells={n_cells} leaves it empty"
                )
            c_aux, aux_cell = aux_input
            self.auxiliary_head = AuxiliaryHead(c_aux, self.num_classes, dataset)
            self._cell_readers["auxiliary_head.features.2"] = aux_cell  # its first conv
        self.global_pooling = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_prev, self.num_classes)
        if last_cell is not None:
            self._cell_readers["classifier"] = last_cell

    def _make_stem(self, c: Any, dataset: str) -> tuple[Any, bool]:
        """The stem (``stem0``/``stem1`` for ImageNet, ``stem`` for CIFAR): its output channels,
        and whether the first cell should treat its input as reduced."""
        if dataset == "imagenet":
            # 224 -> 112 -> 56 (stem0), -> 28 (stem1): the first cell sees a "reduced" predecessor.
            self.stem0 = nn.Sequential(
                nn.Conv2d(3, c // 2, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(c // 2),
                nn.ReLU(inplace=True),
                nn.Conv2d(c // 2, c, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(c),
            )
            self.stem1 = nn.Sequential(
                nn.ReLU(inplace=True),
                nn.Conv2d(c, c, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(c),
            )
            return c, True
        self.stem = nn.Sequential(
            nn.Conv2d(3, 3 * c, 3, padding=1, bias=False), nn.BatchNorm2d(3 * c)
        )
        return 3 * c, False

    def _make_stages(
        self, cells_per_stage: list[int], c: Any, c_stem: Any, prev_reduction: bool
    ) -> tuple[Any, str | None, tuple[Any, str] | None]:
        """The three stages of cells (``self.stages``), each cell reading the two before it
        (the stem at first), with the channels doubled and a reduction cell at the start of
        stages 1 and 2; notes in ``_cell_readers`` which cell each preprocessing layer reads.

        Returns the last cell's output channels and path (None without cells), and the auxiliary
        head's input: the output channels and path of stage 2's first cell (None if it has none).
        """
        self.stages = nn.ModuleList()
        c_pprev = c_prev = c_stem
        c_cur = c
        pprev_cell: str | None = None
        prev_cell: str | None = None
        aux_input: tuple[Any, str] | None = None
        for stage_index, n in enumerate(cells_per_stage):
            if stage_index > 0:
                c_cur *= 2
            cells = []
            for i in range(n):
                reduction = stage_index > 0 and i == 0
                cell = self._make_cell(c_pprev, c_prev, c_cur, reduction, prev_reduction)
                cells.append(cell)
                path = f"stages.{stage_index}.{i}"
                for pre, source in (("pre0", pprev_cell), ("pre1", prev_cell)):
                    if source is not None:
                        self._cell_readers[f"{path}.preprocessor.{pre}"] = source
                c_pprev, c_prev = c_prev, c_cur * len(cell.output_node_indices)
                pprev_cell, prev_cell = prev_cell, path
                prev_reduction = reduction
                if stage_index == 2 and i == 0:
                    aux_input = (c_prev, path)
            self.stages.append(nn.Sequential(*cells))
        return c_prev, prev_cell, aux_input

    def _make_cell(
        self, c_pprev: int, c_prev: int, c: int, reduction: bool, prev_reduction: bool
    ) -> Cell:
        factories = {
            op: _OpFactory(op, c, reduction, self.drop_path_prob) for op in self.op_candidates
        }
        return Cell(
            factories,
            self.num_nodes_per_cell,
            NUM_OPS_PER_NODE,
            NUM_PREDECESSORS,
            self.merge_op,
            preprocessor=CellPreprocessor(c_pprev, c_prev, c, prev_reduction),
            postprocessor=CellPostprocessor(),
            label="reduce" if reduction else "normal",
        )

    def cell_readers(self) -> dict[str, str]:
        """``{layer path: cell path}``: the layers whose input channels are the concatenated
        nodes of a cell (the next cells' preprocessing, the auxiliary head, the classifier).

        With ``merge_op='loose_end'`` these layers are as wide as the arch leaves loose ends,
        so a one-shot supernet (which concatenates every node) hands them the channel blocks of
        exactly those nodes (:func:`nasx.strategy.oneshot.inherit_weights`).

        Example:
            >>> from nasx.hub import ENAS
            >>> readers = ENAS(width=4, num_cells=3).cell_readers()
            >>> readers['stages.2.0.preprocessor.pre0'], readers['classifier']
            ('stages.0.0', 'stages.2.0')
        """
        return dict(self._cell_readers)

    def forward(self, x: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        # hasattr, not self.dataset: TorchScript decides it when compiling and skips the other branch
        if hasattr(self, "stem0"):  # imagenet
            s0 = self.stem0(x)
            s1 = self.stem1(s0)
        else:
            s0 = s1 = self.stem(x)  # [N, 3C, 32, 32]
        aux_logits: torch.Tensor | None = None
        for stage_index, stage in enumerate(self.stages):
            # stage is an nn.Sequential (mypy sees a Module). The ignore ends the line, with no
            # codes: TorchScript reads any other type comment as a signature.
            for i, cell in enumerate(stage):  # type: ignore
                s0, s1 = cell([s0, s1])
                if (
                    stage_index == 2
                    and i == 0
                    and hasattr(self, "auxiliary_head")
                    and self.auxiliary_loss
                    and self.training
                ):
                    aux_logits = self.auxiliary_head(s1)
        logits = self.classifier(self.global_pooling(s1).flatten(1))
        if aux_logits is not None:
            return logits, aux_logits
        return logits

    @classmethod
    def load_searched_model(
        cls, name: str, pretrained: bool = False, download: bool = True, progress: bool = True
    ) -> nn.Module:
        """NNI's spelling of :func:`nasx.hub.load_searched_model`, limited to this space's models."""
        from .pretrained import searched_model_of

        return searched_model_of(cls, name, pretrained, download, progress)

    def set_drop_path_prob(self, drop_prob: float) -> None:
        """Set the drop-path probability of every op (DARTS raises it linearly over training).

        Only ops built with ``drop_path_prob > 0`` carry a drop-path layer
        (``nasx.hub.ops.DropPath``).
        """
        for module in self.modules():
            if isinstance(module, DropPath):
                module.drop_prob = drop_prob


class CellFamily(NamedTuple):
    """One NDS space as data: its operations, nodes per cell, what a cell outputs, and its paper."""

    ops: tuple[str, ...]
    num_nodes: int
    merge_op: Literal["all", "loose_end"]
    summary: str


# The five NNI spaces, in NNI's operation order (arch values and search-space reprs depend on it).
CELL_FAMILIES: dict[str, CellFamily] = {
    "DARTS": CellFamily(
        ("max_pool_3x3", "avg_pool_3x3", "skip_connect", "sep_conv_3x3", "sep_conv_5x5",
         "dil_conv_3x3", "dil_conv_5x5"),
        4, "all", "The DARTS space (Liu et al., ICLR 2019): 4 nodes per cell, all nodes concatenated.",
    ),
    "NASNet": CellFamily(
        ("skip_connect", "conv_3x1_1x3", "conv_7x1_1x7", "dil_conv_3x3", "avg_pool_3x3",
         "max_pool_3x3", "max_pool_5x5", "max_pool_7x7", "conv_1x1", "conv_3x3", "sep_conv_3x3",
         "sep_conv_5x5", "sep_conv_7x7"),
        5, "loose_end",
        "The NASNet space (Zoph et al., CVPR 2018): 13 operations, 5 nodes, loose ends concatenated.",
    ),
    "ENAS": CellFamily(
        ("skip_connect", "sep_conv_3x3", "sep_conv_5x5", "avg_pool_3x3", "max_pool_3x3"),
        5, "loose_end",
        "The ENAS micro space (Pham et al., ICML 2018): 5 operations, 5 nodes, loose ends "
        "concatenated.",
    ),
    "AmoebaNet": CellFamily(
        ("skip_connect", "sep_conv_3x3", "sep_conv_5x5", "sep_conv_7x7", "avg_pool_3x3",
         "max_pool_3x3", "dil_sep_conv_3x3", "conv_7x1_1x7"),
        5, "loose_end",
        "The AmoebaNet space (Real et al., AAAI 2019): 8 operations, 5 nodes, loose ends "
        "concatenated.",
    ),
    "PNAS": CellFamily(
        ("sep_conv_3x3", "sep_conv_5x5", "sep_conv_7x7", "conv_7x1_1x7", "skip_connect",
         "avg_pool_3x3", "max_pool_3x3", "dil_conv_3x3"),
        5, "all", "The PNAS space (Liu et al., ECCV 2018): 8 operations, 5 nodes, all nodes concatenated.",
    ),
}  # fmt: skip


class _CellSpace(NDS):
    """One builder for every :data:`CELL_FAMILIES` space, with NNI's signature for them.

    A subclass names its family (``FAMILY``); its docstring is made by :func:`_family_doc`.
    """

    FAMILY: ClassVar[str]

    def __init__(
        self,
        width: int | tuple[int, ...] = (16, 24, 32),
        num_cells: int | tuple[int, ...] = (4, 8, 12, 16, 20),
        dataset: Literal["cifar", "imagenet"] = "cifar",
        auxiliary_loss: bool = False,
        drop_path_prob: float = 0.0,
        num_classes: int | None = None,
    ):
        family = CELL_FAMILIES[self.FAMILY]
        super().__init__(
            list(family.ops),
            family.merge_op,
            family.num_nodes,
            width,
            num_cells,
            dataset,
            auxiliary_loss,
            drop_path_prob,
            num_classes,
        )


def _family_doc(family: str, notes: str, example: str) -> str:
    return f"""{CELL_FAMILIES[family].summary}
{notes}
    Args:
        width: initial channels, or a tuple of widths to search (label ``width``).
        num_cells: total number of cells, or a tuple to search (label ``depth``).
        dataset: ``'cifar'`` or ``'imagenet'`` (stem, classes and auxiliary head).
        auxiliary_loss: add the auxiliary head (``forward`` returns two logits in training).
        drop_path_prob: drop-path probability on non-identity ops.
        num_classes: override the class count implied by ``dataset``.

    Example:
{example}
    """


class DARTS(_CellSpace):
    __doc__ = _family_doc(
        "DARTS",
        """
    Its seven operations are NNI's ``DARTS_OPS`` in NNI's order. The paper's zero op ``none`` is
    left out, as in NNI, and nasx's one-shot strategies do not add it: a DARTS search here weighs
    the seven real ops, and keeps each node's two strongest incoming edges. Archs such as
    ``{'normal/op_2_0': 'sep_conv_3x3', 'normal/input_2_0': [1], ...}`` are NNI's.
""",
        """        >>> import torch
        >>> from nasx.hub import DARTS
        >>> DARTS(width=4, num_cells=3)(torch.randn(2, 3, 32, 32)).shape
        torch.Size([2, 10])""",
    )
    FAMILY = "DARTS"
    DARTS_OPS = list(CELL_FAMILIES[FAMILY].ops)  # NNI's name for the list


class NASNet(_CellSpace):
    __doc__ = _family_doc(
        "NASNet",
        "",
        """        >>> from nasx.hub import NASNet
        >>> len(NASNet.NASNET_OPS)
        13""",
    )
    FAMILY = "NASNet"
    NASNET_OPS = list(CELL_FAMILIES[FAMILY].ops)


class ENAS(_CellSpace):
    __doc__ = _family_doc(
        "ENAS",
        "",
        """        >>> from nasx.hub import ENAS
        >>> ENAS.ENAS_OPS
        ['skip_connect', 'sep_conv_3x3', 'sep_conv_5x5', 'avg_pool_3x3', 'max_pool_3x3']""",
    )
    FAMILY = "ENAS"
    ENAS_OPS = list(CELL_FAMILIES[FAMILY].ops)


class AmoebaNet(_CellSpace):
    __doc__ = _family_doc(
        "AmoebaNet",
        "",
        """        >>> from nasx.hub import AmoebaNet
        >>> 'conv_7x1_1x7' in AmoebaNet.AMOEBA_OPS
        True""",
    )
    FAMILY = "AmoebaNet"
    AMOEBA_OPS = list(CELL_FAMILIES[FAMILY].ops)


class PNAS(_CellSpace):
    __doc__ = _family_doc(
        "PNAS",
        "",
        """        >>> from nasx.hub import PNAS
        >>> len(PNAS.PNAS_OPS)
        8""",
    )
    FAMILY = "PNAS"
    PNAS_OPS = list(CELL_FAMILIES[FAMILY].ops)
