"""The lock of an experiment's directory: one process at a time runs a search in it.

Multi-trial runs hold it while their trial store is open (``nasx/experiment/storage/store.py``), one-shot
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

import errno
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


class WorkdirNotWritableError(NasxError, PermissionError):
    """The directory cannot be written (a read-only mount, another user's files): nasx can read
    an experiment there but not run or resume one."""


def acquire_workdir_lock(
    directory: Path,
    error: type[Exception] = WorkdirLockedError,
    *,
    reentrant: bool = False,
) -> FileLock | None:
    """Take ``directory``'s lock (creating the directory), or raise ``error`` naming the pid of
    the process holding it. With ``reentrant``, a lock this very process holds already (an
    experiment's store around a one-shot run) is fine: None is returned, nothing to release."""
    # thread_local=False: the holder may be released by another thread than the one taking it.
    lock = FileLock(directory / LOCK_NAME, thread_local=False)
    pid_file = directory / LOCK_PID_NAME
    try:
        directory.mkdir(parents=True, exist_ok=True)
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
    except OSError as e:  # after Timeout, which is an OSError too
        raise _not_writable(directory, e) from None
    try:
        pid_file.write_text(str(os.getpid()), encoding="ascii")
    except OSError as e:
        lock.release()
        raise _not_writable(directory, e) from None
    return lock


def _not_writable(directory: Path, error: OSError) -> OSError:
    """nasx's error for a workdir it cannot write (read-only storage, another user's files),
    naming the file; any other OS error (a full disk, ...) as it is."""
    if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
        return error
    refused = WorkdirNotWritableError(
        f"cannot write {error.filename or directory / LOCK_NAME} ({error.strerror}): {directory} "
        "is read-only or not yours. `nasx show/export/plot/serve` and load_model read an "
        "experiment where it is; to run or resume it, copy the directory to writable storage "
        "and resume the copy"
    )
    refused.errno = error.errno  # still an OSError a caller can inspect (one-line message)
    return refused
