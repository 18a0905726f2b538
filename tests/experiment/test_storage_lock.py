"""The workdir lock (filelock, portable): who holds it, and that readers neither wait nor write."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from nasx.experiment import ExperimentDirError, TrialStore, load_trials
from nasx.experiment.storage.store import LOCK_NAME, LOCK_PID_NAME


def test_the_locked_message_names_the_holders_pid(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from nasx.experiment import TrialStore
                store = TrialStore.create({str(tmp_path)!r}, {{}})
                print('locked', flush=True)
                sys.stdin.read()  # hold the lock until the test closes stdin
                store.close()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(ExperimentDirError, match=rf"another process \(pid {holder.pid}\)"):
            TrialStore(tmp_path)
        assert load_trials(tmp_path) == []  # reading needs no lock
    finally:
        holder.communicate("", timeout=60)
    TrialStore(tmp_path).close()  # released when the holder closed it


def test_a_reader_writes_no_lock_file(tmp_path):
    TrialStore.create(tmp_path, {}).close()
    (tmp_path / LOCK_NAME).unlink()
    (tmp_path / LOCK_PID_NAME).unlink()
    load_trials(tmp_path)
    assert not (tmp_path / LOCK_NAME).exists()
