"""The lock of an experiment's directory: one process at a time runs a search in it.

Multi-trial runs hold it while their trial store is open (``nasx/experiment/storage.py``), one-shot
runs while they train into ``checkpoints/`` (``nasx/strategy/oneshot/base.py``): the same lock
file, so neither kind can run into a directory another process is running in. The holder's pid
is written beside the lock (filelock owns the lock file's content), for the message.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> lock = acquire_workdir_lock(d)
    >>> (d / LOCK_PID_NAME).read_text() == str(os.getpid())
    True
    >>> lock.release()
"""

from __future__ import annotations

import os
from pathlib import Path

from filelock import FileLock, Timeout

from nasx._errors import NasxError

LOCK_NAME = "nasx.lock"
LOCK_PID_NAME = "nasx.lock.pid"  # beside the lock: filelock owns the lock file's content
# How long to wait for the lock: only a reader's probe (microseconds) is worth waiting for.
_LOCK_WAIT_S = 0.5


class WorkdirLockedError(NasxError, RuntimeError):
    """Another process is running a search in this directory."""


def acquire_workdir_lock(
    directory: Path,
    error: type[Exception] = WorkdirLockedError,
    *,
    reentrant: bool = False,
) -> FileLock | None:
    """Take ``directory``'s lock (creating the directory), or raise ``error`` naming the pid of
    the process holding it. With ``reentrant``, a lock this very process holds already (an
    experiment's store around a one-shot run) is fine: None is returned, nothing to release."""
    directory.mkdir(parents=True, exist_ok=True)
    # thread_local=False: the holder may be released by another thread than the one taking it.
    lock = FileLock(directory / LOCK_NAME, thread_local=False)
    pid_file = directory / LOCK_PID_NAME
    try:
        lock.acquire(timeout=_LOCK_WAIT_S)
    except Timeout:
        try:
            holder = pid_file.read_text(encoding="ascii").strip() or "unknown"
        except OSError:
            holder = "unknown"
        if reentrant and holder == str(os.getpid()):
            return None
        raise error(
            f"the experiment in {directory} is being run by another process (pid {holder}); "
            "wait for it to finish or stop it first"
        ) from None
    pid_file.write_text(str(os.getpid()), encoding="ascii")
    return lock
