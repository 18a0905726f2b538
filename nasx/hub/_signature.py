"""Give hub space classes their real constructor signature in ``inspect.signature`` and IDEs.

``ModelSpace``'s metaclass defines ``__call__(*args, **kwargs)``, which ``inspect.signature(cls)``
reports instead of ``__init__``'s parameters. A class-level ``__signature__`` fixes that; as a
descriptor it answers only on the class, so instances keep the usual ``nn.Module`` call signature.
"""
from __future__ import annotations

import inspect


class ConstructorSignature:
    """Descriptor: ``Cls.__signature__`` is ``__init__``'s signature without ``self``.

    Example:
        >>> import inspect, torch.nn as nn
        >>> from nasx.space import ModelSpace
        >>> class Net(ModelSpace):
        ...     __signature__ = ConstructorSignature()
        ...     def __init__(self, width=8):
        ...         super().__init__()
        ...     def forward(self, x):
        ...         return x
        >>> str(inspect.signature(Net))
        '(width=8)'
        >>> str(inspect.signature(Net().forward))
        '(x)'
    """

    def __get__(self, obj: object, cls: type) -> inspect.Signature:
        if obj is not None:  # an instance: let inspect fall back to forward/__call__
            raise AttributeError("__signature__")
        sig = inspect.signature(cls.__init__)
        return sig.replace(parameters=list(sig.parameters.values())[1:])
