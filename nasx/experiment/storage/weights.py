"""Each trial's trained weights, kept in the experiment directory, and models loaded back from them.

``NasExperiment(..., keep_weights=...)`` keeps the trained model of every trial (``'all'``), of
the ``k`` best (``k`` or ``'top-k'``, ``'best'`` = 1) or of none (``'none'``, the default). After
the process has exited, :func:`load_model` returns such a model, in any process, without
retraining::

    workdir/weights/<id>.pt     torch.save of {state_dict, arch, hparams, space reference, trial,
                                metric}: ``hparams`` are the evaluator's choices the trial trained
                                with ({} without any; files written before they existed read as {})
    workdir/weights/<id>.json   its manifest: size, sha256, metric, arch, hparams: written last, so that a
                                trial's weights exist exactly when its manifest does
    nasx.db, meta 'oneshot'     a one-shot run: the space reference and how the supernet is built
                                (its weights are the search checkpoint, checkpoints/last.ckpt);
                                its rows are the exported archs, whose models are subnets of it

Every file is written to a temporary name, flushed to disk (fsync) and renamed over its final
name, so a kill at any moment leaves the old file or the whole new one. Top-k pruning runs in the
experiment's process after the new trial's weights are committed and its row is stored, and
deletes a manifest before its weights: a crash between the write and the pruning leaves k + 1
kept trials (the next run prunes them), never fewer than the k best.

Where the weights are written: in the local process pool (and sequential execution) the trial's
own process writes them into the workdir, so large state dicts never cross the socket to the
experiment. Ray workers may run on machines that cannot reach the workdir, so there the
serialized weights come back with the trial's result (through Ray's object store, as the trial's
log does) and the experiment writes them: the one path that works on every cluster.

Loading (``load_model``, ``trial_weights``, the one-shot ``load_supernet`` and ``load_subnet``) is
in :mod:`nasx.experiment.results.loading`, which imports this module (not the other way round).
The model is rebuilt from its arch and the space's class and constructor arguments (recorded
when the class is importable and the arguments are Python literals); a space defined in a script's
``__main__`` is passed back as ``model_space=``. Loading uses ``torch.load(weights_only=True)``
after the file's sha256 was checked against its manifest.

    >>> import tempfile, torch, torch.nn as nn
    >>> from nasx.experiment import NasExperiment
    >>> from nasx.space import ModelSpace, choice
    >>> from nasx.strategy import GridSearch
    >>> class Net(ModelSpace):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(2, choice('width', [1, 2, 3]))
    >>> def train(model):  # trains the model it is given, in place, as nasx's evaluators do
    ...     with torch.no_grad():
    ...         model.fc.weight.fill_(0.5)
    ...     return float(model.fc.out_features)
    >>> workdir = tempfile.mkdtemp()
    >>> exp = NasExperiment(Net(), train, GridSearch(shuffle=False), workdir=workdir,
    ...                     keep_weights='best', progress=False)
    >>> exp.run()
    >>> from nasx.experiment import load_model  # (nasx.experiment.results.loading)
    >>> [(w.trial, w.metric) for w in kept_weights(workdir)]
    [(2, 3.0)]
    >>> model = load_model(workdir, 'best', model_space=Net())
    >>> model.fc.out_features, bool((model.fc.weight == 0.5).all())
    (3, True)
    >>> load_model(workdir, 0, model_space=Net())
    Traceback (most recent call last):
    ...
    nasx.experiment.storage.weights.WeightsNotKeptError: trial 0 of ... has no kept weights: the experiment ran with ...
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import io
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

from nasx._errors import NasxError
from nasx.experiment.execution.builder import ModelBuilder
from nasx.experiment.execution.jobs import Job, TrialResult, WeightsSpec

_log = logging.getLogger("nasx.experiment")

WEIGHTS_DIR = "weights"
FORMAT = "nasx-trial-weights"
VERSION = 1


class WeightsError(NasxError):
    """A model cannot be loaded from an experiment directory (base of the errors below)."""


class WeightsNotKeptError(WeightsError, LookupError):
    """The trial exists but its weights were not kept (``keep_weights``)."""


class NoSuchTrialError(WeightsError, LookupError):
    """The experiment has no such trial."""


class CorruptWeightsError(WeightsError, ValueError):
    """A weights file does not match its manifest's checksum, or cannot be read."""


