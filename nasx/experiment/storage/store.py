"""Experiment storage: one SQLite database per experiment directory, one folder per trial.

Layout of an experiment directory::

    nasx.db              SQLite (WAL): table ``meta`` (what experiment this is), table ``trials``
    nasx.lock            held (filelock: flock on POSIX, msvcrt on Windows) while a process runs it
    nasx.lock.pid        the pid of the process holding nasx.lock, for the "locked" message
    trials/<id>/arch.json   the trial's arch, to rebuild or retrain it later
    trials/<id>/hparams.json   the values of the evaluator's choices, when it has any
    trials/<id>/trial.log   what the trial logged
    weights/<id>.pt, .json  with ``keep_weights``: the trial's trained weights and their manifest

Every state change of a trial is one autocommitted statement (insert when it starts, update when
it ends), so a process killed at any moment loses at most the results of the trials in flight,
which stay ``running`` in the table and are re-run (or marked failed) on resume. WAL with
``synchronous=NORMAL`` survives a crashed or killed process; only a power cut may lose the last
commits.

    >>> import tempfile
    >>> from nasx.trial import Trial
    >>> store = TrialStore.create(tempfile.mkdtemp(), {'space': 'Net'})
    >>> store.add(Trial(0, {'k': 3}, 'running'))
    >>> store.update(Trial(0, {'k': 3}, 'succeeded', metric=0.5, metrics={'default': 0.5}))
    >>> [(t.id, t.status, t.metric) for t in store.trials()]
    [(0, 'succeeded', 0.5)]
    >>> store.close()
"""

from __future__ import annotations

import contextlib
import errno
import gc
import itertools
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from nasx._errors import NasxError
from nasx._workdir_lock import (
    LOCK_NAME,
    LOCK_PID_NAME,
    WorkdirNotWritableError,
    acquire_workdir_lock,
)
from nasx.experiment.storage.stored import gc_paused, stored_trial
from nasx.trial import Trial

