"""``ParametrizedModule``: NNI's base of modules whose constructor arguments may be choices.

The constructor receives plain values (the choices' defaults in the search form, the arch's
values under :func:`~nasx.space.model_context`); the module remembers the choices (``args``,
:meth:`~ParametrizedModule.freeze`). With ``wraps=`` a ``torch.nn`` layer becomes parametrized:
under ``model_context`` the constructor returns that plain layer, as nasx's ``Mutable*`` layers
(which are ParametrizedModules) do.

    >>> import torch.nn as nn
    >>> from nasx.space import Categorical, model_context
    >>> class ParametrizedConv2d(ParametrizedModule, nn.Conv2d, wraps=nn.Conv2d):
    ...     pass
    >>> conv = ParametrizedConv2d(3, Categorical([8, 16], label='out'), 1)
    >>> conv.out_channels, conv.args['out_channels']
    (8, Categorical([8, 16], label='out'))
    >>> conv.freeze({'out': 16})
    Conv2d(3, 16, kernel_size=(1, 1), stride=(1, 1))
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

import torch.nn as nn

from .base import MutableModule
from .choice import Choice
from .chosen import as_choices
from .context import current_arch, ensure_frozen, model_context
from .expression import Mutable

__all__ = ["ParametrizedModule"]


def choices_in(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Choice]:
    """The leaf choices among the arguments (an expression such as ``ch * 2`` gives ``ch``; a
    value from ``nasx.choice`` gives its choice)."""
    found: list[Choice] = []
    for value in as_choices((*args, *kwargs.values())):
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if isinstance(item, Mutable):
                found += [c for c in item.leaf_choices() if all(c is not f for f in found)]
    return found


def freeze_argument(value: Any) -> Any:
    # A module built outside any space (NNI's doc examples do) takes its choices' defaults.
    # Values from nasx.choice become plain: the module's attributes hold no choice notes.
    return ensure_frozen(as_choices(value), strict=False)


def searched_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments as a module that searches them keeps them: every value from ``nasx.choice``
    replaced by its choice, so NNI's ``MutableLinear(4, nasx.choice('w', [8, 16]))`` is the
    module ``MutableLinear(4, Categorical([8, 16], label='w'))`` is."""
    return as_choices(args), {k: as_choices(v) for k, v in kwargs.items()}


class ParametrizedModule(MutableModule):
    """A module whose constructor arguments may be choices or expressions (NNI's).

    Subclass it and write ``__init__`` with plain values in mind: every choice among the
    arguments is frozen before ``__init__`` runs. ``class P(ParametrizedModule, nn.Linear,
    wraps=nn.Linear)`` parametrizes a ``torch.nn`` layer. Choices hidden inside dicts are not
    seen (as in NNI: pass them as arguments, or in a list or tuple).

    Example:
        >>> from nasx.space import Categorical, ModelSpace, search_space
        >>> class Scale(ParametrizedModule):
        ...     def __init__(self, factor):
        ...         super().__init__()
        ...         self.factor = factor  # a plain number here
        ...     def forward(self, x):
        ...         return x * self.factor
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.scale = Scale(Categorical([1, 2, 3], label='f'))
        >>> space = Net()
        >>> list(search_space(space)), space.scale.factor, space.freeze({'f': 3}).scale.factor
        (['f'], 1, 3)
    """

    _bound_type: ClassVar[type[nn.Module] | None] = None
    """The ``torch.nn`` class a fixed build returns (``wraps=``); None: the class itself."""

    def __init_subclass__(cls, wraps: type[nn.Module] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if wraps is not None:
            if not (isinstance(wraps, type) and issubclass(wraps, nn.Module)):
                raise TypeError(
                    f"{cls.__name__}: wraps= must be an nn.Module class (the layer a fixed build "
                    f"returns), got {wraps!r}"
                )
            cls._bound_type = wraps

    @classmethod
    def _construct(cls, *args: Any, **kwargs: Any) -> nn.Module:
        args, kwargs = searched_arguments(args, kwargs)
        frozen_args = tuple(freeze_argument(a) for a in args)
        frozen_kwargs = {k: freeze_argument(v) for k, v in kwargs.items()}
        if current_arch() is not None:
            if cls._bound_type is not None:
                return cls._bound_type(*frozen_args, **frozen_kwargs)
            fixed: nn.Module = type.__call__(cls, *frozen_args, **frozen_kwargs)
            return fixed  # no choices recorded: a fixed module has none
        module: nn.Module = type.__call__(cls, *frozen_args, **frozen_kwargs)
        module.__dict__["_nasx_choices"] = choices_in(args, kwargs)
        module.__dict__["_nasx_args"] = (args, kwargs)
        return module

    def choices(self) -> list[Choice]:
        return list(self.__dict__.get("_nasx_choices", []))

    @property
    def trace_args(self) -> tuple[Any, ...]:
        """The positional constructor arguments, choices included."""
        return tuple(self.__dict__.get("_nasx_args", ((), {}))[0])

    @property
    def trace_kwargs(self) -> dict[str, Any]:
        """The keyword constructor arguments, choices included."""
        return dict(self.__dict__.get("_nasx_args", ((), {}))[1])

    @property
    def args(self) -> dict[str, Any]:
        """The constructor's arguments by name, choices and defaults included (NNI's ``args``)."""
        init = self._bound_type if self._bound_type is not None else type(self).__init__
        sig = inspect.signature(init)
        params = list(sig.parameters.values())
        if self._bound_type is None:  # an __init__: skip self
            sig = sig.replace(parameters=params[1:])
        bound = sig.bind(*self.trace_args, **self.trace_kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def freeze(self, sample: dict[str, Any]) -> nn.Module:
        """The module ``sample`` (an arch) selects, newly built (NNI's ``freeze``: a
        parametrized layer's weights depend on its arguments, so they start afresh)."""
        with model_context(sample, strict=False):
            module: nn.Module = type(self)(*self.trace_args, **self.trace_kwargs)
        return module
