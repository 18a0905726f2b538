"""One-shot checkpoints you can resume exactly: when they are written, what they hold, how.

A search writes ``workdir/checkpoints/last.ckpt`` at every epoch end and, when asked, every
``every_n_steps`` search steps and every ``every_minutes`` minutes. Each write goes to a temporary
file that replaces the old one in one rename (a kill mid-write leaves the previous checkpoint),
and the last ``keep`` checkpoints stay as ``step=<n>.ckpt`` beside it.

A checkpoint holds Lightning's state (weights, architecture parameters, every optimizer and LR
scheduler, epoch and step), the strategy's own state (``strategy.state_dict()``: a Gumbel
temperature, an ENAS baseline; the ENAS controller is a module), the RNG states of Python, numpy
and torch, the position in the epoch (the data loaders are wrapped by :class:`ResumableLoader`),
and the fingerprint of the space and the strategy's settings, so that a resume in another
experiment's directory is refused with nasx's own message.
"""

from __future__ import annotations

import logging
import os
import pathlib
import random
import time
from typing import Any, cast

import numpy as np
import torch
from pytorch_lightning.callbacks import Checkpoint

from ..._errors import NasxError

_log = logging.getLogger(__name__)

CHECKPOINT_DIR = "checkpoints"
LAST = "last.ckpt"


class ResumableLoader:
    """A data loader that remembers its position in the epoch, so a resumed run continues with
    the very batch that followed the checkpoint (Lightning's ``state_dict`` protocol for loaders).

    The shuffled order of an epoch is drawn when the epoch starts, from torch's global RNG or from
    the loader's own generators (``DataLoader(generator=...)``, a sampler's ``generator``); the
    wrapper keeps those states, and a resume replays the same order and skips the batches already
    seen. A sampler of another kind keeps a random state nasx cannot see: a mid-epoch resume
    says so, naming it.
    """

    def __init__(self, loader: Any):
        self.loader = loader
        self._start: torch.Tensor | None = None  # the global RNG state when the epoch started
        self._start_generators: dict[str, torch.Tensor] = {}  # the loader's own, by attribute
        self._taken = 0
        self._resume: tuple[torch.Tensor, dict[str, torch.Tensor], int] | None = None

    def __len__(self) -> int:
        return len(self.loader)

    def __getattr__(self, name: str) -> Any:  # batch_size, dataset, sampler... of the loader
        if name == "loader":
            raise AttributeError(name)
        return getattr(self.loader, name)

    def __iter__(self) -> Any:
        generators = own_generators(self.loader)
        if self._resume is not None:
            start, start_generators, skip = self._resume
            self._resume = None
            now = torch.random.get_rng_state()
            torch.random.set_rng_state(start)
            for name, state in start_generators.items():
                if name in generators:
                    generators[name].set_state(state)
            it = iter(self.loader)
            for _ in range(skip):
                next(it)
            torch.random.set_rng_state(now)  # the state the checkpoint was taken with
            self._start, self._start_generators, self._taken = start, start_generators, skip
        else:
            self._start, self._taken = torch.random.get_rng_state(), 0
            self._start_generators = {n: g.get_state() for n, g in generators.items()}
            it = iter(self.loader)
        for batch in it:
            self._taken += 1
            yield batch

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self._start, "generators": self._start_generators, "taken": self._taken}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("rng") is not None and 0 < state["taken"] < len(self):
            self._resume = (state["rng"], dict(state.get("generators", {})), int(state["taken"]))
            unknown = unsaved_random_state(self.loader)
            if unknown:
                _log.warning(
                    "resuming mid-epoch: %s keeps its own random state, which nasx cannot save; "
                    "the rest of this epoch may come in another order than in an uninterrupted "
                    "run (use torch's samplers with a generator= for an exact resume)",
                    unknown,
                )


# torch's samplers whose randomness is a torch.Generator nasx saves (or none at all)
_KNOWN_SAMPLERS = (
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
    "DistributedSampler",
    "_InfiniteConstantSampler",
)