DB_NAME = "nasx.db"
TRIALS_DIR = "trials"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY,
    arch TEXT NOT NULL,
    status TEXT NOT NULL,
    metric REAL,
    metrics TEXT NOT NULL DEFAULT '{}',
    intermediates TEXT NOT NULL DEFAULT '[]',
    start_time REAL,
    end_time REAL,
    duration REAL,
    error TEXT,
    hparams TEXT NOT NULL DEFAULT '{}',
    budget NUMERIC
);
-- The ranking of TrialStore.best: the top k of 100k trials read off the index, no scan.
CREATE INDEX IF NOT EXISTS trials_rank ON trials (status, metric, id);
"""
# Every name the schema puts in sqlite_master (tables, indexes, SQLite's own index of meta's key).
_OWN_SCHEMA = frozenset({"meta", "trials", "trials_rank", "sqlite_autoindex_meta_1"})
_COLUMNS = (
    "id",
    "arch",
    "status",
    "metric",
    "metrics",
    "intermediates",
    "start_time",
    "end_time",
    "duration",
    "error",
    "hparams",  # added after the first release: older databases get it when opened for writing
    "budget",  # added with multi-fidelity schedulers (NUMERIC: epochs stay integers), likewise
)
_JSON_COLUMNS = ("arch", "metrics", "intermediates", "hparams")


class ExperimentDirError(NasxError, RuntimeError):
    """The experiment directory cannot be used as asked (another experiment, locked, not resumable)."""


class DamagedStoreError(ExperimentDirError):
    """The experiment's database cannot be read any more (damaged pages): nasx's message names the
    file, what survives it and how to start afresh."""


@contextlib.contextmanager
def _readable(path: Path) -> Iterator[None]:
    """Turn SQLite's "database disk image is malformed" (a damaged page, a cut copy) met while
    reading into a :class:`DamagedStoreError` naming the file, instead of a raw traceback."""
    try:
        yield
    except sqlite3.DatabaseError as e:
        if isinstance(e, sqlite3.OperationalError) and ("locked" in str(e) or _is_read_only(e)):
            raise  # busy or read-only, not damaged
        raise DamagedStoreError(
            f"{path} is damaged ({e}): nasx cannot read its trials. Each trial's arch is also in "
            f"{path.parent / TRIALS_DIR}/<id>/arch.json, and `sqlite3 {path} .recover` may save "
            "more rows; " + _MOVE_AWAY_HINT.format(path=path)
        ) from None


class TrialStore:
    """The trial table of one experiment directory: a new one with :meth:`~TrialStore.create`,
    an existing one with ``TrialStore(directory)``."""

    def __init__(
        self, directory: str | os.PathLike[str], *, lock: bool = True, read_only: bool = False
    ):
        self.directory = Path(directory)
        self._lock: FileLock | None = None
        self._path = path = self.directory / DB_NAME
        # A process creating the experiment right now holds the lock: its database may still
        # be empty. Only a database that nobody is writing must hold nasx's tables.
        being_created = _locked_by_another_process(self.directory)
        if not being_created:
            _check_not_empty(path)
        if read_only:
            self._db = _connect_read_only(path)
            _check_is_experiment(self._db, path, allow_new=being_created)
            return
        if lock:
            self._acquire_lock()
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            _check_is_experiment(self._db, path, allow_new=True)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            # One transaction: a kill while the tables are made leaves all of them or none.
            self._db.executescript(f"BEGIN;\n{_SCHEMA}\nCOMMIT;")
            if not has_hparams_column(self._db):  # a database written before hparams existed
                self._db.execute("ALTER TABLE trials ADD COLUMN hparams TEXT NOT NULL DEFAULT '{}'")
            if not has_column(self._db, "budget"):  # one written before budgets existed
                self._db.execute("ALTER TABLE trials ADD COLUMN budget NUMERIC")
            with _readable(path):  # the probe's write meets a damaged page first
                _check_writable(self._db)
        except sqlite3.OperationalError as e:
            self.close()
            if _is_read_only(e):
                raise _database_not_writable(path) from None
            raise
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------- opening
    @classmethod
    def create(cls, directory: str | os.PathLike[str], meta: dict[str, Any]) -> TrialStore:
        """A new experiment in ``directory`` (created if needed); refuses to overwrite anything."""
        directory = Path(directory)
        if (directory / DB_NAME).exists():
            raise ExperimentDirError(
                f"{directory} already holds an experiment ({directory / DB_NAME})"
            )
        if (directory / TRIALS_DIR).exists():
            raise ExperimentDirError(
                f"{directory / TRIALS_DIR} exists but {directory} holds no nasx experiment database; "
                "refusing to write trial folders over it: choose another workdir"
            )
        directory.mkdir(parents=True, exist_ok=True)
        store = cls(directory)
        store.set_meta_all(meta)
        return store

    @classmethod
    def exists(cls, directory: str | os.PathLike[str]) -> bool:
        return (Path(directory) / DB_NAME).exists()

    @classmethod
    def _lock_only(cls, directory: Path) -> None:
        """Raise if another process holds the directory's lock (then release ours)."""
        store = cls.__new__(cls)
        store.directory, store._lock = directory, None
        store._acquire_lock()
        if store._lock is not None:
            store._lock.release()

    def _acquire_lock(self) -> None:
        self._lock = acquire_workdir_lock(self.directory, ExperimentDirError)

    def close(self) -> None:
        """Close the database and release the directory lock."""
        if getattr(self, "_db", None) is not None:
            self._db.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _has_tables(self) -> bool:
        names = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master")}
        return {"meta", "trials"} <= names

    # ----------------------------------------------------------------- meta
    def meta(self) -> dict[str, Any]:
        if not self._has_tables():
            return {}
        with _readable(self._path):
            return {k: json.loads(v) for k, v in self._db.execute("SELECT key, value FROM meta")}

    def set_meta(self, key: str, value: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def set_meta_all(self, meta: dict[str, Any]) -> None:
        """Write every key of ``meta`` in one transaction: a kill leaves all of them or none."""
        rows = [(key, json.dumps(value)) for key, value in meta.items()]
        with self.atomic():
            self._db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", rows)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """The writes made in the block are one transaction: a kill leaves all of them or none
        (a trial's row and the scheduler state that knows of it). Inside another ``atomic``
        block it joins the outer transaction.

            >>> import tempfile
            >>> store = TrialStore.create(tempfile.mkdtemp(), {'kind': 'multi-trial'})
            >>> with store.atomic():
            ...     store.add(Trial(0, {'k': 3}, 'running')); store.set_meta('note', 1)
            >>> len(store.trials()), store.meta()['note']
            (1, 1)
            >>> store.close()
        """
        if self._db.in_transaction:
            yield
            return
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # ----------------------------------------------------------------- trials
    def trial_dir(self, trial_id: int) -> Path:
        return self.directory / TRIALS_DIR / str(trial_id)

    def log_path(self, trial_id: int) -> Path:
        return self.trial_dir(trial_id) / "trial.log"

    def add(self, trial: Trial) -> None:
        """Insert a new trial (one write) and write its folder with ``arch.json``."""
        # Plain os calls: pathlib and text-mode files cost more than the work itself here,
        # once per trial (the syscalls are what a trivial trial's storage is made of).
        folder = os.path.join(self.directory, TRIALS_DIR, str(trial.id))
        _make_folder(folder)
        _write_text(os.path.join(folder, "arch.json"), json.dumps(trial.arch, indent=2) + "\n")
        if trial.hparams:
            text = json.dumps(trial.hparams, indent=2) + "\n"
            _write_text(os.path.join(folder, "hparams.json"), text)
        self._db.execute(_INSERT, _row(trial))

    def update(self, trial: Trial) -> None:
        """Overwrite a trial's row with its new state (one write); its arch, written by
        :meth:`add`, never changes and is not encoded again."""
        cur = self._db.execute(_UPDATE, (*_state(trial), trial.id))
        if cur.rowcount != 1:
            raise KeyError(f"trial {trial.id} is not in {self.directory / DB_NAME}")

    def trials(self, lazy: bool = False) -> list[Trial]:
        """Every stored trial, by id. ``lazy``: as :class:`~nasx.experiment.storage.stored.StoredTrial`
        objects, which decode their JSON fields (arch, metrics, ...) only when these are read
        (a table of 100k trials opens 3x faster and renders archs from their stored text);
        without it every field is decoded now, in one pass (faster when all will be read)."""
        if not self._has_tables():
            return []  # read while another process creates the experiment
        with _readable(self._path):
            if lazy:
                return _read_lazy(self._db, "ORDER BY id")
            return _read_trials(self._db, "ORDER BY id")

    def best(self, direction: str, top_k: int) -> list[Trial]:
        """The ``top_k`` best succeeded trials (as :func:`nasx.trial.best_trials` ranks them:
        ties by the lower id, rows without a metric last), found by SQLite without reading the
        other trials."""
        if direction not in ("maximize", "minimize"):
            raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
        if not self._has_tables():
            return []
        order = "DESC" if direction == "maximize" else "ASC"
        where = "WHERE status = 'succeeded' AND metric IS NOT NULL"
        with _readable(self._path):
            ranked = _read_trials(self._db, f"{where} ORDER BY metric {order}, id LIMIT {top_k:d}")
            if len(ranked) < top_k:  # rows without a metric (a one-shot run's exports) come after
                rest = f"WHERE status = 'succeeded' AND metric IS NULL ORDER BY id LIMIT {top_k - len(ranked):d}"
                ranked += _read_trials(self._db, rest)
        return ranked

    def replace_trials(self, trials: list[Trial]) -> None:
        """Replace every stored row by ``trials`` in one transaction (a kill leaves the old rows
        or the new ones): a one-shot run's exported archs, written again when it is resumed.

            >>> import tempfile
            >>> store = TrialStore.create(tempfile.mkdtemp(), {'kind': 'one-shot'})
            >>> store.replace_trials([Trial(0, {'op': 'conv'}, 'succeeded')])
            >>> store.replace_trials([Trial(0, {'op': 'pool'}, 'succeeded')])
            >>> [t.arch for t in store.trials()]
            [{'op': 'pool'}]
            >>> store.close()
        """
        self._db.execute("BEGIN")
        try:
            self._db.execute("DELETE FROM trials")
            self._db.executemany(_INSERT, [_row(t) for t in trials])
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def next_id(self) -> int:
        with _readable(self._path):
            (n,) = self._db.execute("SELECT COALESCE(MAX(id) + 1, 0) FROM trials").fetchone()
        return int(n)


def remove_experiment(directory: str | os.PathLike[str]) -> None:
    """Delete what nasx wrote in ``directory`` (database, trial folders, workers' files, one-shot
    checkpoints); anything else there is left alone. Refused while another process runs it.

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); TrialStore.create(d, {}).close(); remove_experiment(d)
    >>> TrialStore.exists(d)
    False
    """
    import shutil

    directory = Path(directory)
    if not directory.exists():
        return
    TrialStore._lock_only(directory)
    for name in (
        DB_NAME,
        DB_NAME + "-wal",
        DB_NAME + "-shm",
        LOCK_NAME,
        LOCK_PID_NAME,
        "oneshot.json",
        "nasx.evaluating",  # runner.MARK_SPARE: what trials' evaluating marks link to
    ):
        (directory / name).unlink(missing_ok=True)
    for name in (TRIALS_DIR, "workers", "checkpoints", "weights"):
        shutil.rmtree(directory / name, ignore_errors=True)


def load_trials(directory: str | os.PathLike[str]) -> list[Trial]:
    """Read the trials of an experiment directory (even while another process runs it), each
    decoding its JSON fields when first read (:class:`~nasx.experiment.storage.stored.StoredTrial`).

    Reading takes no lock and writes no rows, and a directory we cannot write falls back to
    SQLite's read-only ``immutable`` mode, so a finished experiment on read-only storage (shared
    results, another user's) can be read.

    >>> load_trials('/nonexistent')
    Traceback (most recent call last):
    ...
    FileNotFoundError: no nasx experiment in /nonexistent (no nasx.db)
    """
    if not TrialStore.exists(directory):
        raise FileNotFoundError(f"no nasx experiment in {directory} (no {DB_NAME})")
    store = TrialStore(directory, read_only=True)
    try:
        return store.trials(lazy=True)
    finally:
        store.close()


def best_stored(directory: str | os.PathLike[str], direction: str, top_k: int) -> list[Trial]:
    """The ``top_k`` best succeeded trials stored in ``directory`` (none without a database),
    ranked by SQLite without reading the others."""
    if not TrialStore.exists(directory):
        return []
    store = TrialStore(directory, read_only=True)
    try:
        return store.best(direction, top_k)
    finally:
        store.close()


_MOVE_AWAY_HINT = (
    "nasx never replaces it: move it away (for example `mv {path} {path}.bad`) to start a new "
    "experiment in this directory, or choose another workdir"
)


def _locked_by_another_process(directory: Path) -> bool:
    """Whether a process holds the directory's lock (a probe: taken and released at once).

    Never creates the lock file (a reader writes nothing), and a lock file it cannot open
    (read-only storage, another user's) counts as not held, as before.
    """
    path = directory / LOCK_NAME
    if not path.exists():
        return False
    probe = FileLock(path, thread_local=False)
    try:
        probe.acquire(timeout=0)
    except Timeout:
        return True
    except OSError:
        return False
    probe.release()
    return False


def _check_not_empty(path: Path) -> None:
    """A 0-byte database (an interrupted copy, a full disk) must not become an empty experiment."""
    # In WAL mode a young database keeps its pages in nasx.db-wal until a checkpoint, so the
    # main file alone may be 0 bytes.
    wal = path.with_name(path.name + "-wal")
    try:
        empty = path.stat().st_size == 0 and (not wal.exists() or wal.stat().st_size == 0)
    except FileNotFoundError:
        return
    if empty:
        raise ExperimentDirError(
            f"{path} is empty (0 bytes), so it holds no trials and is not a nasx experiment "
            f"database (an interrupted copy?); " + _MOVE_AWAY_HINT.format(path=path)
        )


def _check_is_experiment(db: sqlite3.Connection, path: Path, allow_new: bool = False) -> None:
    """Refuse a file that is not SQLite, or SQLite without nasx's tables, naming the file."""
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    except (
        sqlite3.DatabaseError
    ) as e:  # "file is not a database", "database disk image is malformed"
        db.close()
        raise ExperimentDirError(
            f"{path} is not a readable nasx experiment database ({e}); "
            + _MOVE_AWAY_HINT.format(path=path)
        ) from None
    if allow_new and tables <= _OWN_SCHEMA:
        return  # being created right now, or a creation cut short (killed) before its tables
    if not {"meta", "trials"} <= tables:
        db.close()
        raise ExperimentDirError(
            f"{path} is an SQLite database but not a nasx experiment (tables: {sorted(tables)}); "
            + _MOVE_AWAY_HINT.format(path=path)
        )


def _check_writable(db: sqlite3.Connection) -> None:
    """Raise SQLite's read-only error now, not at the first trial: a ``nasx.db`` that cannot be
    written in a folder that can (the file's mode, a read-only bind mount of the file) opens
    without complaint, and nothing above writes to an existing database. One row is written and
    rolled back: the file is left as it was."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("INSERT OR REPLACE INTO meta VALUES ('nasx.write_probe', 'null')")
    finally:
        db.execute("ROLLBACK")


def _is_read_only(error: sqlite3.OperationalError) -> bool:
    """SQLite's SQLITE_READONLY (``sqlite_errorname`` exists from Python 3.11; its message
    before)."""
    name = getattr(error, "sqlite_errorname", None)
    return name == "SQLITE_READONLY" or (name is None and "readonly database" in str(error))


def _database_not_writable(path: Path) -> WorkdirNotWritableError:
    """nasx's one-line error for a database file it may read but not write."""
    refused = WorkdirNotWritableError(
        f"cannot write {path} (the database file is read-only): `nasx show/export/plot/serve` "
        "and load_model read the experiment where it is; to run or resume it, make the file "
        f"writable (chmod u+w {path}) or copy the directory to writable storage and resume the "
        "copy"
    )
    refused.errno = errno.EACCES  # still an OSError a caller can inspect (one-line message)
    return refused


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """Open for reading only. In a read-only directory SQLite cannot create the WAL index, so
    fall back to ``immutable=1`` (nobody can be writing a directory we cannot write either)."""
    uri = path.resolve().as_uri()
    db = None
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        db.execute("SELECT name FROM sqlite_master").fetchall()
        return db
    except sqlite3.OperationalError:  # "unable to open database file": no WAL index possible
        if db is not None:
            db.close()
    except sqlite3.DatabaseError:
        assert db is not None  # connect raises only OperationalError
        return db  # not a database at all: _check_is_experiment says so, naming the file
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)