# ----------------------------------------------------------------------------- the policy
@dataclass(frozen=True)
class KeepWeights:
    """Which trials keep their weights: ``mode`` ``'none'``, ``'all'`` or ``'top'`` (the ``k`` best).

    >>> KeepWeights.parse('top-3'), KeepWeights.parse(2), KeepWeights.parse('best')
    (KeepWeights('top-3'), KeepWeights('top-2'), KeepWeights('top-1'))
    >>> KeepWeights.parse('some')
    Traceback (most recent call last):
    ...
    ValueError: keep_weights must be 'none', 'all', 'best', 'top-<k>' or an integer k >= 1 (the k best ...
    """

    mode: str = "none"
    k: int | None = None

    @classmethod
    def parse(cls, value: Any) -> KeepWeights:
        if isinstance(value, KeepWeights):
            return value
        if value is None or value is False or value == "none":
            return cls("none")
        if value == "all":
            return cls("all")
        if value == "best":
            return cls("top", 1)
        k: Any = value
        if isinstance(value, str) and value.startswith("top-"):
            k = value[4:]
            k = int(k) if k.isdigit() else None
        if isinstance(k, int) and not isinstance(k, bool) and k >= 1:
            return cls("top", k)
        raise ValueError(
            "keep_weights must be 'none', 'all', 'best', 'top-<k>' or an integer k >= 1 (the k best "
            f"trials), got {value!r}"
        )

    @property
    def enabled(self) -> bool:
        return self.mode != "none"

    def __str__(self) -> str:
        return f"top-{self.k}" if self.mode == "top" else self.mode

    def __repr__(self) -> str:
        return f"KeepWeights({str(self)!r})"


