"""Models loaded back from an experiment directory: a trial's kept weights (multi-trial), or a
subnet of the trained supernet (one-shot). What :mod:`nasx.experiment.storage.weights` wrote during the
search, read in any process, after the search's process has exited; the database is opened
read-only, so a running experiment and a read-only directory work too.

    >>> import tempfile
    >>> load_model(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    nasx.experiment.storage.weights.NoSuchTrialError: no nasx experiment in ... (no nasx.db)
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

from nasx.experiment.storage.migrate import SUPERNET_CHECKPOINT, is_legacy_one_shot, legacy_one_shot
from nasx.experiment.storage.weights import (
    FORMAT,
    VERSION,
    WEIGHTS_DIR,
    CorruptWeightsError,
    NoSuchTrialError,
    WeightsError,
    WeightsNotKeptError,
    _builder,
    space_reference,
)

__all__ = [
    "load_model",
    "load_subnet",
    "load_supernet",
    "model_file",
    "read_weights",
    "supernet_record",
    "trial_weights",
    "warm_sources",
    "warm_start",
]

_log = logging.getLogger("nasx.experiment")


def _meta_and_trials(workdir: Path, best_only: bool = False) -> tuple[dict[str, Any], list[Any]]:
    """The experiment's meta data and its trials (only the best one with ``best_only``: SQLite
    finds it without reading the others), read-only."""
    from nasx.experiment.storage.store import TrialStore

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
    rebuilt from what the run recorded of its space and supernet (or from ``model_space``), with
    its weights and arch parameters."""
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
