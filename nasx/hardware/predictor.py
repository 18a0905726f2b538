"""A latency predictor: a lookup table of per-block latencies, measured once per device.

As in ProxylessNAS and FBNet, a model's latency is predicted as the sum of the latencies of its
blocks, each measured on its own for the input shape it gets in the model. The table is keyed by
a block's signature (its class, its ``repr`` and plain attributes such as a residual flag) and
its input shape, so every arch sharing a block shares the measurement. A missing entry is
measured the first time it is needed (on the device the table is for) and kept; ``save`` and
``load`` keep tables in a JSON file with one section per device (:func:`device_name`), so a
search on another machine does not mix them up.

    >>> import torch.nn as nn
    >>> table = LatencyTable(repeats=3, warmup=1)
    >>> net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    >>> ms = table.predict(net, (8,))
    >>> len(table), ms == sum(table.entries.values())
    (3, True)

A sum of blocks timed one by one runs low against the whole model: in a model each block finds
its weights and input out of cache and pays the framework's dispatch between blocks, which a
block repeated alone does not (``benchmarks/latency_predictor.results.md`` measures both).
:meth:`LatencyTable.calibrate` fits ``measured = scale * sum + offset_ms`` on a few archs
measured whole (a robust line through them), and :meth:`~LatencyTable.predict` applies it.

``benchmarks/latency_predictor.py`` reports the predictor's error against measured latency over
a sample of MnasNet archs, with and without the calibration.
"""

from __future__ import annotations

import copy
import json
import os
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

from .._errors import NasxError
from .latency import device_name, measure_latency
from .shapes import ShapeTrace

FORMAT = "nasx-latency-table/1"


class MissingEntryError(NasxError, KeyError):
    """The table has no latency for a block and was told not to measure it."""