# ----------------------------------------------------------------------------- the space
def space_reference(
    space_cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """How to rebuild the space in another process: its importable class, and its constructor
    arguments as Python literals (``None`` when they are not literals, or the class lives in
    ``__main__`` or a function: then :func:`load_model` needs ``model_space=``).

    >>> from nasx.hub import NasBench201
    >>> space_reference(NasBench201, (), {'stem_out_channels': 8})['kwargs']
    "{'stem_out_channels': 8}"
    """
    ref: dict[str, Any] = {"module": space_cls.__module__, "qualname": space_cls.__qualname__}
    importable = ref["module"] != "__main__" and "<locals>" not in ref["qualname"]
    try:  # a namespace exec'd under another name (a notebook, a doc runner) is not importable
        importable = importable and importlib.util.find_spec(ref["module"]) is not None
    except (ImportError, ValueError):
        importable = False
    ref["args"] = ref["kwargs"] = None
    if importable:
        try:
            text_args, text_kwargs = repr(tuple(args)), repr(dict(kwargs))
            if (
                ast.literal_eval(text_args) == tuple(args)
                and ast.literal_eval(text_kwargs) == kwargs
            ):
                ref["args"], ref["kwargs"] = text_args, text_kwargs
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass  # not literals: the space must be passed back
    return ref


def _builder(ref: dict[str, Any] | None, model_space: Any, what: str) -> ModelBuilder:
    """``arch -> model``: from ``model_space`` when given, else from the recorded reference."""

    if model_space is not None:
        return ModelBuilder.from_space(model_space)
    if not ref or ref.get("args") is None:
        where = f"{ref['module']}.{ref['qualname']}" if ref else "unknown"
        raise WeightsError(
            f"{what}: the space ({where}) cannot be rebuilt in another process (it is defined in a "
            "script's __main__ or a function, or its constructor arguments are not Python "
            "literals): pass model_space=<the space, as the experiment built it>"
        )
    try:
        obj: Any = importlib.import_module(ref["module"])
        for part in ref["qualname"].split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise WeightsError(
            f"{what}: cannot import the space {ref['module']}.{ref['qualname']} ({e}); make it "
            "importable (PYTHONPATH) or pass model_space=<the space>"
        ) from None
    return ModelBuilder(obj, ast.literal_eval(ref["args"]), ast.literal_eval(ref["kwargs"]))


# ----------------------------------------------------------------------------- writing
def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves the old file or the whole new one:
    a temporary file in the same folder, fsync, rename, fsync of the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:  # the rename itself survives a power cut once the folder is synced (POSIX)
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def encode(model: nn.Module, arch: dict[str, Any], space: dict[str, Any] | None, trial: int,
           metric: float | None, hparams: dict[str, Any] | None = None) -> bytes:  # fmt: skip
    """The weights file's bytes: the model's state dict on the CPU, with what rebuilds it and
    the evaluator's choices (``hparams``) that trained it."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    buffer = io.BytesIO()
    torch.save(
        {
            "format": FORMAT,
            "version": VERSION,
            "trial": trial,
            "metric": metric,
            "arch": arch,
            "hparams": dict(hparams or {}),
            "space": space,
            "state_dict": state,
        },
        buffer,
    )
    return buffer.getvalue()


def commit(
    directory: Path,
    trial: int,
    payload: bytes,
    arch: Any,
    metric: float | None,
    hparams: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write a trial's weights, then its manifest (the commit record); returns the manifest."""
    folder = Path(directory) / WEIGHTS_DIR
    atomic_write(folder / f"{trial}.pt", payload)
    manifest = {
        "trial": trial,
        "file": f"{trial}.pt",
        "bytes": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "metric": metric,
        "arch": arch,
        "hparams": dict(hparams or {}),
        "written": time.time(),
    }
    atomic_write(folder / f"{trial}.json", (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest


def discard(directory: Path, trial: int) -> None:
    """Delete a trial's kept weights: the manifest first (then they no longer count as kept)."""
    folder = Path(directory) / WEIGHTS_DIR
    (folder / f"{trial}.json").unlink(missing_ok=True)
    (folder / f"{trial}.pt").unlink(missing_ok=True)


def save_in_trial(model: nn.Module | None, job: Job, result: TrialResult) -> None:
    """Called by :func:`~nasx.experiment.execution.runner.run_trial` after a trial succeeded: keeps its
    weights and says so in ``result``. Writes them into ``job.weights.directory`` when the
    trial runs beside the workdir (``result.weights_bytes``); returns them as bytes
    (``result.weights_payload``) when it does not (Ray)."""
    spec = job.weights
    metric = result.metric
    if spec is None or metric is None:
        return
    if spec.threshold is not None and not _better(metric, spec.threshold, spec.direction):
        return  # it cannot enter the k best: nothing to write
    if model is None:
        result.weights_error = "no model was built (build_model=False): no weights to keep"
        return
    payload = encode(model, job.arch, spec.space, job.id, metric, job.hparams)
    if spec.directory is None:
        result.weights_payload = payload
        return
    manifest = commit(Path(spec.directory), job.id, payload, job.arch, metric, job.hparams)
    result.weights_bytes = int(manifest["bytes"])


def _better(metric: float, than: float, direction: str) -> bool:
    # Ties go to the lower id (nasx.trial.best_trials), i.e. to the trial already kept.
    return metric > than if direction == "maximize" else metric < than


# ----------------------------------------------------------------------------- the keeper
@dataclass(frozen=True)
class KeptWeights:
    """One trial's kept weights: ``trial`` id, its ``metric``, the file's ``bytes`` and ``path``."""

    trial: int
    metric: float | None
    bytes: int
    path: Path


def _manifests(directory: Path) -> dict[int, dict[str, Any]]:
    folder = Path(directory) / WEIGHTS_DIR
    out: dict[int, dict[str, Any]] = {}
    if not folder.is_dir():
        return out
    for path in folder.glob("*.json"):
        if not path.stem.isdigit():
            continue
        try:
            out[int(path.stem)] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # unreadable manifest: those weights do not count as kept
    return out


def kept_weights(workdir: str | os.PathLike[str]) -> list[KeptWeights]:
    """The trials of ``workdir`` whose weights are kept, by id (reads the manifests only)."""
    folder = Path(workdir) / WEIGHTS_DIR
    return [
        KeptWeights(i, m.get("metric"), int(m.get("bytes", 0)), folder / f"{i}.pt")
        for i, m in sorted(_manifests(Path(workdir)).items())
    ]


def describe_kept(workdir: str | os.PathLike[str], policy: Any = None) -> str:
    """One line: how many trials keep their weights and their total size.

    >>> import tempfile
    >>> describe_kept(tempfile.mkdtemp(), 'top-3')
    'weights kept (top-3): 0 trials, 0.0 MiB'
    """
    kept = kept_weights(workdir)
    size = sum(w.bytes for w in kept) / 2**20
    how = f" ({KeepWeights.parse(policy)})" if policy is not None else ""
    return (
        f"weights kept{how}: {len(kept)} {'trial' if len(kept) == 1 else 'trials'}, {size:.1f} MiB"
    )


class WeightKeeper:
    """The experiment's side: what each job is told, payloads written, top-k pruning."""

    def __init__(
        self,
        workdir: Path,
        policy: KeepWeights,
        direction: str,
        space: dict[str, Any],
        succeeded: set[int],
    ):
        self.workdir, self.policy, self.direction, self.space = workdir, policy, direction, space
        self.folder = workdir / WEIGHTS_DIR
        self.folder.mkdir(parents=True, exist_ok=True)
        # No trial runs yet (the workdir's lock is ours): leftovers of a crash can go. Temporary
        # files, weights without a manifest, and weights of trials that did not succeed.
        for path in self.folder.glob(".*.tmp"):
            path.unlink(missing_ok=True)
        manifests = _manifests(workdir)
        for path in self.folder.glob("*.pt"):
            if path.stem.isdigit() and int(path.stem) not in manifests:
                path.unlink(missing_ok=True)
        self.kept: dict[int, float] = {}
        self.sizes: dict[int, int] = {}
        for trial, m in manifests.items():
            if trial in succeeded and m.get("metric") is not None:
                self.kept[trial], self.sizes[trial] = float(m["metric"]), int(m.get("bytes", 0))
            else:
                discard(workdir, trial)
        self._prune()

    def job_spec(self) -> WeightsSpec:
        """``job.weights``: where to write, the metric a trial must beat, the space."""
        return WeightsSpec(
            str(self.workdir.resolve()),  # workers may run in another directory
            self._threshold(),
            self.direction,
            self.space,
        )

    def _ranked(self) -> list[int]:
        sign = -1.0 if self.direction == "maximize" else 1.0
        return sorted(self.kept, key=lambda i: (sign * self.kept[i], i))

    def _threshold(self) -> float | None:
        if self.policy.mode != "top" or self.policy.k is None or len(self.kept) < self.policy.k:
            return None
        return self.kept[self._ranked()[self.policy.k - 1]]

    def finished(self, trial: Any, result: TrialResult) -> None:
        """After the trial's row is stored: commit a returned payload, register, prune."""
        if trial.status != "succeeded":
            if trial.id in self.kept:  # a re-run that failed: its old weights are not its result
                del self.kept[trial.id]
            discard(self.workdir, trial.id)
            return
        if result.weights_error:
            _log.warning("trial %d: weights not kept: %s", trial.id, result.weights_error)
            return
        if result.weights_payload is not None:  # from a Ray worker: written here, then dropped
            result.weights_bytes = int(
                commit(
                    self.workdir,
                    trial.id,
                    result.weights_payload,
                    trial.arch,
                    trial.metric,
                    trial.hparams,
                )["bytes"]
            )
            result.weights_payload = None
        if result.weights_bytes is not None and trial.metric is not None:
            self.kept[trial.id] = float(trial.metric)
            self.sizes[trial.id] = result.weights_bytes
            self._prune()

    def _prune(self) -> None:
        if self.policy.mode != "top" or self.policy.k is None:
            return
        for trial in self._ranked()[self.policy.k :]:
            discard(self.workdir, trial)
            del self.kept[trial]
            self.sizes.pop(trial, None)

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes.values())

    def summary(self) -> str:
        size = self.total_bytes / 2**20
        n = len(self.kept)
        return (
            f"weights kept ({self.policy}): {n} {'trial' if n == 1 else 'trials'}, {size:.1f} MiB "
            f"in {self.folder}"
        )


def keeper_for(
    store: Any, policy: KeepWeights, direction: str, builder: ModelBuilder, stored: list[Any]
) -> WeightKeeper | None:
    """The WeightKeeper of a run (None with keep_weights='none'); the policy is stored in the
    store's meta so that a load of a trial that kept nothing can say why."""
    store.set_meta("keep_weights", str(policy))
    if not policy.enabled:
        return None
    succeeded = {t.id for t in stored if t.status == "succeeded"}
    space = space_reference(builder.space_cls, builder.args, builder.kwargs)
    return WeightKeeper(store.directory, policy, direction, space, succeeded)
