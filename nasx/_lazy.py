"""Lazy package attributes (PEP 562): names resolve to their defining module on first access.

Keeps ``import nasx`` and ``import nasx.strategy`` cheap: Lightning, Optuna and the hub load
only when a name that needs them is used.

    >>> ns = {}
    >>> getattr_, dir_ = lazy_attributes("xml", {"sqrt": "math"}, ns, submodules=("dom",))
    >>> getattr_("sqrt")(9.0), getattr_("dom").__name__, ns["sqrt"](4.0)
    (3.0, 'xml.dom', 2.0)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_attributes(
    package: str,
    names: Mapping[str, str],
    namespace: dict[str, Any],
    submodules: Iterable[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module-level ``__getattr__`` and ``__dir__`` for ``package``.

    ``names`` maps a public name to the module that defines it; ``submodules`` are names of
    ``package``'s own submodules, returned as modules. A resolved value is cached in
    ``namespace`` (the package's ``globals()``), so later lookups are plain attribute reads.
    """
    submodules = tuple(submodules)

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name]), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", [*names, *submodules]))

    return __getattr__, __dir__
