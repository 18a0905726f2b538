"""NNI's ``nni.trace`` and traced ``DataLoader``: objects that remember how they were made.

NNI needs them to ship datasets and loaders to trial processes; nasx pickles by reference or by
value (cloudpickle) and needs neither, so both exist for porting: a script calling
``nni.trace(CIFAR10)(root=...)`` or ``nni.nas.evaluator.pytorch.DataLoader(...)`` runs after the
import change. Each traced object records ``trace_symbol`` (what was called), ``trace_args`` and
``trace_kwargs``, as NNI's do.

    >>> import torch
    >>> from torch.utils.data import TensorDataset
    >>> data = TensorDataset(torch.zeros(8, 2))
    >>> loader = DataLoader(data, batch_size=4)
    >>> loader.trace_kwargs['batch_size'], len(loader), isinstance(loader, torch.utils.data.DataLoader)
    (4, 2, True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch.utils.data

from . import hparams

__all__ = ["DataLoader", "trace", "is_traced"]

T = TypeVar("T")


def _record(obj: Any, symbol: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Attach the call that made ``obj``; objects without a ``__dict__`` (ints, tuples) stay bare."""
    try:
        obj.trace_symbol, obj.trace_args, obj.trace_kwargs = symbol, list(args), dict(kwargs)
    except (AttributeError, TypeError):
        pass


class _TracedClass:
    """``trace(cls)``: calling it builds a plain ``cls`` instance and records the call.

    The instance is of ``cls`` itself (not a subclass), so it pickles, compares and prints as
    usual; :func:`trace` returns the same object for the same class.
    """

    def __init__(self, cls: type) -> None:
        self.cls = cls
        functools.update_wrapper(self, cls, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _traced_call(self.cls, args, kwargs)

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, self.cls)

    def __repr__(self) -> str:
        return f"trace({self.cls.__module__}.{self.cls.__qualname__})"

    def __reduce__(self) -> tuple[Any, ...]:
        return trace, (self.cls,)


def _traced_call(symbol: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``symbol(*args, **kwargs)``, recorded. With choices among the arguments (hyperparameters
    searched with the architecture: :mod:`nasx.evaluator.hparams`) the object is made with their
    defaults, and each trial makes it again with its own values. A model space's choices are its
    own (NNI's ``@nni.trace`` on a ``BaseModelSpace`` subclass): it gets them as they are."""
    if _is_space_class(symbol) or not hparams.contains_choices((args, kwargs)):
        obj = symbol(*args, **kwargs)
        _record(obj, symbol, args, kwargs)
        return obj
    plain_args, plain_kwargs = hparams.with_defaults(args, kwargs)
    obj = symbol(*plain_args, **plain_kwargs)
    _record(obj, symbol, args, kwargs)
    if hparams._recorded_call(obj) is None:
        raise TypeError(
            f"{getattr(symbol, '__qualname__', symbol)!r} returned a {type(obj).__name__}, which "
            "cannot remember its arguments, so the choices among them cannot be searched"
        )
    hparams.check_choices(obj)
    return obj


def _is_space_class(symbol: Any) -> bool:
    from nasx.space import BaseModelSpace

    return isinstance(symbol, type) and issubclass(symbol, BaseModelSpace)


@functools.cache
def _traced_class(cls: type) -> _TracedClass:
    return _TracedClass(cls)


def trace(cls_or_func: Callable[..., T]) -> Callable[..., T]:
    """NNI's ``nni.trace``: wrap a class or function so that what it returns records its call.

    ``trace(CIFAR10)(root='data', train=False)`` is a ``CIFAR10`` whose ``trace_kwargs`` are
    ``{'root': 'data', 'train': False}``. nasx does not need tracing (it pickles objects by value
    when they are not importable); it is here so NNI scripts run unchanged.

    Example:
        >>> class Data:
        ...     def __init__(self, root, train=True):
        ...         self.root = root
        >>> d = trace(Data)('data', train=False)
        >>> type(d).__name__, d.trace_args, d.trace_kwargs
        ('Data', ['data'], {'train': False})
        >>> trace(Data) is trace(Data), isinstance(d, trace(Data))
        (True, True)
    """
    if isinstance(cls_or_func, _TracedClass) or getattr(cls_or_func, "_nasx_traced", False):
        return cls_or_func
    if isinstance(cls_or_func, type):
        return _traced_class(cls_or_func)
    if not callable(cls_or_func):
        raise TypeError(f"trace() takes a class or a function, got {type(cls_or_func).__name__}")

    @functools.wraps(cls_or_func)
    def traced(*args: Any, **kwargs: Any) -> T:
        out: T = _traced_call(cls_or_func, args, kwargs)
        return out

    traced._nasx_traced = True  # type: ignore[attr-defined]  # a marker on a function object
    return traced


def is_traced(obj: Any) -> bool:
    """True when ``obj`` was made by a traced call (it has ``trace_symbol``)."""
    return hasattr(obj, "trace_symbol") and hasattr(obj, "trace_kwargs")


class DataLoader(torch.utils.data.DataLoader):
    """NNI's traced ``DataLoader``: a ``torch.utils.data.DataLoader`` that records its arguments.

    Same arguments and behaviour as torch's; ``trace_args``/``trace_kwargs`` hold what it was
    given (NNI re-creates loaders from them in trial processes; nasx pickles the loader).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # A choice among the arguments (batch_size=Categorical([32, 64], label='bs')): built with
        # the defaults; each trial builds a loader with its own value (nasx.evaluator.hparams).
        plain_args, plain_kwargs = hparams.with_defaults(args, kwargs)
        super().__init__(*plain_args, **plain_kwargs)
        # torch's DataLoader refuses setting some attributes after init; these are new names
        self.trace_symbol = torch.utils.data.DataLoader
        self.trace_args = list(args)
        self.trace_kwargs = dict(kwargs)
        if hparams.contains_choices((args, kwargs)):
            hparams.check_choices(self)
