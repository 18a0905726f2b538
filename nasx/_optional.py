"""Optional dependencies: import one, or say in one line which extra of nasx installs it.

The core (spaces, strategies, evaluators, experiments) needs only the required dependencies;
each feature below needs its extra (``pip install "nasx[plot]"``), and says so when it is
missing instead of failing with a bare ``ModuleNotFoundError``.

    >>> optional_import("json", "plot", "a test").__name__
    'json'
    >>> try:
    ...     optional_import("no_such_module_xyz", "plot", "drawing a cell")
    ... except MissingExtraError as err:  # an ImportError
    ...     print(err)
    drawing a cell needs no_such_module_xyz, which is not installed: pip install "nasx[plot]"
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from ._errors import NasxError

# The extras of pyproject.toml and the modules each provides (tests/test_packaging.py checks
# that this table and pyproject agree).
EXTRAS: dict[str, tuple[str, ...]] = {
    "plot": ("matplotlib", "graphviz"),
    "dashboard": ("matplotlib",),
    "tensorboard": ("tensorboard",),
    "pandas": ("pandas",),
    "digits": ("sklearn",),
    "ray": ("ray",),
    "tfrecord": ("crc32c",),
    "onnx": ("onnx", "onnxruntime"),
    "detection": ("pycocotools",),
    "lm": ("transformers",),
}


class MissingExtraError(NasxError, ImportError):
    """An optional dependency is not installed; the message names the extra that installs it."""


def optional_import(
    module: str, extra: str, feature: str, package: str | None = None
) -> ModuleType:
    """Import ``module`` for ``feature``, or raise :class:`MissingExtraError` naming ``extra``.

    ``package`` is the optional package itself when ``module`` lives elsewhere (torch's
    ``torch.utils.tensorboard`` needs ``tensorboard``); by default ``module``'s top package.
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; nasx's extras: {sorted(EXTRAS)}")
    top = package or module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        missing = (err.name or top).split(".")[0]  # no name: assume the package itself
        if missing not in (top, module.split(".")[0]):
            raise  # the package is there but broken (one of its own imports failed): say that
        raise MissingExtraError(
            f'{feature} needs {top}, which is not installed: pip install "nasx[{extra}]"',
            name=top,
        ) from None


def is_installed(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