def own_generators(loader: Any) -> dict[str, torch.Generator]:
    """The ``torch.Generator`` objects a data loader draws from besides the global RNG, by where
    they are (``'generator'``, ``'sampler.generator'``, ``'batch_sampler.sampler.generator'``).

    >>> from torch.utils.data import DataLoader, RandomSampler
    >>> own_generators(DataLoader(range(4), shuffle=True, generator=torch.Generator())).keys()
    dict_keys(['generator'])
    >>> g = torch.Generator()  # the sampler's own (the loader's shuffle=True shares the loader's)
    >>> list(own_generators(DataLoader(range(4), sampler=RandomSampler(range(4), generator=g))))
    ['sampler.generator']
    """
    found: dict[str, torch.Generator] = {}
    for path in ("generator", "sampler.generator", "batch_sampler.sampler.generator"):
        obj: Any = loader
        for part in path.split("."):
            obj = getattr(obj, part, None)
        if isinstance(obj, torch.Generator) and all(obj is not g for g in found.values()):
            found[path] = obj
    return found


def unsaved_random_state(loader: Any) -> str | None:
    """Names the sampler of ``loader`` that may hold a random state nasx cannot save, or None."""
    for path in ("sampler", "batch_sampler", "batch_sampler.sampler"):
        obj: Any = loader
        for part in path.split("."):
            obj = getattr(obj, part, None)
        if obj is not None and type(obj).__name__ not in _KNOWN_SAMPLERS:
            return f"the data loader's {path} ({type(obj).__name__})"
    return None


def rng_states() -> dict[str, Any]:
    """Python's, numpy's and torch's RNG states (CUDA's too when it is in use)."""
    kind, keys, pos, has_gauss, gauss = cast(tuple[Any, ...], np.random.get_state())
    states: dict[str, Any] = {
        "python": random.getstate(),
        # Plain values and tensors only: checkpoints are loaded with weights_only=True.
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, gauss],
        "torch": torch.random.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]  # torch's stub: is_initialized has no annotations
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_states(states: dict[str, Any]) -> None:
    if "python" in states:
        random.setstate(_as_python_state(states["python"]))
    if "numpy" in states:
        kind, keys, pos, has_gauss, gauss = states["numpy"]
        np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    if "torch" in states:
        torch.random.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def _as_python_state(state: Any) -> tuple[Any, ...]:
    # A checkpoint may turn the tuples of random.getstate() into lists.
    version, internal, gauss = state
    return (version, tuple(internal), gauss)


class SearchCheckpoint(Checkpoint):
    """Writes ``last.ckpt`` atomically at every epoch end, every ``every_n_steps`` search steps
    and every ``every_minutes`` minutes, keeping the last ``keep`` as ``step=<n>.ckpt``.

    A Lightning ``Checkpoint``, so its epoch-end hook runs after the module's (per-epoch
    schedules, such as a Gumbel temperature, are saved already stepped)."""

    def __init__(
        self,
        dirpath: str | os.PathLike[str],
        every_n_steps: int | None = None,
        every_minutes: float | None = None,
        keep: int = 1,
    ):
        self.dirpath = pathlib.Path(dirpath)
        self.every_n_steps = every_n_steps
        self.every_minutes = every_minutes
        self.keep = keep
        self._last_time = time.monotonic()

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if batch_idx + 1 >= trainer.num_training_batches:
            # The epoch's last batch: its validation and epoch end have yet to run, and the
            # epoch-end checkpoint follows. One written here would resume into an epoch Lightning
            # counts as done with its end hooks not run (a kill inside the epoch-end write left
            # it as last.ckpt and the resumed run repeated steps); the previous one stays instead.
            return
        steps = int(pl_module.search_steps)
        due = self.every_n_steps is not None and steps % self.every_n_steps == 0
        if self.every_minutes is not None:
            due = due or time.monotonic() - self._last_time >= 60 * self.every_minutes
        if due:
            self.save(trainer, steps)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        self.save(trainer, int(pl_module.search_steps))

    def save(self, trainer: Any, steps: int) -> None:
        self._last_time = time.monotonic()
        self.dirpath.mkdir(parents=True, exist_ok=True)
        final = self.dirpath / f"step={steps:08d}.ckpt"
        tmp = self.dirpath / f".{final.name}.tmp"
        # every rank calls it; rank 0 writes. weights_only=False said: the whole state (optimizers,
        # loops, callbacks), and Lightning prints no line about defaulting to it at every write.
        trainer.save_checkpoint(tmp, weights_only=False)
        if trainer.is_global_zero:
            os.replace(tmp, final)  # atomic: a kill leaves the old file or the whole new one
            link = self.dirpath / f".{LAST}.tmp"
            link.unlink(missing_ok=True)
            os.link(final, link)
            os.replace(link, self.dirpath / LAST)
            for old in sorted(self.dirpath.glob("step=*.ckpt"))[: -self.keep]:
                old.unlink(missing_ok=True)
        trainer.strategy.barrier()


