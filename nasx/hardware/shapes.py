"""A memoised shape trace: each distinct block runs once, every later call is looked up.

Pricing thousands of archs of a space repeats the same blocks (a block of a given structure on an
input of a given shape) over and over. :class:`ShapeTrace` runs a model's forward pass with every
module's output shape and MACs remembered under its :func:`block_key`: a module seen before
returns an empty tensor of the remembered shape (on the meta device: no memory, no compute) and
adds its remembered MACs, so only new blocks are computed. MACs follow
:func:`nasx.profiler.count_macs` (conv and linear layers, one sample); the tests check the two
agree on MnasNet archs.

    >>> import torch.nn as nn
    >>> trace = ShapeTrace()
    >>> net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
    >>> trace.macs(net, (3, 4, 4)), len(trace)        # 8*16*27 + 10*128
    (4736, 4)
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn as nn

_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)

# Modules whose output has their input's shape and that cost no MACs. On the meta device their
# forward runs PyTorch's Python decompositions (BatchNorm's was most of a MnasNet count), so a
# trace on meta passes the input through; on real devices they run as usual.
SHAPE_PRESERVING = (
    nn.modules.batchnorm._BatchNorm,
    nn.ReLU,
    nn.ReLU6,
    nn.SiLU,
    nn.Hardswish,
    nn.Hardsigmoid,
    nn.Sigmoid,
    nn.GELU,
    nn.Dropout,
    nn.Identity,
)


def structure_key(module: nn.Module, _memo: dict[int, str] | None = None) -> str:
    """What identifies a module's computation apart from its input: class, settings, plain
    attributes (a residual flag) and its children's keys (recursively).

    >>> structure_key(nn.Linear(4, 2))
    'Linear(in_features=4, out_features=2, bias=True)'
    """
    memo = _memo if _memo is not None else {}
    if id(module) in memo:
        return memo[id(module)]
    children = list(module.named_children())
    if not children:
        key = f"{type(module).__name__}({module.extra_repr()})"
    else:
        attrs = sorted(
            (k, v)
            for k, v in vars(module).items()
            if not k.startswith("_") and k != "training" and isinstance(v, (bool, int, float, str))
        )
        cls = type(module)
        parts = [f"{cls.__module__}.{cls.__qualname__}", module.extra_repr(), repr(attrs)]
        parts += [f"{n}={structure_key(c, memo)}" for n, c in children]
        digest = hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]
        key = f"{cls.__name__}:{digest}"
    memo[id(module)] = key
    return key


def block_key(module: nn.Module, shape: Sequence[int], _memo: dict[int, str] | None = None) -> str:
    """``structure@NxCxHxW``: the key of one block call in latency tables and shape traces.

    >>> block_key(nn.Linear(4, 2), (1, 4))
    'Linear(in_features=4, out_features=2, bias=True)@1x4'
    """
    return f"{structure_key(module, _memo)}@{'x'.join(str(int(s)) for s in shape)}"


def leaf_macs(module: nn.Module, output: torch.Tensor) -> int:
    """MACs of one sample through a conv or linear layer (0 for other modules)."""
    if isinstance(module, _CONVS):
        per_output = module.in_channels // module.groups * math.prod(module.kernel_size)
        return int(output[0].numel()) * per_output
    if isinstance(module, nn.Linear):
        return int(output[0].numel()) * module.in_features
    return 0


class ShapeTrace:
    """Output shapes and MACs of blocks, remembered across models: pricing many archs of a space
    computes each distinct block (its structure, on an input of a given shape) once.

    A forward pass through :meth:`run` or :meth:`macs` remembers every module's output shape and
    MACs under a structural key; a module seen before returns an empty tensor of the remembered
    shape (on the meta device) and adds its remembered MACs. MACs follow
    :func:`nasx.profiler.count_macs` (conv and linear layers, one sample). Pass one trace to
    :func:`~nasx.hardware.arch_cost` or :func:`~nasx.hardware.model_cost` calls to share it.

    ``on_call(key, module, input_shape)`` is called for every call of a module in ``units``
    (e.g. to look its latency up); those modules are always entered through the memo.
    """

    def __init__(self) -> None:
        self.memo: dict[str, tuple[tuple[int, ...], int]] = {}  # key -> (output shape, MACs)

    def __len__(self) -> int:
        return len(self.memo)

    def macs(self, model: nn.Module, input_shape: Sequence[int]) -> int:
        """MACs of one sample of ``input_shape`` (no batch dimension) through ``model``."""
        return self.run(model, (1, *input_shape))

    def run(
        self,
        model: nn.Module,
        batch_shape: Sequence[int],
        units: Sequence[nn.Module] = (),
        on_call: Callable[[str, nn.Module, tuple[int, ...]], None] | None = None,
    ) -> int:
        """One forward pass on an input of ``batch_shape``; returns the MACs of its first sample.

        The model runs in eval mode under ``torch.no_grad`` (its mode is restored); a module is
        memoised when called with one tensor and no other argument and returning one tensor.
        """
        keys: dict[int, str] = {}
        unit_ids = {id(u) for u in units}
        # a module holding a unit always runs, so that every unit call is seen
        holders = {
            id(m)
            for m in model.modules()
            if id(m) not in unit_ids and any(id(d) in unit_ids for d in m.modules())
        }
        total = [0]
        patched: list[nn.Module] = []

        def wrap(m: nn.Module) -> Callable[..., Any]:
            original = m.forward

            def forward(*args: Any, **kwargs: Any) -> Any:
                x = args[0] if len(args) == 1 and not kwargs else None
                if not torch.is_tensor(x):
                    return original(*args, **kwargs)
                shape = tuple(int(s) for s in x.shape)
                key = block_key(m, shape, keys)
                if on_call is not None and id(m) in unit_ids:
                    on_call(key, m, shape)
                if x.is_meta and isinstance(m, SHAPE_PRESERVING):
                    return x  # their meta forward runs slow Python decompositions; see above
                hit = None if id(m) in holders else self.memo.get(key)
                if hit is not None:
                    total[0] += hit[1]
                    return torch.empty(hit[0], dtype=x.dtype, device=x.device)
                before = total[0]
                out = original(x)
                if torch.is_tensor(out) and id(m) not in holders:
                    total[0] += leaf_macs(m, out)
                    self.memo[key] = (tuple(int(s) for s in out.shape), total[0] - before)
                return out

            return forward

        was_training = model.training
        try:
            for m in model.modules():
                vars(m)["forward"] = wrap(m)  # an instance attribute, deleted below
                patched.append(m)
            model.eval()
            device = next((p.device for p in model.parameters()), torch.device("cpu"))
            with torch.no_grad():
                model(torch.zeros(*batch_shape, device=device))
        finally:
            for m in patched:
                del vars(m)["forward"]
            model.train(was_training)
        return total[0]
