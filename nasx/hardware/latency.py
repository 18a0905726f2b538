"""Latency of a model on the current device: warm-up, repetitions, median and spread.

One repetition is one forward pass of a batch under ``torch.no_grad`` in eval mode. On
CUDA the device is synchronised before the clock starts and before it stops, so the time covers
the kernels and not only their launch. On CPU the number of threads is fixed for the measurement
(``threads=``, default 1: a figure that does not depend on what else runs on the machine) and
restored afterwards. The model can run as it is (``backend='eager'``), scripted
(``'torchscript'``) or exported to ONNX and run by ONNX Runtime (``'onnxruntime'``, needs the
``onnx`` and ``onnxruntime`` packages) for a deployment-like figure.

    >>> import torch.nn as nn
    >>> r = measure_latency(nn.Linear(8, 4), (8,), batch_size=2, warmup=1, repeats=5)
    >>> r.repeats, r.batch_size, r.input_shape, r.backend, r.median_ms > 0
    (5, 2, (8,), 'eager', True)
"""

from __future__ import annotations

import contextlib
import dataclasses
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

BACKENDS = ("eager", "torchscript", "onnxruntime")


@dataclass(frozen=True)
class LatencyResult:
    """What :func:`measure_latency` measured; times in milliseconds for one batch.

    Attributes:
        median_ms: the median over the repetitions (the figure to report).
        mean_ms, std_ms, min_ms, max_ms: the rest of the distribution.
        iqr_ms: interquartile range (the spread to report next to the median).
        samples_ms: every repetition, in order.
        device: :func:`device_name` of where it ran; backend, batch_size, input_shape, threads:
            how it ran (``threads`` is None on CUDA).
    """

    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    iqr_ms: float
    samples_ms: tuple[float, ...]
    device: str
    backend: str
    batch_size: int
    input_shape: tuple[int, ...]
    threads: int | None

    @property
    def repeats(self) -> int:
        return len(self.samples_ms)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable fields (without the samples)."""
        d = dataclasses.asdict(self)
        d.pop("samples_ms")
        d["input_shape"] = list(self.input_shape)
        return d

    def __str__(self) -> str:
        return (
            f"{self.median_ms:.3f} ms (IQR {self.iqr_ms:.3f}, n={self.repeats}) "
            f"batch {self.batch_size} x {tuple(self.input_shape)} on {self.device} [{self.backend}]"
        )


def device_name(device: str | torch.device | None = None, threads: int | None = None) -> str:
    """A readable key for latency tables: the processor or GPU model, and the CPU threads used.

    >>> device_name('cpu', threads=1).startswith('cpu:') and device_name('cpu', 1).endswith('/1t')
    True
    """
    dev = torch.device(device if device is not None else "cpu")
    if dev.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(dev)}"
    cpu = _cpu_model() or platform.machine() or "unknown"
    return f"cpu:{cpu}/{threads if threads is not None else torch.get_num_threads()}t"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


@contextlib.contextmanager
def cpu_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(n)`` (None: leave it), restored afterwards."""
    if n is None:
        yield
        return
    if n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def measure_latency(
    model: nn.Module,
    input_shape: Sequence[int],
    *,
    batch_size: int = 1,
    device: str | torch.device | None = None,
    warmup: int = 10,
    repeats: int = 50,
    threads: int | None = 1,
    backend: str = "eager",
    dtype: torch.dtype = torch.float32,
    clock: str = "wall",
) -> LatencyResult:
    """Time the forward pass of ``model`` on a ``[batch_size, *input_shape]`` batch.

    Args:
        model: the model (moved to ``device`` and put in eval mode for the measurement; its
            training mode is restored, its device is not).
        input_shape: one sample's shape, e.g. ``(3, 224, 224)``.
        batch_size: samples per forward pass.
        device: where to run; default the device of the model's first parameter (CPU without).
        warmup: untimed passes first (caches, allocator, cuDNN autotuning, JIT).
        repeats: timed passes; the median and the spread are taken over them.
        threads: CPU threads during the measurement (``torch.set_num_threads``); None leaves the
            setting alone. Ignored on CUDA.
        backend: ``'eager'``, ``'torchscript'`` (``torch.jit.trace``) or ``'onnxruntime'``.
        dtype: the input's floating type.
        clock: ``'wall'`` (elapsed time, what a user waits) or ``'thread'`` (CPU time of the
            calling thread: on a machine shared with other work it leaves out the time the
            thread waited for a core; CPU only, with ``threads=1``, eager or TorchScript).

    Example:
        >>> import torch.nn as nn
        >>> r = measure_latency(nn.Conv2d(3, 8, 3), (3, 16, 16), warmup=1, repeats=3)
        >>> r.min_ms <= r.median_ms <= r.max_ms
        True
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if batch_size < 1 or repeats < 1 or warmup < 0:
        raise ValueError(
            f"need batch_size >= 1, repeats >= 1, warmup >= 0; got {batch_size}, {repeats}, {warmup}"
        )
    if clock not in ("wall", "thread"):
        raise ValueError(f"clock must be 'wall' or 'thread', got {clock!r}")
    shape = tuple(int(s) for s in input_shape)
    if device is None:
        device = next((p.device for p in model.parameters()), torch.device("cpu"))
    dev = torch.device(device)
    on_cuda = dev.type == "cuda"
    used_threads = (
        None if on_cuda else (threads if threads is not None else torch.get_num_threads())
    )
    if clock == "thread" and (on_cuda or used_threads != 1 or backend == "onnxruntime"):
        raise ValueError(
            "clock='thread' counts the calling thread's CPU time: it needs a CPU device, "
            "threads=1 and the eager or torchscript backend"
        )
    now = time.perf_counter if clock == "wall" else time.thread_time
    was_training = model.training
    model.eval()
    try:
        with cpu_threads(None if on_cuda else threads), torch.no_grad():
            x = torch.randn(batch_size, *shape, dtype=dtype, device=dev)
            run = _runner(model.to(dev), x, backend)
            sync = (lambda: torch.cuda.synchronize(dev)) if on_cuda else (lambda: None)
            for _ in range(warmup):
                run()
            sync()
            samples = []
            for _ in range(repeats):
                sync()
                start = now()
                run()
                sync()
                samples.append((now() - start) * 1e3)
    finally:
        model.train(was_training)
    return summarize(
        samples, device_name(dev, used_threads), backend, batch_size, shape, used_threads
    )


def summarize(
    samples_ms: Sequence[float],
    device: str = "?",
    backend: str = "eager",
    batch_size: int = 1,
    input_shape: Sequence[int] = (),
    threads: int | None = None,
) -> LatencyResult:
    """A :class:`LatencyResult` from raw timings (median, quartiles, spread).

    >>> r = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    >>> r.median_ms, r.iqr_ms, r.min_ms, r.max_ms
    (3.0, 2.0, 1.0, 100.0)
    """
    s = [float(v) for v in samples_ms]
    if not s:
        raise ValueError("no timings to summarize")
    if len(s) > 1:
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
        std = statistics.stdev(s)
    else:
        q1 = q3 = s[0]
        std = 0.0
    return LatencyResult(
        median_ms=statistics.median(s),
        mean_ms=statistics.fmean(s),
        std_ms=std,
        min_ms=min(s),
        max_ms=max(s),
        iqr_ms=q3 - q1,
        samples_ms=tuple(s),
        device=device,
        backend=backend,
        batch_size=batch_size,
        input_shape=tuple(int(v) for v in input_shape),
        threads=threads,
    )


def _runner(model: nn.Module, x: torch.Tensor, backend: str) -> Callable[[], Any]:
    if backend == "eager":
        return lambda: model(x)
    if backend == "torchscript":
        with warnings_off():
            traced = torch.jit.trace(model, x, check_trace=False)
            traced = torch.jit.freeze(traced)
        return lambda: traced(x)
    return _onnxruntime_runner(model, x)


@contextlib.contextmanager
def warnings_off() -> Iterator[None]:
    """Silence the tracer's and exporter's warnings (deprecations, constant folding) in a block."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _onnxruntime_runner(model: nn.Module, x: torch.Tensor) -> Callable[[], Any]:
    from nasx._optional import optional_import

    optional_import("onnx", "onnx", "backend='onnxruntime'")
    ort = optional_import("onnxruntime", "onnx", "backend='onnxruntime'")
    if x.device.type != "cpu":
        raise ValueError("backend='onnxruntime' measures on CPU; pass device='cpu'")
    path = Path(tempfile.mkdtemp(prefix="nasx_latency_")) / "model.onnx"
    with warnings_off(), torch.no_grad():
        torch.onnx.export(model, (x,), str(path), input_names=["input"], dynamo=False)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = torch.get_num_threads()
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    feed = {"input": x.cpu().numpy()}
    return lambda: session.run(None, feed)