_INSERT = f"INSERT INTO trials ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
# Everything of a trial but its id, arch and hparams: what a state change rewrites.
_STATE_COLUMNS = tuple(c for c in _COLUMNS[2:] if c != "hparams")
_UPDATE = f"UPDATE trials SET {', '.join(f'{c} = ?' for c in _STATE_COLUMNS)} WHERE id = ?"


def _state(trial: Trial) -> tuple[Any, ...]:
    """The row's state columns, each field encoded once (``Trial.to_dict`` would deep-copy them
    first: most of the per-trial cost of storage in a long experiment of fast trials)."""
    return (
        trial.status,
        trial.metric,
        _json(trial.metrics),
        _json(trial.intermediates),
        trial.start_time,
        trial.end_time,
        trial.duration,
        trial.error,
        trial.budget,
    )


def _row(trial: Trial) -> tuple[Any, ...]:
    *state, budget = _state(trial)
    return (trial.id, json.dumps(trial.arch), *state, _json(trial.hparams), budget)


# What json.dumps gives for the empty containers a row mostly holds (no metrics yet, no
# intermediates, no hparams): three of a new trial's JSON columns, without the encoder's call.
_EMPTY_JSON: dict[type, str] = {dict: "{}", list: "[]"}


def _json(value: Any) -> str:
    """``json.dumps(value)``; an empty dict or list without calling the encoder.

    >>> [_json({}), _json([]), _json({'default': 0.5}), _json([1.0])]
    ['{}', '[]', '{"default": 0.5}', '[1.0]']
    """
    if not value:
        text = _EMPTY_JSON.get(type(value))
        if text is not None:
            return text
    return json.dumps(value)


