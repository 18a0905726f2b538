"""TrialStore: SQLite in WAL mode, exact round trip of every trial field, one folder per trial."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from nasx.experiment import ExperimentDirError, TrialStore, load_trials
from nasx.trial import Trial


def test_round_trip_of_every_field(tmp_path):
    store = TrialStore.create(
        tmp_path, {"space": "Net", "search_space": {"k": "Categorical([3, 5])"}}
    )
    t = Trial(0, {"k": 3, "skip": [0, 2], "op": "conv"}, "running", start_time=10.5)
    store.add(t)
    done = Trial(
        0,
        t.arch,
        "succeeded",
        metric=0.75,
        metrics={"default": 0.75, "loss": 0.1},
        intermediates=[0.5, 0.75],
        start_time=10.5,
        end_time=12.0,
        duration=1.5,
    )
    store.update(done)
    store.add(Trial(1, {"k": 5}, "failed", error="RuntimeError: x\nTraceback ...", end_time=13.0))
    assert store.trials() == [
        done,
        Trial(1, {"k": 5}, "failed", error="RuntimeError: x\nTraceback ...", end_time=13.0),
    ]
    assert store.meta() == {"space": "Net", "search_space": {"k": "Categorical([3, 5])"}}
    assert store.next_id() == 2
    assert json.loads((tmp_path / "trials" / "0" / "arch.json").read_text()) == t.arch
    store.close()
    assert load_trials(tmp_path) == [
        done,
        Trial(1, {"k": 5}, "failed", error="RuntimeError: x\nTraceback ...", end_time=13.0),
    ]


def test_database_uses_wal(tmp_path):
    TrialStore.create(tmp_path, {}).close()
    (mode,) = sqlite3.connect(tmp_path / "nasx.db").execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"


def test_update_of_an_unknown_trial_is_an_error(tmp_path):
    store = TrialStore.create(tmp_path, {})
    with pytest.raises(KeyError, match="trial 7"):
        store.update(Trial(7, {}, "failed"))
    store.close()


def test_create_refuses_an_existing_experiment(tmp_path):
    TrialStore.create(tmp_path, {}).close()
    with pytest.raises(ExperimentDirError, match="already holds an experiment"):
        TrialStore.create(tmp_path, {})


def test_load_trials_of_a_missing_experiment(tmp_path):
    with pytest.raises(FileNotFoundError, match="no nasx experiment"):
        load_trials(tmp_path)


def _experiment_with_two_trials(directory):
    store = TrialStore.create(directory, {"space": "Net"})
    store.add(Trial(0, {"k": 3}, "succeeded", metric=0.5, metrics={"default": 0.5}))
    store.add(Trial(1, {"k": 5}, "running"))
    store.close()


@pytest.mark.parametrize("read_only", [False, True])
def test_an_empty_database_is_refused_naming_the_file_and_left_alone(tmp_path, read_only):
    (tmp_path / "nasx.db").write_bytes(b"")
    with pytest.raises(ExperimentDirError, match=r"nasx.db is empty \(0 bytes\).*move it away"):
        TrialStore(tmp_path, read_only=read_only)
    assert (tmp_path / "nasx.db").read_bytes() == b""


@pytest.mark.parametrize("read_only", [False, True])
def test_a_corrupted_database_is_refused_naming_the_file_and_left_alone(tmp_path, read_only):
    _experiment_with_two_trials(tmp_path)
    path = tmp_path / "nasx.db"
    garbage = b"\x13\x37" * 4096
    path.write_bytes(garbage)
    for extra in ("nasx.db-wal", "nasx.db-shm"):
        (tmp_path / extra).unlink(missing_ok=True)
    with pytest.raises(ExperimentDirError, match=r"nasx.db is not a readable nasx experiment.*mv "):
        TrialStore(tmp_path, read_only=read_only)
    assert path.read_bytes() == garbage


def test_an_sqlite_file_of_another_program_is_refused(tmp_path):
    db = sqlite3.connect(tmp_path / "nasx.db")
    db.execute("CREATE TABLE songs (title TEXT)")
    db.commit()
    db.close()
    with pytest.raises(ExperimentDirError, match=r"not a nasx experiment \(tables: \['songs'\]\)"):
        load_trials(tmp_path)


def test_reading_falls_back_to_immutable_when_the_directory_is_read_only(tmp_path, monkeypatch):
    # Root may write anywhere, so simulate what SQLite says in a read-only directory: a
    # read-only connection to a WAL database cannot create its index ("unable to open").
    _experiment_with_two_trials(tmp_path)
    real_connect = sqlite3.connect
    opened = []

    def connect(target, *args, **kwargs):
        opened.append(str(target))
        if "mode=ro" in str(target):
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    assert [(t.id, t.status) for t in load_trials(tmp_path)] == [(0, "succeeded"), (1, "running")]
    assert opened[-1].endswith("?immutable=1")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only directory")
def test_a_read_only_experiment_directory_can_be_read(tmp_path):
    _experiment_with_two_trials(tmp_path / "exp")
    for p in [tmp_path / "exp", *(tmp_path / "exp").rglob("*")]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        assert [t.id for t in load_trials(tmp_path / "exp")] == [0, 1]
    finally:
        for p in [tmp_path / "exp", *(tmp_path / "exp").rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)


# ----------------------------------------------------------------------------- the write path
def test_a_trials_files_and_row_hold_what_the_json_encoder_gives(tmp_path):
    # The reference is json.dumps itself: the files byte for byte (as Path.write_text wrote
    # them before), each JSON column as stored.
    store = TrialStore.create(tmp_path, {})
    arch = {"op": "sep_conv_3x3", "skip": [0, 2], "w": 0.5, "name": "é"}
    hparams = {"lr": 0.01, "opt": "adam"}
    trials = [
        Trial(0, arch, "running", start_time=1.0, hparams=hparams),
        Trial(1, {}, "running", metrics={}, intermediates=[]),
        Trial(2, {"k": [0]}, "succeeded", metric=0.5, metrics={"default": 0.5, "n": -0.0}),
        Trial(3, {"k": 1}, "failed", intermediates=[0.25, 1e16], error="E: x"),
    ]
    for t in trials:
        store.add(t)
    folder = tmp_path / "trials" / "0"
    assert (folder / "arch.json").read_bytes() == (json.dumps(arch, indent=2) + "\n").encode()
    assert (folder / "hparams.json").read_bytes() == (json.dumps(hparams, indent=2) + "\n").encode()
    assert not (tmp_path / "trials" / "1" / "hparams.json").exists()
    columns = "arch, metrics, intermediates, hparams"
    rows = store._db.execute(f"SELECT {columns} FROM trials ORDER BY id").fetchall()
    expected = [
        tuple(json.dumps(v) for v in (t.arch, t.metrics, t.intermediates, t.hparams))
        for t in trials
    ]
    assert rows == expected
    store.close()


def test_adding_a_trial_again_rewrites_its_arch_file_and_a_file_in_its_place_is_an_error(
    tmp_path,
):
    store = TrialStore.create(tmp_path, {})
    folder = tmp_path / "trials" / "0"
    folder.mkdir(parents=True)
    (folder / "arch.json").write_text('{"stale": "and longer than the new arch"}\n')
    store.add(Trial(0, {"k": 1}, "running"))  # a folder left by a killed run is reused
    assert json.loads((folder / "arch.json").read_text()) == {"k": 1}
    (tmp_path / "trials" / "1").write_text("not a folder")
    with pytest.raises(FileExistsError):
        store.add(Trial(1, {"k": 2}, "running"))
    store.close()


def _damage_pages(db_path):
    """Overwrite the type byte of every b-tree page but the first (the schema): SQLite then
    reads "database disk image is malformed" wherever it meets one."""
    import sqlite3

    db = sqlite3.connect(db_path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (page,) = db.execute("PRAGMA page_size").fetchone()
    db.close()
    data = bytearray(db_path.read_bytes())
    for start in range(page, len(data), page):
        data[start] = 0x77
    db_path.write_bytes(bytes(data))


def test_damaged_pages_are_nasxs_own_error_everywhere(tmp_path, capsys):
    """Issue 29: run, load_trials, export and trial_table raised a raw sqlite3.DatabaseError."""
    from nasx import cli
    from nasx.experiment import load_trials
    from nasx.experiment.storage.store import DamagedStoreError
    from tests.toy_experiment import make_experiment

    exp = make_experiment(tmp_path, max_trials=40, progress=False)
    _damage_pages(tmp_path / "nasx.db")
    calls = {
        "load_trials": lambda: load_trials(tmp_path),
        "export_top_models": lambda: exp.export_top_models(3),
        "trial_table": lambda: str(exp.trial_table()),
        "resume": lambda: make_experiment(tmp_path, max_trials=50, resume=True, progress=False),
    }
    for name, call in calls.items():
        with pytest.raises(DamagedStoreError, match=r"nasx.db is damaged \(database disk image"):
            call()
            pytest.fail(f"{name} read a damaged database without an error")
    assert isinstance(DamagedStoreError("x"), ExperimentDirError)
    for command in ("show", "export", "plot"):
        assert cli.main([command, str(tmp_path)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is damaged" in err and "arch.json" in err


def test_a_creation_killed_between_the_tables_is_taken_up_again(tmp_path):
    """A kill while the schema was made (before it was one transaction) left ``meta`` without
    ``trials``; opening the workdir again finishes the schema instead of refusing it."""
    import sqlite3

    db = sqlite3.connect(tmp_path / "nasx.db")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.commit()
    db.close()
    store = TrialStore(tmp_path)
    try:
        store.add(Trial(0, {"k": 3}, "running"))
        assert [t.id for t in store.trials()] == [0]
    finally:
        store.close()
    other = tmp_path / "other"
    other.mkdir()
    db = sqlite3.connect(other / "nasx.db")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("CREATE TABLE results (x)")  # not nasx's: refused as before
    db.commit()
    db.close()
    with pytest.raises(ExperimentDirError, match="not a nasx experiment"):
        TrialStore(other)
