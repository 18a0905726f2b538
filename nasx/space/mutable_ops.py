"""torch.nn layers whose arguments may be choices (NNI's ``MutableLinear``, ``MutableConv2d``, ...).

``MutableConv2d(3, Categorical([16, 32], label='width'), 3)`` (or NNI's spelling,
``MutableConv2d(3, nasx.choice('width', [16, 32]), 3)``, whose value remembers its choice)
builds a real ``nn.Conv2d``: under
:func:`~nasx.space.model_context` exactly ``nn.Conv2d`` with the chosen width; in the search form
a ``MutableConv2d`` (an ``nn.Conv2d`` subclass) with the default width that remembers its choices.
Passing the same choice object (or label) to several layers ties them to one decision, and an
expression of choices (``ch * 2``) is worked out from the arch's values.

    >>> from nasx.space import Categorical, MutableLinear, model_context
    >>> with model_context({'hidden': 32}):
    ...     MutableLinear(8, Categorical([16, 32], label='hidden'))
    Linear(in_features=8, out_features=32, bias=True)
"""

from __future__ import annotations

import inspect
from typing import Any

import torch.nn as nn

from .base import MutableModule
from .choice import Choice
from .context import model_context
from .parametrized import ParametrizedModule, choices_in, freeze_argument, searched_arguments


class _MutableLayer(ParametrizedModule):
    """Mixin: resolve choice arguments, then construct the torch layer it is paired with.

    A :class:`~nasx.space.ParametrizedModule` (as NNI's ``Mutable*`` layers are) that keeps the
    choices itself: its ``__init__`` sees them, to record them before the torch layer's runs.
    """

    torch_layer: type[nn.Module]
    _construct = MutableModule.__dict__["_construct"]

    def __init__(self, *args: Any, **kwargs: Any):
        # NNI's spelling, MutableLinear(4, nasx.choice('w', [8, 16])), searches w as Categorical does
        args, kwargs = searched_arguments(args, kwargs)
        own_choices = choices_in(args, kwargs)
        self.torch_layer.__init__(
            self, *map(freeze_argument, args), **{k: freeze_argument(v) for k, v in kwargs.items()}
        )
        self.__dict__["_nasx_choices"] = own_choices
        self.__dict__["_nasx_args"] = (args, kwargs)

    @classmethod
    def create_fixed_module(cls, *args: Any, **kwargs: Any) -> nn.Module:
        return cls.torch_layer(
            *map(freeze_argument, args), **{k: freeze_argument(v) for k, v in kwargs.items()}
        )

    def choices(self) -> list[Choice]:
        return list(self.__dict__.get("_nasx_choices", []))

    @property
    def args(self) -> dict[str, Any]:
        """The constructor's arguments by name, choices included (NNI's ``ParametrizedModule.args``).

        >>> from nasx.space import Categorical
        >>> MutableLinear(4, Categorical([8, 16], label='h')).args['out_features']
        Categorical([8, 16], label='h')
        """
        args, kwargs = self.__dict__["_nasx_args"]
        bound = inspect.signature(self.torch_layer).bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def freeze(self, sample: dict[str, Any]) -> nn.Module:
        """The plain torch layer ``sample`` (an arch) selects, newly initialised (NNI's ``freeze``).

        >>> from nasx.space import Categorical
        >>> MutableConv2d(3, Categorical([8, 16], label='out'), 1).freeze({'out': 16})
        Conv2d(3, 16, kernel_size=(1, 1), stride=(1, 1))
        """
        args, kwargs = self.__dict__["_nasx_args"]
        with model_context(sample, strict=False):
            return self.create_fixed_module(*args, **kwargs)


class MutableLinear(_MutableLayer, nn.Linear):
    """``nn.Linear`` whose arguments may be choices."""

    torch_layer = nn.Linear


class MutableConv1d(_MutableLayer, nn.Conv1d):
    """``nn.Conv1d`` whose arguments may be choices."""

    torch_layer = nn.Conv1d


class MutableConv2d(_MutableLayer, nn.Conv2d):
    """``nn.Conv2d`` whose arguments may be choices."""

    torch_layer = nn.Conv2d


