"""Checking an object against a seam's Protocol, with an error that names what is missing.

``isinstance(obj, SomeProtocol)`` answers yes or no; a user who passed the wrong object (or
misspelled a method) needs to read *which* members are missing. Every seam of nasx (multi-trial
strategy, one-shot strategy, evaluator, what a one-shot strategy needs from its evaluator) is a
``typing.Protocol``; this module lists a protocol's members and names those an object lacks.

    >>> from typing import Protocol
    >>> class Greeter(Protocol):
    ...     name: str
    ...     def greet(self) -> str: ...
    >>> protocol_members(Greeter)
    ['greet', 'name']
    >>> class Half:
    ...     name = 'x'
    >>> missing_members(Half(), Greeter)
    ['greet']
    >>> require(Half(), Greeter, 'the greeter')
    Traceback (most recent call last):
    ...
    TypeError: the greeter must implement Greeter, but Half has no greet (Greeter needs: greet, name)
"""

from __future__ import annotations

from typing import Any

__all__ = ["missing_members", "protocol_members", "require"]

# Names every class body or Protocol machinery defines: never part of a seam's contract.
_IGNORED = {"__module__", "__qualname__", "__doc__", "__annotations__", "__dict__", "__weakref__"}


def protocol_members(protocol: type) -> list[str]:
    """The public methods and attributes a Protocol declares (its own and its Protocol bases')."""
    names: set[str] = set()
    for base in protocol.__mro__:
        if base is object or base.__name__ in ("Protocol", "Generic"):
            continue
        for name in [*vars(base), *vars(base).get("__annotations__", {})]:
            if not name.startswith("_") and name not in _IGNORED:
                names.add(name)
    return sorted(names)


def missing_members(obj: Any, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks (methods must also be callable)."""
    missing = []
    for name in protocol_members(protocol):
        declared = _declared(protocol, name)
        if not hasattr(obj, name) or (callable(declared) and not callable(getattr(obj, name))):
            missing.append(name)
    return missing


def require(obj: Any, protocol: type, role: str) -> None:
    """Raise TypeError naming the members of ``protocol`` that ``obj`` (playing ``role``) lacks."""
    missing = missing_members(obj, protocol)
    if missing:
        raise TypeError(
            f"{role} must implement {protocol.__name__}, but {type(obj).__name__} has no "
            f"{', '.join(missing)} ({protocol.__name__} needs: "
            f"{', '.join(protocol_members(protocol))})"
        )


def _declared(protocol: type, name: str) -> Any:
    for base in protocol.__mro__:
        if name in vars(base):
            return vars(base)[name]
    return None  # an annotation-only attribute
