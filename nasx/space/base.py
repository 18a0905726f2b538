"""MutableModule and ModelSpace: the two module base classes of a search space.

One small metaclass hook decides what a constructor call returns. It is the only construction
magic in nasx, and it exists for one reason: under :func:`model_context`, ``LayerChoice([...])``
must *be* the chosen module (and ``Repeat(...)`` a plain ``nn.Sequential``), so the rebuilt model
holds no search machinery, matches a hand-written model parameter for parameter, and scripts or
exports like one. Everything else is ordinary ``nn.Module`` code. (Why it stays rather than an
explicit ``build(arch)``: CONTRIBUTING.md, "Decisions". The build and freeze path as a whole:
:mod:`nasx.space.state`.)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import torch.nn as nn

from .base_space import BaseModelSpace
from .choice import Choice
from .context import current_arch, model_context
from .errors import InvalidArchError
from .expression import Mutable
from .state import BuildState, building, current, space_construction


@dataclass
class SpaceRecord:
    """What a space's construction leaves on it for the search form and for rebuilding it.

    Kept as a plain attribute (``space._nasx_record``), not a buffer: a rebuilt model ignores it.
    """

    args: tuple[Any, ...]
    kwargs: dict[str, Any]  # includes label_prefix, so a rebuild uses the same labels
    value_choices: list[Choice] = field(default_factory=list)


class _ConstructionHook(type):  # nn.Module's metaclass is `type`
    """Metaclass: ``Cls(*args)`` calls ``Cls._construct(*args)``, which normally builds ``Cls``."""

    _construct: Callable[..., Any]  # defined by MutableModule and ModelSpace

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._construct(*args, **kwargs)

    @property
    def __signature__(cls) -> inspect.Signature:
        # inspect.signature(cls) would otherwise report __call__'s (*args, **kwargs); a metaclass
        # property answers on classes only, so instances keep forward's signature.
        try:  # the annotations as objects, as for any function (not the strings of the source)
            sig = inspect.signature(cls.__init__, eval_str=True)  # type: ignore[misc]
        except (NameError, AttributeError, TypeError):  # a name imported for type checking only
            sig = inspect.signature(cls.__init__)  # type: ignore[misc]  # the class's own __init__
        params = list(sig.parameters.values())[1:]
        if issubclass(cls, ModelSpace) and "label_prefix" not in sig.parameters:
            params = [p for p in params if p.kind is not p.VAR_KEYWORD]
            params.append(
                inspect.Parameter("label_prefix", inspect.Parameter.KEYWORD_ONLY, default=None)
            )
            params += [p for p in sig.parameters.values() if p.kind is p.VAR_KEYWORD]
        return sig.replace(parameters=params)


class MutableModule(nn.Module, metaclass=_ConstructionHook):
    """A module that owns choices (LayerChoice, InputChoice, Repeat, the Mutable* layers).

    Subclasses implement :meth:`choices` (their own decisions) and :meth:`create_fixed_module`,
    which receives the constructor's arguments and returns the plain module an arch selects.

    Example (a choice of activation, written from scratch):
        >>> import torch.nn as nn
        >>> from nasx.space import Categorical, ensure_frozen, model_context, search_space
        >>> class Activation(MutableModule):
        ...     OPTIONS = {'relu': nn.ReLU, 'tanh': nn.Tanh}
        ...     def __init__(self, label):
        ...         super().__init__()
        ...         self.choice = Categorical(list(self.OPTIONS), label=label)
        ...     @classmethod
        ...     def create_fixed_module(cls, label):
        ...         return cls.OPTIONS[ensure_frozen(Categorical(list(cls.OPTIONS), label=label))]()
        ...     def choices(self):
        ...         return [self.choice]
        >>> list(search_space(Activation('act')))
        ['act']
        >>> with model_context({'act': 'tanh'}):
        ...     Activation('act')
        Tanh()
    """

    @classmethod
    def _construct(cls, *args: Any, **kwargs: Any) -> nn.Module:
        # As in NNI, a subclass without its own create_fixed_module is built as it is (it must
        # then read its choices with ensure_frozen, which takes the arch's values).
        own_fixed = getattr(cls.create_fixed_module, "__func__", None) is not getattr(
            MutableModule.create_fixed_module, "__func__", None
        )
        arch = current_arch()
        if arch is not None and own_fixed:
            if _takes_sample(cls):  # NNI's create_fixed_module(cls, sample, *args, **kwargs)
                return cls.create_fixed_module(dict(arch), *args, **kwargs)
            return cls.create_fixed_module(*args, **kwargs)
        module: nn.Module = type.__call__(cls, *args, **kwargs)
        return module

    @classmethod
    def create_fixed_module(cls, *args: Any, **kwargs: Any) -> nn.Module:
        """Build the plain module chosen by the active :func:`model_context` (same arguments as ``__init__``)."""
        raise NotImplementedError(f"{cls.__name__} does not define create_fixed_module")

    def choices(self) -> list[Choice]:
        """The decisions this module owns itself (not those of its submodules)."""
        return []

    def add_mutable(self, mutable: Any) -> Any:
        """Register a choice or expression on this module (NNI's ``add_mutable``); returns it.

        Use it for a decision that leaves no submodule behind, then read its value with
        :func:`~nasx.space.ensure_frozen`. See :func:`add_mutable`.
        """
        return add_mutable(self, mutable)

    def add_constraint(self, rule: Any, label: str | None = None) -> Any:
        """Declare a constraint between choices on this module; see :meth:`ModelSpace.add_constraint`."""
        from .constraints import add_constraint

        return add_constraint(self, rule, label)

    @property
    def mutables(self) -> list[Mutable]:
        """The mutables registered with :meth:`add_mutable`."""
        return list(self.__dict__.get("_nasx_mutables", []))

    def simplify(self, is_leaf: Callable[[Any], bool] | None = None) -> dict[str, Any]:
        """``{label: choice}`` of this module and its submodules (NNI's ``simplify``).
        ``is_leaf(obj)`` is asked about every labelled choice module met walking down (which
        then stands for its whole subtree) and about every registered mutable."""
        from .search_space import simplify_module

        return simplify_module(self, is_leaf)


@functools.cache
def _takes_sample(cls: type[MutableModule]) -> bool:
    """Whether ``cls.create_fixed_module`` is written NNI's way, with the arch first (``sample``)."""
    try:
        params = list(inspect.signature(cls.create_fixed_module).parameters)
    except (TypeError, ValueError):
        return False
    return bool(params) and params[0] == "sample"


def add_mutable(module: nn.Module, mutable: Any) -> Any:
    """Register ``mutable`` (a choice or an expression) on ``module`` so that
    :func:`~nasx.space.search_space` lists its leaf choices; returns ``mutable``.

    A :class:`MutableModule` given here is already a submodule, and a plain value (what
    :func:`~nasx.space.choice` returns) was recorded when it was declared: both are returned
    untouched.

    Example:
        >>> import torch, torch.nn as nn
        >>> from nasx.space import Categorical, ModelSpace, ensure_frozen, model_context, search_space
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         size = self.add_mutable(Categorical([4, 8], label='t'))
        ...         self.token = nn.Parameter(torch.zeros(ensure_frozen(size)))
        >>> list(search_space(Net()))
        ['t']
        >>> with model_context({'t': 8}):
        ...     Net().token.shape
        torch.Size([8])
    """
    from .constraints import Constraint, add_constraint

    if isinstance(mutable, Constraint):  # NNI's add_mutable(ExpressionConstraint(...))
        add_constraint(module, mutable)
        return mutable
    if isinstance(mutable, MutableModule) or not isinstance(mutable, Mutable):
        # A plain value comes from nasx.choice(...) and friends, which already recorded the
        # decision in the space being built: NNI's `self.add_mutable(nni.choice(...))` ports as is.
        return mutable
    module.__dict__.setdefault("_nasx_mutables", []).append(mutable)
    return mutable


def space_record(space: nn.Module) -> SpaceRecord:
    """How ``space`` was constructed (arguments, value choices); see :class:`SpaceRecord`."""
    record = space.__dict__.get("_nasx_record")
    if not isinstance(space, ModelSpace) or not isinstance(record, SpaceRecord):
        raise TypeError(
            f"the model space must be an instance of a nasx.space.ModelSpace subclass, built by "
            f"calling its class; got {type(space).__name__}, which can't be rebuilt from an arch"
        )
    return record


def _refuse_unknown_labels(
    cls: type, args: tuple[Any, ...], kwargs: dict[str, Any], arch: Any, used: set[str]
) -> None:
    """Refuse arch labels that the space ``cls(*args, **kwargs)`` does not have (a typo would
    otherwise build silently). Labels the fixed build did not read are checked against the
    search form's labels: a ``Repeat`` of a smaller depth skips blocks whose labels are valid."""
    unused = [label for label in arch if label not in used]
    if not unused:
        return
    labels = _space_labels(cls, args, kwargs)
    unknown = [label for label in unused if label not in labels]
    if unknown:
        shown = labels[:30] + (["..."] if len(labels) > 30 else [])
        raise InvalidArchError(
            f"unknown label(s) {unknown!r} in the arch given to model_context: {cls.__name__} has "
            f"the labels {shown!r} (model_context(arch, strict=False) allows labels of other spaces)"
        )


_LABELS_CACHE: dict[tuple[Any, ...], list[str]] = {}


def _space_labels(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    """The search-space labels of ``cls(*args, **kwargs)``, built in search form (cached)."""
    from .search_space import search_space

    try:
        key: tuple[Any, ...] | None = (cls, repr(args), repr(sorted(kwargs.items())))
    except Exception:  # an argument without a usable repr: no caching
        key = None
    if key is not None and key in _LABELS_CACHE:
        return _LABELS_CACHE[key]
    with building(**dataclasses.asdict(BuildState())):  # the search form, outside any context
        labels = list(search_space(cls(*args, **kwargs)))
    if key is not None:
        if len(_LABELS_CACHE) >= 32:
            _LABELS_CACHE.pop(next(iter(_LABELS_CACHE)))
        _LABELS_CACHE[key] = labels
    return labels


class ModelSpace(nn.Module, BaseModelSpace, metaclass=_ConstructionHook):
    """Base class of a model space: an ``nn.Module`` whose constructor declares choices.

    It is NNI's :class:`~nasx.space.BaseModelSpace` written as a PyTorch module: its choices are
    found in its submodules and constructor, and :meth:`freeze` builds the plain model of an arch
    with the space's weights (``contains``, ``validate``, ``random``, ``grid``, ``default`` come
    from BaseModelSpace).

    Constructing a ModelSpace gives it a label scope: choices inside are labelled under its
    ``label_prefix`` (a class attribute, or a ``label_prefix=`` keyword to the constructor, which
    is consumed before ``__init__`` runs). Auto-numbered labels restart at every top-level
    construction, so the search form and every rebuilt model agree on labels.

    Example:
        >>> import torch, torch.nn as nn
        >>> from nasx.space import ModelSpace, LayerChoice, search_space
        >>> class Net(ModelSpace):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.conv = LayerChoice([nn.Conv2d(3, 8, 3, padding=1),
        ...                                  nn.Conv2d(3, 8, 5, padding=2)], label='conv')
        ...     def forward(self, x):
        ...         return self.conv(x)
        >>> space = Net()
        >>> list(search_space(space))
        ['conv']
        >>> model = space.freeze({'conv': 1})
        >>> model.conv.kernel_size
        (5, 5)
    """

    label_prefix: str | None = None
    #: The constraints every arch must satisfy, declared on the class. Expressions of choices
    #: are built in ``__init__``, so here they are functions ``f(arch) -> bool`` or filters
    #: (see :mod:`nasx.space.constraints`; ``self.add_constraint(...)`` adds more).
    constraints: ClassVar[Sequence[Any]] = ()
    # TorchScript compiles every property of a scripted module; a rebuilt model is scripted.
    __jit_unused_properties__ = ["mutables", "args", "trace_args", "trace_kwargs", "trace_symbol"]

    def __init_subclass__(cls, label_prefix: str | None = None, **kwargs: Any) -> None:
        # NNI's spelling: ``class Net(ModelSpace, label_prefix='model')``.
        super().__init_subclass__(**kwargs)
        if label_prefix is not None:
            cls.label_prefix = label_prefix

    @classmethod
    def _construct(cls, *args: Any, label_prefix: str | None = None, **kwargs: Any) -> ModelSpace:
        prefix = label_prefix if label_prefix is not None else cls.label_prefix
        top_level = current().seen_labels is None
        with space_construction(prefix) as state:
            space: ModelSpace = type.__call__(cls, *args, **kwargs)
        kwargs = {**kwargs, "label_prefix": label_prefix}
        space.__dict__["_nasx_record"] = SpaceRecord(args, kwargs, state.value_choices or [])
        if top_level and state.arch is not None and state.strict_labels:
            _refuse_unknown_labels(cls, args, kwargs, state.arch, state.used_labels or set())
        return space

    def add_constraint(self, rule: Any, label: str | None = None) -> Any:
        """Declare a constraint between choices (an expression of choices, ``f(arch) -> bool`` or
        a filter such as ``CostFilter``) that every arch of this space must satisfy; returns the
        :class:`~nasx.space.constraints.Constraint`. See :mod:`nasx.space.constraints`."""
        from .constraints import add_constraint

        return add_constraint(self, rule, label)

    def value_choices(self) -> list[Choice]:
        """Value choices (``nasx.choice``, ``ensure_frozen``) this space resolved while constructed."""
        record = self.__dict__.get("_nasx_record")
        return list(record.value_choices) if record is not None else []

    def add_mutable(self, mutable: Any) -> Any:
        """Register a choice or expression on this space (NNI's ``add_mutable``); returns it."""
        return add_mutable(self, mutable)

    @property
    def mutables(self) -> list[Mutable]:
        """The mutables registered with :meth:`add_mutable`."""
        return list(self.__dict__.get("_nasx_mutables", []))

    def simplify(self, is_leaf: Callable[[Any], bool] | None = None) -> dict[str, Any]:
        """``{label: choice}``: the search space as a plain dict (NNI's ``simplify``).
        ``is_leaf(obj)`` is asked about every labelled choice module met walking down (which
        then stands for its whole subtree) and about every registered mutable."""
        from .search_space import simplify_module

        return simplify_module(self, is_leaf)

    def leaf_mutables(self, is_leaf: Callable[[Any], bool]) -> Iterator[Any]:
        """The labelled mutables :meth:`simplify` keeps for ``is_leaf`` (NNI's ``leaf_mutables``)."""
        from .search_space import simplify_module

        yield from simplify_module(self, is_leaf).values()

    def check_contains(self, arch: Mapping[str, Any]) -> InvalidArchError | None:
        """The error :meth:`validate` would raise for ``arch`` (constraints included), or None."""
        from .search_space import search_space

        space = search_space(self)
        try:
            space.check(space.validate(arch))
        except InvalidArchError as error:
            return error
        return None

    def freeze(self, arch: Mapping[str, Any]) -> nn.Module:
        """Validate ``arch`` against this space and build the plain model it selects, with this
        space's weights.

        The model is constructed with the arguments this space was built with under
        :func:`model_context` (so it is exactly the rebuilt model), then takes this space's
        parameters and buffers wherever they correspond (the chosen candidate of a
        ``LayerChoice``, the first blocks of a ``Repeat``, every layer outside choices): a subnet
        taken from a trained space keeps what it learned, as in NNI. A layer whose shape the arch
        changes (a width other than the space's default) is newly initialised, as in NNI. The
        model owns copies: training it leaves the space unchanged. (:mod:`nasx.space.reuse`)

        Example:
            >>> import torch, torch.nn as nn
            >>> from nasx.space import LayerChoice
            >>> class Net(ModelSpace):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.stem = nn.Linear(3, 4)
            ...         self.op = LayerChoice([nn.Linear(4, 2), nn.Linear(4, 2)], label='op')
            ...     def forward(self, x):
            ...         return self.op(self.stem(x))
            >>> space = Net()
            >>> model = space.freeze({'op': 1})
            >>> x = torch.randn(5, 3)
            >>> torch.equal(model(x), space.op[1](space.stem(x)))
            True
        """
        from .reuse import copy_space_weights
        from .search_space import search_space

        arch = search_space(self).validate(arch)
        with model_context(arch):
            record = space_record(self)
            model: nn.Module = type(self)(*record.args, **record.kwargs)
        copy_space_weights(self, model, arch)
        return model

    @classmethod
    def load_searched_model(cls, name: str, *args: Any, **kwargs: Any) -> nn.Module:
        """A pre-searched model of this space (the hub's spaces define it; NNI's name)."""
        raise NotImplementedError(
            f"{cls.__name__} has no pre-searched models; nasx.hub.available_models() lists them"
        )

    # -- NNI's record of the constructor's arguments ---------------------------------------------

    def _trace(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        record = space_record(self)
        prefix = record.kwargs.get("label_prefix")
        kwargs = {k: v for k, v in record.kwargs.items() if k != "label_prefix"}
        extra = {"label_prefix": prefix} if prefix is not None else {}
        sig = inspect.signature(type(self).__init__)
        params = list(sig.parameters.values())[1:]
        if any(p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY) for p in params):
            return record.args, {**kwargs, **extra}  # positional arguments can't be named
        bound = sig.bind(None, *record.args, **kwargs)
        named: dict[str, Any] = {}
        for p in params:
            if p.name in bound.arguments:
                value = bound.arguments[p.name]
                if p.kind is p.VAR_KEYWORD:
                    named.update(value)
                else:
                    named[p.name] = value
        return (), {**named, **extra}

    @property
    def trace_symbol(self) -> type:
        """The class this space was built from (NNI's)."""
        return type(self)

    @property
    def trace_args(self) -> tuple[Any, ...]:
        """Positional constructor arguments that have no name (NNI's; usually empty)."""
        return self._trace()[0]

    @property
    def trace_kwargs(self) -> dict[str, Any]:
        """The constructor's arguments, by name, as given (NNI's ``trace_kwargs``).

        >>> import torch.nn as nn
        >>> class Net(ModelSpace):
        ...     def __init__(self, width, classes=10):
        ...         super().__init__()
        ...         self.fc = nn.Linear(width, classes)
        >>> Net(4).trace_kwargs, Net(4).args
        ({'width': 4}, {'width': 4, 'classes': 10})
        """
        return self._trace()[1]

    @property
    def args(self) -> dict[str, Any]:
        """The constructor's arguments by name, defaults included (NNI's ``ModelSpace.args``).

        A space that sets ``self.args`` itself keeps what it set.
        """
        if "_nasx_user_args" in self.__dict__:
            return cast(dict[str, Any], self.__dict__["_nasx_user_args"])
        args, kwargs = self._trace()
        if args:
            raise RuntimeError(
                f"{type(self).__name__}.args: the constructor takes positional-only or *args "
                "arguments, which have no names; read trace_args and trace_kwargs instead"
            )
        params = list(inspect.signature(type(self).__init__).parameters.values())[1:]
        ordered = {
            p.name: kwargs[p.name] if p.name in kwargs else p.default
            for p in params
            if p.name in kwargs or p.default is not p.empty
        }
        return {**ordered, **kwargs}  # then **kwargs' own names

    @args.setter
    def args(self, value: Any) -> None:
        self.__dict__["_nasx_user_args"] = value
