"""Reading an experiment from storage that really denies writes, root included.

CI runs as root, and root ignores file modes (chmod 0o444 denies it nothing), so the test that
reads a chmod-ed directory skips there. These tests deny writes in ways that hold for root:
a read-only bind mount in a private mount namespace (``unshare``; skipped where the kernel or
container refuses it), and SQLite's own read-only URIs (``mode=ro``, ``immutable=1``) opened
directly.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from nasx.experiment import TrialStore
from nasx.experiment.storage.store import DB_NAME
from nasx.trial import Trial
from tests.conftest import REPO_ROOT

MOUNT_REFUSED = 97  # the shell's exit code when the read-only bind mount cannot be made


def _experiment_with_two_trials(directory):
    store = TrialStore.create(directory, {"space": "Net"})
    store.add(Trial(0, {"k": 3}, "succeeded", metric=0.5, metrics={"default": 0.5}))
    store.add(Trial(1, {"k": 5}, "running"))
    store.close()


def _snapshot(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _run_on_read_only_mount(directory, code: str, mounted=None) -> subprocess.CompletedProcess:
    """Run Python ``code`` in a process that sees ``directory`` (or only the file ``mounted``
    in it) mounted read-only (a bind mount in its own mount namespace: nothing changes for other
    processes, and nothing is left mounted if the test dies). ``code`` finds the directory in
    ``D`` (a ``pathlib.Path``)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare (util-linux): cannot make a read-only mount")
    # root may mount in a new namespace; others only inside a user namespace that maps them root
    namespace = [unshare, "--mount"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    program = "import pathlib, sys\nD = pathlib.Path(sys.argv[1])\n" + textwrap.dedent(code)
    mount = 'mount --bind "$4" "$4" && mount -o remount,bind,ro "$4"'
    script = f'{mount} || exit {MOUNT_REFUSED}; exec "$2" -c "$3" "$1"'
    target = str(mounted if mounted is not None else directory)
    result = subprocess.run(
        [*namespace, "sh", "-c", script, "sh", str(directory), sys.executable, program, target],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    if result.returncode == MOUNT_REFUSED or "unshare failed" in result.stderr:
        pytest.skip(f"this machine refuses a read-only bind mount: {result.stderr.strip()[-300:]}")
    return result


# The process first proves the mount denies writes to it (root included), else the test is moot.
_WRITES_ARE_DENIED = """
    import errno
    try:
        (D / "probe").write_text("x")
    except OSError as e:
        assert e.errno == errno.EROFS, e
    else:
        raise SystemExit("the mount let this process write: the test would prove nothing")
"""


def test_an_experiment_on_a_read_only_mount_is_read_and_left_unchanged(tmp_path):
    exp = tmp_path / "exp"
    _experiment_with_two_trials(exp)
    before = _snapshot(exp)
    result = _run_on_read_only_mount(
        exp,
        _WRITES_ARE_DENIED
        + """
    import sqlite3
    from nasx.experiment import load_trials
    # what SQLite does here: no WAL index can be created, so mode=ro cannot open the database
    try:
        sqlite3.connect((D / "nasx.db").as_uri() + "?mode=ro", uri=True).execute(
            "SELECT count(*) FROM trials").fetchall()
        print("mode=ro opened")
    except sqlite3.OperationalError as e:
        print("mode=ro refused:", e)
    print([(t.id, t.status, t.metric) for t in load_trials(D)])
    """,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "[(0, 'succeeded', 0.5), (1, 'running', None)]" in result.stdout
    assert _snapshot(exp) == before


def test_opening_a_read_only_mount_for_writing_fails_and_loses_nothing(tmp_path):
    exp = tmp_path / "exp"
    _experiment_with_two_trials(exp)
    before = _snapshot(exp)
    result = _run_on_read_only_mount(
        exp,
        _WRITES_ARE_DENIED
        + """
    from nasx.experiment import TrialStore
    try:
        TrialStore(D)
    except OSError as e:  # the lock file cannot be written: an error naming it
        print("refused:", e)
    else:
        raise SystemExit("opened a read-only experiment for writing")
    """,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "refused:" in result.stdout and "nasx.lock" in result.stdout
    assert _snapshot(exp) == before


@pytest.mark.parametrize("query", ["mode=ro", "immutable=1"])
def test_sqlites_read_only_uris_read_every_trial_and_refuse_writes(tmp_path, query):
    """The two URIs nasx's reader opens (``storage._connect_read_only``) deny writes to anyone:
    SQLite enforces them, not the file system."""
    _experiment_with_two_trials(tmp_path)
    before = _snapshot(tmp_path)
    uri = (tmp_path / DB_NAME).resolve().as_uri()
    db = sqlite3.connect(f"{uri}?{query}", uri=True)
    try:
        assert db.execute("SELECT id, status FROM trials ORDER BY id").fetchall() == [
            (0, "succeeded"),
            (1, "running"),
        ]
        for statement in (
            "UPDATE trials SET status = 'failed'",
            "DELETE FROM trials",
            "CREATE TABLE other (x)",
        ):
            with pytest.raises(sqlite3.OperationalError, match="readonly database"):
                db.execute(statement)
    finally:
        db.close()
    after = _snapshot(tmp_path)
    assert after.pop(DB_NAME) == before.pop(DB_NAME)
    # mode=ro may leave SQLite's WAL side files behind (empty of changes); nothing else changes
    assert {k: v for k, v in after.items() if not k.startswith(DB_NAME)} == before


def test_the_store_reads_read_only_and_leaves_the_database_byte_identical(tmp_path):
    _experiment_with_two_trials(tmp_path)
    before = (tmp_path / DB_NAME).read_bytes()
    store = TrialStore(tmp_path, read_only=True)
    try:
        assert [t.id for t in store.trials()] == [0, 1]
        with pytest.raises(sqlite3.OperationalError, match="readonly database"):
            store._db.execute("DELETE FROM trials")
    finally:
        store.close()
    assert (tmp_path / DB_NAME).read_bytes() == before


def test_the_cli_reads_a_read_only_mount_and_a_resume_is_nasxs_own_error(tmp_path):
    """Issue 29: `nasx show/plot` said "corrupted" there, a resume gave a raw PermissionError."""
    from tests.toy_experiment import make_experiment

    exp = tmp_path / "exp"
    make_experiment(exp, max_trials=3, progress=False)
    before = _snapshot(exp)
    result = _run_on_read_only_mount(
        exp,
        _WRITES_ARE_DENIED
        + f"""
    import sys
    from nasx import cli
    from nasx.experiment.storage.readonly import read_experiment
    from tests.toy_experiment import make_experiment
    assert cli.main(["show", str(D), "--brief"]) == 0
    assert cli.main(["plot", str(D), "-o", {str(tmp_path / "plots")!r}]) == 0
    try:
        make_experiment(D, max_trials=5, resume=True, progress=False)
    except PermissionError as e:  # still an OSError, with nasx's one-line message
        print("refused:", type(e).__name__, e)
    else:
        raise SystemExit("resumed into a read-only directory")
    """,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "kind        multi-trial" in result.stdout and "corrupted" not in result.stdout
    assert (tmp_path / "plots" / "metric_history.png").exists()
    refused = result.stdout.split("refused: ")[1]
    assert refused.startswith("WorkdirNotWritableError cannot write ") and "nasx.lock" in refused
    assert "copy the directory to writable storage" in refused and refused.count("\n") == 1
    assert _snapshot(exp) == before


def test_a_read_only_database_file_in_a_writable_folder_is_nasxs_own_error(tmp_path):
    """Issue 45: the folder writable, nasx.db not: the resume got as far as its first write and
    died with sqlite3's raw "attempt to write a readonly database"."""
    from tests.toy_experiment import make_experiment

    exp = tmp_path / "exp"
    make_experiment(exp, max_trials=3, progress=False)
    before = _snapshot(exp)[DB_NAME]
    result = _run_on_read_only_mount(
        exp,
        """
    import errno
    try:
        open(D / "nasx.db", "ab").close()
    except OSError as e:
        assert e.errno == errno.EROFS, e
    else:
        raise SystemExit("the mount let this process write the file: the test would prove nothing")
    (D / "probe").write_text("x")  # the folder itself stays writable
    from nasx import cli
    from tests.toy_experiment import make_experiment
    assert cli.main(["show", str(D), "--brief"]) == 0
    try:
        make_experiment(D, max_trials=5, resume=True, progress=False)
    except PermissionError as e:  # still an OSError, with nasx's one-line message
        print("refused:", type(e).__name__, e)
    else:
        raise SystemExit("resumed into a read-only database")
    """,
        mounted=exp / DB_NAME,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    refused = result.stdout.split("refused: ")[1]
    assert refused.startswith(f"WorkdirNotWritableError cannot write {exp / DB_NAME} ")
    assert "the database file is read-only" in refused and refused.count("\n") == 1
    assert "sqlite3" not in result.stderr
    assert _snapshot(exp)[DB_NAME] == before