def _make_folder(path: str) -> None:
    """``path`` as a folder (its parents too, the first time); one that exists is fine."""
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    except FileNotFoundError:  # the experiment's first trial: trials/ is made here
        os.makedirs(path, exist_ok=True)


def _write_text(path: str, text: str) -> None:
    """Write ``text`` (ASCII: nasx's JSON escapes the rest) to ``path``, replacing what it held."""
    data = text.encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def has_hparams_column(db: sqlite3.Connection) -> bool:
    """Whether the trials table has the ``hparams`` column (databases before it do not)."""
    return has_column(db, "hparams")


def has_column(db: sqlite3.Connection, name: str) -> bool:
    """Whether the trials table has the column ``name`` (older databases lack newer ones)."""
    return any(row[1] == name for row in db.execute("PRAGMA table_info(trials)"))


def _budget_column(db: sqlite3.Connection) -> str:
    """What reads the budget: the column, or NULL in a read-only database written before it."""
    return "budget" if has_column(db, "budget") else "NULL"


# The scalar columns as stored, then the JSON ones joined by SQLite into one array per row.
_READ = (
    "SELECT id, status, metric, start_time, end_time, duration, error, {budget}, "
    "'[' || arch || ',' || metrics || ',' || intermediates || ',' || {hparams} || ']' FROM trials"
)