class LatencyTable:
    """Per-block latencies of one device; ``predict(model, input_shape)`` sums them.

    Args:
        device: the device measured on (default CPU); the table's key is
            :func:`~nasx.hardware.latency.device_name` of it and ``threads``.
        block_types: module classes timed as one block (e.g. ``(MnasLayer,)``); modules outside
            any block are timed leaf by leaf. Default: leaves only (conv, norm, activation, ...),
            which misses work done in ``forward`` outside modules (a residual addition).
        batch_size, threads, warmup, repeats: how each block is measured
            (:func:`~nasx.hardware.latency.measure_latency`).
        measure_missing: measure a block the table lacks (True) or raise
            :class:`MissingEntryError` (False: prediction only, e.g. on another machine).
        statistic: what an entry keeps of a block's timings, ``'median'`` or ``'min'``.
        clock: ``'wall'`` or ``'thread'`` (CPU time of the measuring thread, for CPU tables with
            one thread on a machine shared with other work; see ``measure_latency``).

    Example:
        >>> import torch.nn as nn
        >>> t = LatencyTable(block_types=(nn.Sequential,), repeats=2, warmup=0)
        >>> [key.split('@')[1] for key, _, _ in t.blocks(nn.Sequential(nn.Linear(4, 2)), (4,))]
        ['1x4']
    """

    shape_only = True  # works on models built on the meta device (shapes only)

    def __init__(
        self,
        device: str | torch.device | None = None,
        *,
        block_types: Sequence[type[nn.Module]] = (),
        batch_size: int = 1,
        threads: int | None = 1,
        warmup: int = 5,
        repeats: int = 20,
        measure_missing: bool = True,
        statistic: str = "median",
        clock: str = "wall",
    ):
        self.clock = clock
        if statistic not in ("median", "min"):
            raise ValueError(f"statistic must be 'median' or 'min', got {statistic!r}")
        self.statistic = statistic
        self.device = torch.device(device if device is not None else "cpu")
        self.block_types = tuple(block_types)
        self.batch_size = batch_size
        self.threads = None if self.device.type == "cuda" else threads
        self.warmup, self.repeats = warmup, repeats
        self.measure_missing = measure_missing
        self.entries: dict[str, float] = {}
        # measured = scale * (sum of blocks) + offset_ms, fitted by calibrate(); identity until then
        self.scale, self.offset_ms, self.calibrated_on = 1.0, 0.0, 0
        self.measured = 0  # blocks measured by this object (not loaded)
        self._trace = ShapeTrace()  # output shapes of blocks seen, so each runs once

    @property
    def device_key(self) -> str:
        """The section of the JSON file this table reads and writes."""
        return device_name(self.device, self.threads)

    def __len__(self) -> int:
        return len(self.entries)

    def __call__(self, model: nn.Module, input_shape: Sequence[int]) -> float:
        return self.predict(model, input_shape)

    # ------------------------------------------------------------------ prediction
    def blocks(
        self, model: nn.Module, input_shape: Sequence[int]
    ) -> list[tuple[str, nn.Module, tuple[int, ...]]]:
        """``(key, module, input shape with batch)`` for every block call of one forward pass."""
        calls: list[tuple[str, nn.Module, tuple[int, ...]]] = []
        self._trace.run(
            model,
            (self.batch_size, *input_shape),
            units=self._units(model),
            on_call=lambda key, m, shape: calls.append((key, m, shape)),
        )
        return calls

    def predict(self, model: nn.Module, input_shape: Sequence[int]) -> float:
        """Predicted milliseconds of one forward pass of a ``[batch_size, *input_shape]`` batch:
        ``scale * block_sum + offset_ms`` (the sum itself until :meth:`calibrate` ran).

        ``model`` may live on the meta device (built by :func:`~nasx.hardware.cost.arch_cost`);
        blocks the table lacks are then materialised on the table's device to be measured.
        """
        return self.scale * self.block_sum(model, input_shape) + self.offset_ms

    def block_sum(self, model: nn.Module, input_shape: Sequence[int]) -> float:
        """The sum of the table's entries over the blocks of one forward pass (uncalibrated)."""
        total = 0.0
        for key, module, shape in self.blocks(model, tuple(input_shape)):
            if key not in self.entries:
                if not self.measure_missing:
                    raise MissingEntryError(
                        f"latency table for {self.device_key} has no entry {key!r}; "
                        "measure it on that device (measure_missing=True)"
                    )
                self.entries[key] = self._measure(module, shape)
                self.measured += 1
            total += self.entries[key]
        return total

    def fill(self, space: Any, archs: Iterable[dict[str, Any]], input_shape: Sequence[int]) -> int:
        """Measure the blocks of ``archs`` of ``space`` the table lacks; returns how many."""
        from .cost import build_on

        before = self.measured
        for arch in archs:
            self.predict(build_on(space, arch, "meta"), input_shape)
        return self.measured - before

    def calibrate(
        self,
        space: Any,
        archs: Sequence[dict[str, Any]],
        input_shape: Sequence[int],
        *,
        measured: Sequence[float] | None = None,
        rounds: int = 3,
    ) -> tuple[float, float]:
        """Fit ``measured = scale * block_sum + offset_ms`` on ``archs`` of ``space``; returns
        ``(scale, offset_ms)`` and uses them in :meth:`predict` from then on (and in ``save``).

        ``measured``: the archs' whole-model latencies if already known, else each is measured
        here as the table measures blocks (``rounds`` interleaved rounds, the table's settings). The
        line is Theil-Sen's (median of the pairwise slopes, then the median offset): one arch
        timed during a burst of load does not tilt it. One arch fits a scale alone; a fit that
        would make a slope <= 0 (archs too alike to tell apart) or a negative offset (a fixed
        cost below zero, which would predict negative latencies for smaller archs) falls back to
        a scale alone too.

        Example:
            >>> import torch.nn as nn
            >>> t = LatencyTable()
            >>> t.entries = {'Linear(in_features=4, out_features=4, bias=True)@1x4': 1.0}
            >>> class Space:  # two 'archs': one or two Linear layers
            ...     def freeze(self, arch):
            ...         return nn.Sequential(*[nn.Linear(4, 4) for _ in range(arch['n'])])
            >>> t.calibrate(Space(), [{'n': 1}, {'n': 2}], (4,), measured=[1.5, 2.7])
            (1.2, 0.3)
            >>> round(t.predict(nn.Sequential(*[nn.Linear(4, 4)] * 3), (4,)), 6)
            3.9
        """
        if not archs:
            raise ValueError("calibrate needs at least one arch")
        from .cost import build_on

        if measured is None:
            measured = measure_archs(space, archs, input_shape, like=self, rounds=rounds)
        if len(measured) != len(archs):
            raise ValueError(f"{len(measured)} measured latencies for {len(archs)} archs")
        sums = [self.block_sum(build_on(space, a, "meta"), input_shape) for a in archs]
        ys = [float(m) for m in measured]
        slopes = [
            (ys[j] - ys[i]) / (sums[j] - sums[i])
            for i in range(len(sums))
            for j in range(i + 1, len(sums))
            if sums[j] != sums[i]
        ]
        scale = statistics.median(slopes) if slopes else 0.0
        offset = statistics.median(y - scale * x for x, y in zip(sums, ys)) if scale > 0 else 0.0
        if scale <= 0 or offset < 0:
            # a negative fixed overhead is noise (a few archs timed on a busy machine), and it
            # would predict negative latencies for archs smaller than those: through the origin
            scale, offset = statistics.median(y / x for x, y in zip(sums, ys)), 0.0
        self.scale, self.offset_ms = round(scale, 12), round(offset, 12)
        self.calibrated_on = len(archs)
        return self.scale, self.offset_ms

    def _measure(self, module: nn.Module, shape: tuple[int, ...]) -> float:
        block = _materialise(module, self.device)
        result = measure_latency(
            block,
            shape[1:],
            batch_size=shape[0],
            device=self.device,
            warmup=self.warmup,
            repeats=self.repeats,
            threads=self.threads,
            clock=self.clock,
        )
        return result.median_ms if self.statistic == "median" else result.min_ms

    def _units(self, model: nn.Module) -> list[nn.Module]:
        units: list[nn.Module] = []
        inside: set[int] = set()
        for _, m in model.named_modules():
            if id(m) in inside:
                continue
            is_block = bool(self.block_types) and isinstance(m, self.block_types)
            if is_block or not any(True for _ in m.children()):
                units.append(m)
                inside.update(id(d) for d in m.modules())
        return units

    # ------------------------------------------------------------------ files
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write this device's entries into ``path`` (other devices' sections are kept)."""
        p = Path(path)
        data: dict[str, Any] = _read(p) if p.exists() else {"format": FORMAT, "devices": {}}
        data["devices"][self.device_key] = {
            "batch_size": self.batch_size,
            "threads": self.threads,
            "statistic": self.statistic,
            "clock": self.clock,
            "block_types": [f"{t.__module__}.{t.__qualname__}" for t in self.block_types],
            "calibration": {
                "scale": self.scale,
                "offset_ms": self.offset_ms,
                "archs": self.calibrated_on,
            },
            "entries": dict(sorted(self.entries.items())),
        }
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(p)

    def load(self, path: str | os.PathLike[str], missing_ok: bool = True) -> LatencyTable:
        """Read this device's entries from ``path`` (nothing if absent and ``missing_ok``).

        A section measured with another batch size refuses to load (its numbers would be wrong).
        """
        p = Path(path)
        if not p.exists():
            if missing_ok:
                return self
            raise FileNotFoundError(f"no latency table at {p}")
        section = _read(p)["devices"].get(self.device_key)
        if section is None:
            if missing_ok:
                return self
            raise MissingEntryError(
                f"{p} has no table for {self.device_key}; it has {sorted(_read(p)['devices'])}"
            )
        if section.get("statistic", "median") != self.statistic:
            raise ValueError(
                f"{p}: the table for {self.device_key} keeps {section.get('statistic')} times, "
                f"this table {self.statistic}"
            )
        if section.get("clock", "wall") != self.clock:
            raise ValueError(
                f"{p}: the table for {self.device_key} was timed with clock "
                f"{section.get('clock')!r}, this table uses {self.clock!r}"
            )
        if section.get("batch_size") != self.batch_size:
            raise ValueError(
                f"{p}: the table for {self.device_key} was measured at batch size "
                f"{section.get('batch_size')}, this table uses {self.batch_size}"
            )
        self.entries.update({k: float(v) for k, v in section["entries"].items()})
        cal = section.get("calibration", {})
        self.scale = float(cal.get("scale", 1.0))
        self.offset_ms = float(cal.get("offset_ms", 0.0))
        self.calibrated_on = int(cal.get("archs", 0))
        return self


def measure_archs(
    space: Any,
    archs: Sequence[dict[str, Any]],
    input_shape: Sequence[int],
    *,
    like: LatencyTable,
    rounds: int = 3,
) -> list[float]:
    """Whole-model latency of each arch, measured as ``like`` measures blocks (device, batch,
    threads, clock, repetitions, statistic), in ``rounds`` rounds that visit every arch in turn;
    each arch gets the median over the rounds. On a machine shared with other work a burst of
    load then falls on one round of every arch rather than on all rounds of one.

    >>> import torch.nn as nn
    >>> class Space:
    ...     def freeze(self, arch):
    ...         return nn.Linear(4, arch['out'])
    >>> ms = measure_archs(Space(), [{'out': 2}, {'out': 8}], (4,), like=LatencyTable(repeats=3))
    >>> len(ms), all(m > 0 for m in ms)
    (2, True)
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    models = [space.freeze(a).to(like.device) for a in archs]
    per_round: list[list[float]] = [[] for _ in archs]
    for _ in range(rounds):
        for i, model in enumerate(models):
            r = measure_latency(
                model,
                tuple(input_shape),
                batch_size=like.batch_size,
                device=like.device,
                warmup=like.warmup,
                repeats=like.repeats,
                threads=like.threads,
                clock=like.clock,
            )
            per_round[i].append(r.median_ms if like.statistic == "median" else r.min_ms)
    return [statistics.median(v) for v in per_round]


def _materialise(module: nn.Module, device: torch.device) -> nn.Module:
    """A real copy of ``module`` on ``device`` (from a meta module: fresh initialisation)."""
    on_meta = any(t.is_meta for t in [*module.parameters(), *module.buffers()])
    if not on_meta:
        return copy.deepcopy(module).to(device)
    real = copy.deepcopy(module).to_empty(device=device)
    for m in real.modules():
        reset: Callable[[], None] | None = getattr(m, "reset_parameters", None)
        if reset is not None:
            reset()
    return real


def _read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a nasx latency table (expected format {FORMAT!r})")
    return data
