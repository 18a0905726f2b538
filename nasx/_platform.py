"""POSIX-only features, refused with one clear message elsewhere (Windows).

nasx imports and runs everywhere Python and torch do; the few features that need POSIX call
:func:`require_posix` where they start, so a Windows user learns what to use instead at once,
not from a traceback deep in ``subprocess``.

    >>> require_posix("a test feature")  # on Linux and macOS: nothing happens
"""

from __future__ import annotations

import os
import signal

from ._errors import NasxError


class PosixOnlyError(NasxError, NotImplementedError):
    """A feature that needs a POSIX system (Linux, macOS) was used on another one (Windows)."""


def has_posix() -> bool:
    """Whether this system has what the POSIX-only features use (``SIGKILL``, fd passing)."""
    return os.name == "posix" and hasattr(signal, "SIGKILL")


def require_posix(feature: str, instead: str = "") -> None:
    """Raise :class:`PosixOnlyError` naming ``feature`` (and what to use ``instead``) off POSIX."""
    if not has_posix():
        hint = f"; {instead}" if instead else ""
        raise PosixOnlyError(
            f"{feature} needs a POSIX system (Linux, macOS), not {os.name!r}{hint}"
        )
