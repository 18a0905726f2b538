"""Weight sharing over a width for layers that hold raw parameters (a ViT's class token and
position embedding, as in AutoFormer and NNI's ``MixedClassToken`` / ``MixedAbsolutePositionEmbedding``).

A space layer opts in by naming, on its class, which parameters have their last dimension set by
which constructor argument: ``nasx_sliced_parameters = {'cls_token': 'embed_dim'}``. Its search
form (``nasx.space.mutable_layer(Layer)``) with that argument a choice then becomes a
:class:`MixedSlicedParameters` in the supernet: the parameters at the largest value, and a path
runs the layer's own ``forward`` with their leading slices (the same slices ``sliced_state`` gives
a rebuilt model). Only path mode (RandomOneShot, ENAS, Proxyless) is supported; a mixture
(DARTS family) is refused with the layer named, since what a soft width means for a token or an
embedding is not defined here.

    >>> import torch, torch.nn as nn
    >>> from nasx.space import Categorical, ModelSpace, mutable_layer
    >>> from nasx.strategy.oneshot import Supernet
    >>> class Bias(nn.Module):
    ...     nasx_sliced_parameters = {'b': 'n'}
    ...     def __init__(self, n):
    ...         super().__init__()
    ...         self.b = nn.Parameter(torch.arange(float(n)))
    ...     def forward(self, x):
    ...         return x + self.b
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.bias = mutable_layer(Bias)(Categorical([2, 4], label='n'))
    ...     def forward(self, x):
    ...         return self.bias(x)
    >>> net = Supernet(Net(), mode='path', alphas=False)
    >>> net.use_arch({'n': 2})
    >>> net(torch.zeros(1, 2)).tolist()
    [[0.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch.func import functional_call

from .mixed_value import MixedValueOp
from .state import ArchState
from .value_args import MutableLayerLike, largest


def sliced_parameters(module: object) -> dict[str, str] | None:
    """The ``nasx_sliced_parameters`` a layer's class declares (parameter -> sizing argument)."""
    found = getattr(type(module), "nasx_sliced_parameters", None)
    return dict(found) if found else None


class MixedSlicedParameters(MixedValueOp):
    """Stands in for a layer declaring ``nasx_sliced_parameters`` (see the module doc)."""

    def __init__(self, source: MutableLayerLike, state: ArchState):
        super().__init__(source, state)
        layer = source.torch_layer  # the torch layer the Mutable* layer extends
        owner = type(source).__name__
        spec = sliced_parameters(source) or {}
        args = sorted(set(spec.values()))
        if len(args) != 1 or args[0] not in self.args:
            raise ValueError(
                f"{owner}: nasx_sliced_parameters must size every parameter by one constructor "
                f"argument, got {spec!r}"
            )
        self.arg = args[0]
        self.size_args = (self.arg,)
        self.in_arg, self.dim = self.arg, -1
        self.owner = owner
        at_largest = {
            k: (largest(v, k, owner) if self._leaves[k] else v) for k, v in self.args.items()
        }
        template = layer(**at_largest)
        self._names = list(spec)
        for name in self._names:  # the shared parameters, at the largest width
            setattr(self, name, getattr(template, name))
        # The layer whose forward runs a path; its own parameters are swapped for slices.
        self.__dict__["_template"] = template

    def _sliced(self, n: int) -> dict[str, torch.Tensor]:
        return {name: getattr(self, name)[..., :n] for name in self._names}

    def run(self, x: torch.Tensor, v: dict[str, Any]) -> torch.Tensor:
        out: torch.Tensor = functional_call(
            self.__dict__["_template"], self._sliced(v[self.arg]), (x,)
        )
        return out

    def run_mixture(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(
            f"{self.owner}: mixture (DARTS-family) strategies cannot share its parameters over "
            f"{self.arg!r}; use a path strategy (RandomOneShot, ENAS, Proxyless) or a multi-trial "
            "one"
        )

    def sliced_state(self, arch: Mapping[str, Any]) -> dict[str, torch.Tensor]:
        return self._sliced(self.values(arch)[self.arg])
