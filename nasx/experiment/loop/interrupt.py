"""Stopping a run on purpose: Ctrl-C, and SIGTERM (what ``docker stop``, Slurm and Kubernetes
send) handled the same way.

The trials in flight are stored as interrupted (``waiting``, with an ``Interrupted`` note: they
run again on resume and count no crash), one line says how to resume, and the exception goes on:
``KeyboardInterrupt`` for Ctrl-C, ``SystemExit(143)`` (128 + SIGTERM, the exit status of a
process that SIGTERM ended) for SIGTERM.

    >>> from pathlib import Path
    >>> print(*resume_hint(Path('runs/a'), 1).split('; '), sep=chr(10))
    stopped: 1 trial in flight stored as interrupted (run again on resume)
    continue with `nasx resume runs/a` or NasExperiment(..., resume=True)

The signal itself is tested with real ``SIGTERM`` sent to a child process
(``tests/experiment/test_interruptions.py``): a doctest must not signal the process running it.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from nasx.experiment.display.progress import announce

__all__ = [
    "SIGTERM_EXIT_CODE",
    "resume_hint",
    "run_until_stopped",
    "sigterm_as_interrupt",
]

SIGTERM_EXIT_CODE = 128 + 15


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[list[int]]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` in the main thread, as Ctrl-C does,
    and is noted in the list the block gets (once: a second SIGTERM while the trials in flight
    are being stored is ignored). Nothing changes outside the main thread, or when the
    application set its own SIGTERM handler."""
    received: list[int] = []
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield received
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        received.append(signum)
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, handler)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def resume_hint(workdir: Path, interrupted: int) -> str:
    """The one line printed when a run is stopped."""
    trials = f"{interrupted} trial{'' if interrupted == 1 else 's'} in flight stored as interrupted"
    return (
        f"stopped: {trials} (run again on resume); continue with `nasx resume {workdir}` "
        "or NasExperiment(..., resume=True)"
    )


def run_until_stopped(loop: Any, queue: list[Any], workdir: Path) -> str | None:
    """``loop.run(queue)`` (a :class:`~nasx.experiment.loop.trial_loop.TrialLoop`), with Ctrl-C and
    SIGTERM storing the trials in flight as interrupted; the stop reason. The line on how to
    resume is shown even with ``progress=False``: it is what the person who stopped it needs."""
    terminated: list[int] = []
    try:
        with sigterm_as_interrupt() as terminated:
            reason: str | None = loop.run(queue)
            return reason
    except KeyboardInterrupt:
        announce(resume_hint(workdir, len(loop.interrupted)))
        if terminated:
            raise SystemExit(SIGTERM_EXIT_CODE) from None
        raise
