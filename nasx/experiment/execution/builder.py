"""ModelBuilder: rebuilds a space's models from archs, in whatever process runs the trial.

Its own module because trials (:mod:`~nasx.experiment.execution.runner`) and kept weights
(:mod:`~nasx.experiment.storage.weights`) both rebuild models, and neither should import the other for it.

    >>> import torch.nn as nn
    >>> from nasx.space import ModelSpace, choice
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(4, choice('width', [8, 16]))
    >>> ModelBuilder.from_space(Net())({'width': 16}).fc
    Linear(in_features=4, out_features=16, bias=True)
"""

from __future__ import annotations

from typing import Any

import torch.nn as nn

from nasx.space import BaseModelSpace, ModelSpace, model_context
from nasx.space.base import space_record

__all__ = ["ModelBuilder"]


class ModelBuilder:
    """Rebuilds models of a space from archs: the space's class and constructor arguments.

    Pickles small (no weights): the class by reference when importable, by value (cloudpickle)
    when it lives in ``__main__``. A space written NNI's way (a :class:`~nasx.space.BaseModelSpace`
    that is not a ModelSpace) builds its models itself: the builder keeps it (``frozen_from``)
    and calls its ``freeze(arch)``.
    """

    def __init__(
        self,
        space_cls: type[Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        frozen_from: BaseModelSpace | None = None,
    ):
        self.space_cls = space_cls
        self.args = args
        self.kwargs = kwargs
        self.frozen_from = frozen_from

    @classmethod
    def from_space(cls, space: Any) -> ModelBuilder:
        if isinstance(space, BaseModelSpace) and not isinstance(space, ModelSpace):
            return cls(type(space), (), {}, frozen_from=space)
        if not isinstance(space, ModelSpace) or "_nasx_record" not in space.__dict__:
            raise TypeError(
                f"the model space must be an instance of a nasx.space.ModelSpace subclass, got "
                f"{type(space).__name__}; subclass ModelSpace so trials can rebuild it from an arch"
            )
        record = space_record(space)
        return cls(type(space), record.args, record.kwargs)

    def __call__(self, arch: dict[str, Any]) -> nn.Module:
        if self.frozen_from is not None:
            built: nn.Module = self.frozen_from.freeze(arch)
            return built
        with model_context(arch):
            model: nn.Module = self.space_cls(*self.args, **self.kwargs)
            return model
