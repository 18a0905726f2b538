"""Timing helper shared by the benchmark scripts (run as ``python benchmarks/<name>.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall-clock seconds of ``repeats`` calls of ``fn``, and the last call's result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result