class MutableConv3d(_MutableLayer, nn.Conv3d):
    """``nn.Conv3d`` whose arguments may be choices."""

    torch_layer = nn.Conv3d


class MutableBatchNorm1d(_MutableLayer, nn.BatchNorm1d):
    """``nn.BatchNorm1d`` whose arguments may be choices."""

    torch_layer = nn.BatchNorm1d


class MutableBatchNorm2d(_MutableLayer, nn.BatchNorm2d):
    """``nn.BatchNorm2d`` whose arguments may be choices."""

    torch_layer = nn.BatchNorm2d


class MutableLayerNorm(_MutableLayer, nn.LayerNorm):
    """``nn.LayerNorm`` whose arguments may be choices."""

    torch_layer = nn.LayerNorm


class MutableDropout(_MutableLayer, nn.Dropout):
    """``nn.Dropout`` whose arguments may be choices."""

    torch_layer = nn.Dropout


class MutableEmbedding(_MutableLayer, nn.Embedding):  # type: ignore[misc]  # torch's stub: an Embedding.freeze flag it never sets
    """``nn.Embedding`` whose arguments may be choices."""

    torch_layer = nn.Embedding


class MutableBatchNorm3d(_MutableLayer, nn.BatchNorm3d):
    """``nn.BatchNorm3d`` whose arguments may be choices."""

    torch_layer = nn.BatchNorm3d


class MutableGroupNorm(_MutableLayer, nn.GroupNorm):
    """``nn.GroupNorm`` whose arguments may be choices."""

    torch_layer = nn.GroupNorm


class MutableConvTranspose2d(_MutableLayer, nn.ConvTranspose2d):
    """``nn.ConvTranspose2d`` whose arguments may be choices."""

    torch_layer = nn.ConvTranspose2d


class MutableMultiheadAttention(_MutableLayer, nn.MultiheadAttention):
    """``nn.MultiheadAttention`` whose arguments (``embed_dim``, ``num_heads``, ...) may be choices.

    >>> from nasx.space import Categorical, model_context
    >>> with model_context({'heads': 4}):
    ...     MutableMultiheadAttention(16, Categorical([2, 4], label='heads')).num_heads
    4
    """

    torch_layer = nn.MultiheadAttention


# Every other torch.nn layer gets its Mutable* class on first use, like NNI's generated
# ``nni.nas.nn.pytorch.Mutable<Layer>`` (made when asked for, not at import; cached, so pickling
# finds the same class through this module's ``__getattr__``).
_NOT_LAYERS = {"Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}


def mutable_layer(torch_layer: type[nn.Module]) -> type[nn.Module]:
    """The ``Mutable*`` class of any ``torch.nn`` layer: its arguments may be choices.

    >>> from nasx.space import Categorical, model_context
    >>> MutablePReLU = mutable_layer(nn.PReLU)
    >>> with model_context({'n': 4}):
    ...     MutablePReLU(Categorical([1, 4], label='n')).num_parameters
    4
    >>> mutable_layer(nn.PReLU) is MutablePReLU
    True
    """
    if not (isinstance(torch_layer, type) and issubclass(torch_layer, nn.Module)):
        raise TypeError(f"mutable_layer expects an nn.Module class, got {torch_layer!r}")
    name = f"Mutable{torch_layer.__name__}"
    existing = globals().get(name)
    if isinstance(existing, type) and getattr(existing, "torch_layer", None) is torch_layer:
        return existing
    namespace = {
        "torch_layer": torch_layer,
        "__module__": __name__,
        "__qualname__": name,
        "__doc__": f"``nn.{torch_layer.__name__}`` whose arguments may be choices.",
    }
    cls: type[nn.Module] = type(name, (_MutableLayer, torch_layer), namespace)
    if getattr(nn, torch_layer.__name__, None) is torch_layer:
        globals()[name] = cls  # importable (and picklable) as nasx.space.mutable_ops.<name>
    return cls


def __getattr__(name: str) -> Any:
    layer = getattr(nn, name[len("Mutable") :], None) if name.startswith("Mutable") else None
    if (
        isinstance(layer, type)
        and issubclass(layer, nn.Module)
        and layer.__name__ not in _NOT_LAYERS
    ):
        return mutable_layer(layer)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