class CheckpointError(NasxError, RuntimeError):
    """A one-shot checkpoint in the workdir cannot be resumed by this search (nasx's message)."""


# Settings that may change between a run and its resume (how often to checkpoint or log).
FREE_STRATEGY_SETTINGS = (
    "checkpoint_every_n_steps",
    "checkpoint_every_minutes",
    "checkpoints_kept",
    "log_arch_every",
)


# Evaluator settings that may change: training longer is how a one-shot search goes on (a
# checkpoint further along than max_epochs is refused on its own, below).
FREE_EVALUATOR_SETTINGS = ("max_epochs", "max_steps", "max_time")


def experiment_identity(space: Any, strategy: Any, evaluator: Any = None) -> dict[str, Any]:
    """What a checkpoint must match to be resumed: the space's fingerprint, the strategy's and
    the evaluator's settings (learning rate, batch size, data set, ...; see
    :func:`nasx._config.describe`)."""
    from nasx._config import describe
    from nasx.space import space_fingerprint

    settings = {k: v for k, v in describe(strategy).items() if k not in FREE_STRATEGY_SETTINGS}
    identity = {"space": space_fingerprint(space), "strategy": settings}
    if evaluator is not None:
        described = describe(evaluator).items()
        identity["evaluator"] = {k: v for k, v in described if k not in FREE_EVALUATOR_SETTINGS}
    return identity


def _evaluator_differences(stored: dict[str, Any] | None, now: dict[str, Any] | None) -> list[str]:
    """One line per evaluator setting that differs; a checkpoint written before nasx recorded
    them (no ``evaluator``), or a setting it did not record, is not compared."""
    from nasx.space import fingerprint_differences

    if stored is None or now is None:
        return []
    if stored.get("type") != now.get("type"):
        return [f"evaluator: was {stored.get('type')}, now {now.get('type')}"]
    recorded = {k: v for k, v in now.items() if k in stored}
    return [f"evaluator {line}" for line in fingerprint_differences(stored, recorded, "setting")]


def check_checkpoint(
    path: pathlib.Path,
    identity: dict[str, Any],
    max_epochs: int | None,
    *,
    other_settings: bool = False,
) -> None:
    """Refuse, with nasx's own message, a checkpoint this search cannot resume: unreadable (it is
    loaded as weights only: nothing in it is executed), of another space or strategy, or further
    along than ``max_epochs``. ``other_settings`` (``resume="force"``) accepts other strategy
    or evaluator settings, logging them; another space is refused all the same."""
    from nasx.space import fingerprint_differences

    start_afresh = (
        f"to start the search afresh, move {path.parent} away or use another workdir "
        "(NasExperiment(..., overwrite=True) deletes it)"
    )
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
            raise ValueError("no state_dict")
    except Exception as e:  # noqa: BLE001 - any failure means the same to the user
        # torch's own text would advise loading with weights_only=False, i.e. executing the file.
        raise CheckpointError(
            f"{path} is not a readable nasx one-shot checkpoint ({type(e).__name__}): it is "
            f"truncated, corrupted or was not written by nasx; {start_afresh}"
        ) from None
    stored = ckpt.get("nasx_identity")
    if stored is not None:
        lines = fingerprint_differences(stored.get("space", {}), identity["space"])
        settings = []
        if stored.get("strategy") != identity["strategy"]:
            settings.append(f"strategy: was {stored.get('strategy')}, now {identity['strategy']}")
        settings += _evaluator_differences(stored.get("evaluator"), identity.get("evaluator"))
        if other_settings and settings:
            _log.warning(
                "%s: resuming with other settings, as asked: %s", path, "; ".join(settings)
            )
        else:
            lines += settings
        if lines:
            shown = "; ".join(lines[:6]) + ("; ..." if len(lines) > 6 else "")
            raise CheckpointError(
                f"{path} is the checkpoint of another search: {shown}. Resuming it would load its "
                f"weights onto other candidates or settings; {start_afresh}"
            )
    done = (
        ckpt.get("loops", {}).get("fit_loop", {}).get("epoch_progress", {}).get("current", {})
    ).get("processed", 0)  # an epoch-end checkpoint is written before Lightning completes it
    if max_epochs is not None and max_epochs >= 0 and done > max_epochs:
        raise CheckpointError(
            f"{path} has trained {done} epochs, more than this run's max_epochs={max_epochs}: "
            f"raise max_epochs (to at least {done}) to continue it; {start_afresh}"
        )
