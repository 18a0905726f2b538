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
    >>> [(w.trial, w.metric) for w in kept_weights(workdir)]
    [(2, 3.0)]
    >>> model = load_model(workdir, 'best', model_space=Net())
    >>> model.fc.out_features, bool((model.fc.weight == 0.5).all())
    (3, True)
    >>> load_model(workdir, 0, model_space=Net())
    Traceback (most recent call last):
    ...
    nasx.experiment.weights.WeightsNotKeptError: trial 0 of ... has no kept weights: the experiment ran with ...
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

from .._errors import NasxError
from .builder import ModelBuilder
from .jobs import Job, TrialResult, WeightsSpec
from .migrate import SUPERNET_CHECKPOINT, is_legacy_one_shot, legacy_one_shot

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
    """Called by :func:`~nasx.experiment.runner.run_trial` after a trial succeeded: keeps its
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


# ----------------------------------------------------------------------------- loading
def _meta_and_trials(workdir: Path, best_only: bool = False) -> tuple[dict[str, Any], list[Any]]:
    """The experiment's meta data and its trials (only the best one with ``best_only``: SQLite
    finds it without reading the others), read-only."""
    from .storage import TrialStore

    if is_legacy_one_shot(workdir):  # written before one-shot runs had a nasx.db
        meta, rows = legacy_one_shot(workdir)
        return meta, rows[:1] if best_only else rows
    if not TrialStore.exists(workdir):
        raise NoSuchTrialError(f"no nasx experiment in {workdir} (no nasx.db)")
    store = TrialStore(workdir, read_only=True)
    try:
        meta = store.meta()
        if best_only:
            return meta, store.best(meta.get("direction", "maximize"), 1)
        return meta, store.trials()
    finally:
        store.close()


def _not_kept_hint(meta: dict[str, Any]) -> str:
    policy = meta.get("keep_weights", "none")
    if policy == "none":
        return (
            "the experiment ran with keep_weights='none' (the default); run it with "
            "NasExperiment(..., keep_weights='all' | 'best' | k) to keep trained models"
        )
    if policy == "all":
        return (
            "the experiment keeps keep_weights='all', so this trial ran before that was set, or "
            "its weights could not be written (see its trial.log)"
        )
    return (
        f"the experiment ran with keep_weights={policy!r}, which keeps only the best trials' "
        "weights; pass keep_weights='all' to keep every trial's"
    )


def read_weights(workdir: str | os.PathLike[str], trial: int) -> dict[str, Any]:
    """The verified contents of trial ``trial``'s weights file (state dict, arch, space...)."""
    workdir = Path(workdir)
    folder = workdir / WEIGHTS_DIR
    manifest_path = folder / f"{int(trial)}.json"
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        raise WeightsNotKeptError(f"trial {trial} of {workdir} has no kept weights") from None
    except ValueError as e:
        raise CorruptWeightsError(f"{manifest_path} is not a readable manifest ({e})") from None
    path = folder / manifest.get("file", f"{trial}.pt")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CorruptWeightsError(
            f"{path} is missing although its manifest {manifest_path} lists it"
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != manifest.get("sha256") or len(data) != manifest.get("bytes"):
        raise CorruptWeightsError(
            f"{path} is corrupt: sha256 {digest[:12]}... ({len(data)} bytes), its manifest says "
            f"{str(manifest.get('sha256'))[:12]}... ({manifest.get('bytes')} bytes); the file was "
            "changed or truncated after it was written"
        )
    try:
        content = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any failure means the same; torch's text advises unsafe loading
        raise CorruptWeightsError(
            f"{path} cannot be read as nasx weights ({type(e).__name__})"
        ) from None
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        raise CorruptWeightsError(f"{path} is not a nasx trial weights file")
    content.setdefault("hparams", {})  # written before weights files carried them
    return content


def load_model(
    workdir: str | os.PathLike[str],
    trial: int | str | None = None,
    *,
    arch: dict[str, Any] | None = None,
    model_space: Any = None,
    map_location: Any = "cpu",
) -> nn.Module:
    """The trained model of trial ``trial`` (an id, or ``'best'``) of the experiment in ``workdir``.

    Works on a finished experiment, one still running (it reads the database read-only), and a
    read-only directory. For a one-shot experiment (a supernet checkpoint), the model of ``arch``
    with the weights it inherits from the trained supernet; ``'best'`` (or no ``arch``) is the arch
    the search exported. The model is returned in eval mode, on ``map_location``.

    Args:
        workdir: the experiment directory.
        trial: a trial id, or ``'best'`` (the best succeeded trial; default).
        arch: one-shot experiments only: the arch of the subnet.
        model_space: the space, when the experiment's cannot be rebuilt from its reference (a
            class defined in ``__main__``); it must be the one the experiment searched.
        map_location: where the weights go (``torch.load``'s argument).

    Raises:
        NoSuchTrialError: no experiment, or no such trial.
        WeightsNotKeptError: the trial's weights were not kept (``keep_weights``).
        CorruptWeightsError: the file does not match the checksum in its manifest.
    """
    workdir = Path(workdir)
    meta, rows = _meta_and_trials(workdir, best_only=trial in (None, "best") and arch is None)
    if _from_supernet(meta):
        arch = arch if arch is not None else _exported(workdir, rows, trial)
        model = _subnet(workdir, meta["oneshot"], arch, model_space)
        return model.to(map_location).eval()
    _refuse_arch(arch)
    content = _trial_weights(workdir, trial, meta, rows)
    what = f"trial {content['trial']} of {workdir}"
    model = _builder(content.get("space"), model_space, what)(content["arch"])
    model.load_state_dict(content["state_dict"])
    return model.to(map_location).eval()


def _from_supernet(meta: dict[str, Any]) -> bool:
    """Whether the experiment's models are subnets of a trained supernet (a one-shot run records
    how to rebuild it under ``'oneshot'``) rather than kept weights files."""
    return "oneshot" in meta


def _refuse_arch(arch: dict[str, Any] | None) -> None:
    if arch is not None:
        raise ValueError(
            "arch= selects a subnet of a one-shot supernet; a multi-trial experiment's models are "
            "selected by trial id"
        )


def trial_weights(
    workdir: str | os.PathLike[str], trial: int | str | None = "best"
) -> dict[str, Any]:
    """The verified weights file of a trial (an id or ``'best'``): ``{'state_dict', 'arch',
    'hparams', 'space', 'trial', 'metric', ...}``; the errors of :func:`load_model`. Needs no
    space."""
    workdir = Path(workdir)
    return _trial_weights(workdir, trial, *_meta_and_trials(workdir, trial in (None, "best")))


def _trial_weights(
    workdir: Path, trial: int | str | None, meta: dict[str, Any], trials: list[Any]
) -> dict[str, Any]:
    """:func:`trial_weights` from the experiment's meta and trials, already read (only the best
    one for ``'best'``)."""
    if trial is None or trial == "best":
        best = trials
        if not best:
            raise NoSuchTrialError(f"{workdir} has no succeeded trial yet")
        trial_id, what = best[0].id, f"trial {best[0].id} (the best) of {workdir}"
    else:
        if isinstance(trial, bool) or not isinstance(trial, int):
            raise TypeError(f"trial must be a trial id (int) or 'best', got {trial!r}")
        trial_id, what = trial, f"trial {trial} of {workdir}"
        record = next((t for t in trials if t.id == trial_id), None)
        if record is None:
            ids = [t.id for t in trials]
            span = f"ids {ids[0]}..{ids[-1]}" if ids else "no trials"
            raise NoSuchTrialError(f"{workdir} has no trial {trial_id} ({span})")
        if record.status != "succeeded":
            raise WeightsNotKeptError(
                f"{what} has no weights: it {record.status} (only succeeded trials keep weights)"
            )
    try:
        return read_weights(workdir, trial_id)
    except WeightsNotKeptError:
        raise WeightsNotKeptError(f"{what} has no kept weights: {_not_kept_hint(meta)}") from None


def model_file(
    workdir: str | os.PathLike[str],
    trial: int | str | None = "best",
    *,
    arch: dict[str, Any] | None = None,
    model_space: Any = None,
) -> dict[str, Any]:
    """What ``nasx model`` writes: a trial's weights file contents, or for a one-shot experiment
    the subnet of ``arch`` (default the exported one) with its inherited weights, in that format."""
    workdir = Path(workdir)
    meta, rows = _meta_and_trials(workdir, best_only=trial in (None, "best") and arch is None)
    if not _from_supernet(meta):
        _refuse_arch(arch)
        return _trial_weights(workdir, trial, meta, rows)
    row = None
    if arch is None:  # an exported row's subnet ('best': the first)
        row = _exported_row(workdir, rows, trial)
        arch = row.arch
    model = _subnet(workdir, meta["oneshot"], arch, model_space)
    return {
        "format": FORMAT,
        "version": VERSION,
        "trial": None if row is None else row.id,
        "metric": None,
        "arch": arch,
        "hparams": {},  # one-shot search refuses evaluator choices
        "space": meta["oneshot"].get("space"),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
    }


def warm_sources(
    source: Path, picked: list[tuple[dict[str, Any], int | None]]
) -> dict[str, tuple[str, int | None]]:
    """For stage 2's warm start: ``{arch key: (source workdir, trial id)}`` of the picked archs,
    after checking that each one's weights are there (before any training starts)."""
    from nasx.trial import arch_key

    out: dict[str, tuple[str, int | None]] = {}
    meta, _ = _meta_and_trials(source, best_only=True)
    for arch, trial in picked:
        if _from_supernet(meta):  # a one-shot source: the subnet inherits from the supernet
            if not (source / SUPERNET_CHECKPOINT).exists():
                raise WeightsNotKeptError(f"warm_start: {source} has no supernet checkpoint")
            trial = None
        elif not (source / WEIGHTS_DIR / f"{trial}.json").exists():
            raise WeightsNotKeptError(
                f"warm_start: trial {trial} of {source} (picked for stage 2) has no kept weights: "
                f"{_not_kept_hint(meta)}; keep at least the top_k trials stage 2 picks"
            )
        out[arch_key(arch)] = (str(source), trial)
    return out


def warm_start(
    model: nn.Module, source: str, trial: int | None, arch: dict[str, Any], model_space: Any
) -> None:
    """Load the stage-1 weights of ``arch`` into ``model`` (built from the same space and arch)."""
    if trial is None:
        state = load_subnet(source, arch, model_space=model_space).state_dict()
    else:
        state = read_weights(source, trial)["state_dict"]
    device = next(iter(model.parameters()), torch.empty(0)).device
    model.load_state_dict({k: v.to(device) for k, v in state.items()})


# ----------------------------------------------------------------------------- one-shot
def supernet_record(space: Any, strategy: Any) -> dict[str, Any]:
    """How to rebuild a one-shot run's supernet in another process (stored in the run's meta
    under ``'oneshot'``): the space's reference (None when the space cannot be rebuilt from its
    class and literal arguments: :func:`load_supernet` then needs ``model_space=``) and the
    supernet's construction."""
    from nasx.space.base import space_record

    try:
        record = space_record(space)
        reference: dict[str, Any] | None = space_reference(type(space), record.args, record.kwargs)
    except TypeError as e:
        _log.warning("the one-shot space is not recorded (load_model needs model_space=): %s", e)
        reference = None
    return {
        "space": reference,
        "strategy": type(strategy).__name__,
        "supernet": {
            "mode": getattr(strategy, "supernet_mode", "mixture"),
            "alphas": bool(getattr(strategy, "needs_alphas", True)),
            "partial_channels": int(getattr(strategy, "partial_channels", 1)),
        },
    }


def _oneshot_info(workdir: Path) -> dict[str, Any]:
    """The stored :func:`supernet_record` (``{}`` when the workdir has no record of it)."""
    try:
        meta, _ = _meta_and_trials(workdir, best_only=True)
    except NoSuchTrialError:  # a checkpoint written by strategy.run alone has neither
        return {}
    info: dict[str, Any] = meta.get("oneshot") or {}
    return info


def load_supernet(workdir: str | os.PathLike[str], *, model_space: Any = None) -> Any:
    """The trained supernet of the one-shot search in ``workdir`` (``checkpoints/last.ckpt``),
    rebuilt from the run's stored :func:`supernet_record` (or ``model_space``) with its weights
    and arch parameters."""
    workdir = Path(workdir)
    return _load_supernet(workdir, _oneshot_info(workdir), model_space)


def _load_supernet(workdir: Path, info: dict[str, Any], model_space: Any) -> Any:
    """:func:`load_supernet` from the stored record ``info``, already read."""
    from nasx.strategy.oneshot.supernet import Supernet

    path = workdir / SUPERNET_CHECKPOINT
    if not path.exists():
        raise WeightsNotKeptError(
            f"{workdir} has no one-shot checkpoint ({path}); a one-shot search writes it when "
            "NasExperiment (or strategy.run) is given a workdir"
        )
    what = f"the supernet of {workdir}"
    if model_space is None:
        if not info.get("space"):
            raise WeightsError(
                f"{what}: the space is not recorded (the search ran outside NasExperiment, or its "
                "space cannot be rebuilt from its class): pass model_space=<the space>"
            )
        built = _builder(info.get("space"), None, what)
        model_space = built.space_cls(*built.args, **built.kwargs)
    supernet = Supernet(model_space, **info.get("supernet", {}))
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        state = ckpt["state_dict"]
    except Exception as e:  # noqa: BLE001
        raise CorruptWeightsError(
            f"{path} is not a readable one-shot checkpoint ({type(e).__name__})"
        ) from None
    own = supernet.state_dict()
    probe = next(iter(own))
    # The supernet sits inside the evaluator's LightningModule ("inner.model." for nasx's).
    prefixes = [
        k[: len(k) - len(probe)]
        for k in state
        if k.endswith(probe) and (k == probe or k[-len(probe) - 1] == ".")
    ]
    prefix = min(prefixes, key=len, default=None)
    if prefix is None:
        raise CorruptWeightsError(f"{path} holds no weights of this supernet (no key {probe!r})")
    supernet.load_state_dict(
        {k: state[prefix + k] for k in own if prefix + k in state}, strict=True
    )
    return supernet


def load_subnet(
    workdir: str | os.PathLike[str], arch: dict[str, Any] | None = None, *, model_space: Any = None
) -> nn.Module:
    """The model of ``arch`` with the weights it inherits from the trained supernet in ``workdir``
    (default arch: the best one the search exported, the first row of its store)."""
    workdir = Path(workdir)
    meta, rows = _meta_and_trials(workdir, best_only=arch is None)
    arch = arch if arch is not None else _exported(workdir, rows)
    return _subnet(workdir, meta.get("oneshot") or {}, arch, model_space)


def _subnet(
    workdir: Path, info: dict[str, Any], arch: dict[str, Any], model_space: Any
) -> nn.Module:
    """The subnet of ``arch`` with its inherited weights, the run's record ``info`` already read."""
    from nasx.strategy.oneshot.inherit import subnet

    model: nn.Module = subnet(_load_supernet(workdir, info, model_space), arch)
    return model


def _exported(workdir: Path, rows: list[Any], trial: Any = "best") -> dict[str, Any]:
    """The arch of an exported row of a one-shot run: ``'best'`` (or None), the first one."""
    row = _exported_row(workdir, rows, trial)
    arch: dict[str, Any] = row.arch
    return arch


def _exported_row(workdir: Path, rows: list[Any], trial: Any) -> Any:
    if trial in (None, "best"):
        if not rows:
            raise WeightsError(
                f"{workdir} records no exported arch (the search did not finish): pass arch=..."
            )
        return rows[0]
    if isinstance(trial, bool) or not isinstance(trial, int):
        raise TypeError(f"trial must be an exported arch's id (int) or 'best', got {trial!r}")
    row = next((t for t in rows if t.id == trial), None)
    if row is None:
        raise NoSuchTrialError(
            f"{workdir} is a one-shot run with {len(rows)} exported arch(s) (ids 0..{len(rows) - 1}"
            f"), not {trial}; or pass arch=... for any subnet"
        )
    return row