def _read_trials(db: sqlite3.Connection, clause: str) -> list[Trial]:
    """The trials ``SELECT ... FROM trials <clause>`` finds. All their JSON is decoded in one
    ``json.loads`` (three calls per trial took most of the time to reopen 100k trials)."""
    # a read-only database written before the hparams column existed reads as empty hparams
    read = _READ.format(
        hparams="hparams" if has_hparams_column(db) else "'{}'", budget=_budget_column(db)
    )
    # The cyclic garbage collector would walk the young objects again and again while millions
    # are created (a third of the time): none of them can form a cycle, so it waits.
    enabled = gc.isenabled()
    gc.disable()
    try:
        rows = db.execute(f"{read} {clause}").fetchall()
        decoded = json.loads("[" + ",".join([row[8] for row in rows]) + "]")
        return [
            Trial(
                i, arch, status, metric, metrics, intermediates, start, end, duration, error, hp, b
            )
            for (i, status, metric, start, end, duration, error, b, _), (
                arch,
                metrics,
                intermediates,
                hp,
            ) in zip(rows, decoded, strict=True)
        ]
    finally:
        if enabled:
            gc.enable()


_READ_LAZY = (
    "SELECT id, status, metric, start_time, end_time, duration, error, "
    "arch, metrics, intermediates, {hparams}, {budget} FROM trials"
)


def _read_lazy(db: sqlite3.Connection, clause: str) -> list[Trial]:
    """The trials ``SELECT ... FROM trials <clause>`` finds, their JSON kept as text until read."""
    read = _READ_LAZY.format(
        hparams="hparams" if has_hparams_column(db) else "'{}'", budget=_budget_column(db)
    )
    with gc_paused():
        return list(itertools.starmap(stored_trial, db.execute(f"{read} {clause}").fetchall()))
