"""Read an experiment directory without ever writing to it: for the CLI, plots and the dashboard.

The database is opened with SQLite's read-only URI (``mode=ro``), so no statement can change it;
in WAL mode a reader never blocks the process running the experiment (SQLite may create the
empty ``-wal``/``-shm`` side files its read protocol needs; the database is never modified). Every problem with the
directory is one :class:`ExperimentReadError` whose message fits on one line.

    >>> import tempfile
    >>> from nasx.experiment.storage.store import TrialStore
    >>> from nasx.trial import Trial
    >>> d = tempfile.mkdtemp()
    >>> store = TrialStore.create(d, {'space': 'Net', 'strategy': 'Random', 'direction': 'maximize'})
    >>> store.add(Trial(0, {'k': 3}, 'succeeded', metric=0.5))
    >>> store.close()
    >>> exp = read_experiment(d)
    >>> exp.kind, exp.meta['space'], [t.metric for t in exp.trials]
    ('multi-trial', 'Net', [0.5])
    >>> read_experiment(d + '/nope')
    Traceback (most recent call last):
    ...
    nasx.experiment.storage.readonly.ExperimentReadError: no such directory: .../nope
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasx._errors import NasxError
from nasx.experiment.storage.migrate import LegacyWorkdirError, is_legacy_one_shot, legacy_one_shot
from nasx.experiment.storage.store import DB_NAME, TRIALS_DIR, ExperimentDirError, TrialStore
from nasx.trial import Trial, best_trials, status_counts


class ExperimentReadError(NasxError):
    """The directory is missing, is not a nasx experiment, or its database cannot be read."""


@dataclass
class ExperimentRecord:
    """What an experiment directory holds: ``kind`` ``'multi-trial'`` or ``'one-shot'``."""

    directory: Path
    kind: str
    meta: dict[str, Any] = field(default_factory=dict)
    trials: list[Trial] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def direction(self) -> str:
        return str(self.meta.get("direction", "maximize"))

    def counts(self) -> dict[str, int]:
        """Trials per status, every status present (zeros included)."""
        return status_counts(self.trials)

    def best(self, top_k: int = 1) -> list[Trial]:
        """The ``top_k`` succeeded trials with the best metric (ties: lower id first)."""
        return best_trials(self.trials, self.direction, top_k)

    def trial(self, trial_id: int) -> Trial:
        for t in self.trials:
            if t.id == trial_id:
                return t
        raise ExperimentReadError(f"experiment {self.directory} has no trial {trial_id}")

    def log_path(self, trial_id: int) -> Path:
        """``trials/<id>/trial.log``; the id is an int, so the path cannot leave the directory."""
        return self.directory / TRIALS_DIR / str(int(trial_id)) / "trial.log"


def is_experiment_dir(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` looks like a nasx experiment (multi-trial or one-shot).

    >>> is_experiment_dir('/nonexistent')
    False
    """
    d = Path(directory)
    return (d / DB_NAME).is_file() or (d / "checkpoints" / "last.ckpt").is_file()


def read_experiment(directory: str | os.PathLike[str]) -> ExperimentRecord:
    """The meta data and rows of the experiment in ``directory``, read-only: its trials, or the
    archs a one-shot run exported (``kind`` from the stored meta). A one-shot workdir written
    before one-shot runs had a ``nasx.db`` reads as the current layout stores it
    (:func:`~nasx.experiment.storage.migrate.legacy_one_shot`)."""
    d = Path(directory)
    if not d.exists():
        raise ExperimentReadError(f"no such directory: {d}")
    if not d.is_dir():
        raise ExperimentReadError(f"not a directory: {d}")
    if is_legacy_one_shot(d):
        try:
            meta, trials = legacy_one_shot(d)
        except LegacyWorkdirError as e:
            raise ExperimentReadError(str(e)) from None
        return ExperimentRecord(d, "one-shot", meta, trials)
    if not (d / DB_NAME).exists():
        raise ExperimentReadError(
            f"{d} is not a nasx experiment directory (no {DB_NAME}, no checkpoints/last.ckpt)"
        )
    meta, trials = _read_store(d)
    return ExperimentRecord(d, str(meta.get("kind", "multi-trial")), meta, trials)


def _read_store(directory: Path) -> tuple[dict[str, Any], list[Trial]]:
    """Meta and rows through a read-only :class:`~nasx.experiment.storage.store.TrialStore` (the one
    reader of the schema), its errors as one-line :class:`ExperimentReadError` s."""
    path = directory / DB_NAME
    try:
        store = TrialStore(directory, read_only=True)
    except ExperimentDirError as e:  # not SQLite, not nasx's tables, 0 bytes
        raise ExperimentReadError(str(e)) from None
    except (sqlite3.Error, OSError) as e:
        raise ExperimentReadError(f"cannot open {path}: {e}") from None
    try:
        # Each trial decodes its JSON fields when first read: `nasx show` of 100k trials prints
        # archs from their stored text and decodes only the best few.
        return store.meta(), store.trials(lazy=True)
    except ExperimentDirError as e:  # damaged pages met while reading
        raise ExperimentReadError(str(e)) from None
    except sqlite3.DatabaseError as e:
        raise ExperimentReadError(f"{path} is corrupted or not a nasx database: {e}") from None
    except (ValueError, TypeError) as e:  # bad meta JSON or an unknown status
        raise ExperimentReadError(f"{path} holds a malformed trial row: {e}") from None
    finally:
        store.close()


def list_experiments(root: str | os.PathLike[str], max_depth: int = 2) -> list[Path]:
    """Experiment directories at or under ``root`` (searched ``max_depth`` levels down), sorted.

    >>> import tempfile
    >>> list_experiments(tempfile.mkdtemp())
    []
    """
    root = Path(root)
    if not root.is_dir():
        raise ExperimentReadError(f"no such directory: {root}")
    found = []
    frontier = [root]
    for _ in range(max_depth + 1):
        nxt = []
        for d in frontier:
            if is_experiment_dir(d):
                found.append(d)
                continue
            try:
                nxt += sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))
            except OSError:
                continue
        frontier = nxt
    return sorted(found)
