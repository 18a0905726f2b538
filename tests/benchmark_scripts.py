"""Import a script of ``benchmarks/`` in a test, as the module its command line runs.

>>> with benchmark_module("screening_bound.py") as bench:
...     callable(bench.main)
True
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@contextmanager
def benchmark_module(filename: str) -> Iterator[ModuleType]:
    """``benchmarks/<filename>`` imported under its own name plus ``_bench``, with ``benchmarks/``
    on the path while it is in use (scripts import their sibling benchmarks) and the module in
    ``sys.modules`` (dataclasses look their module up there); both undone afterwards."""
    name = f"{Path(filename).stem}_bench"
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / filename)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)
        sys.path.remove(str(BENCHMARKS))
