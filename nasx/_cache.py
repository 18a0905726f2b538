"""The one cache root of nasx, and its fixed subfolders.

The root is the first of:

1. ``$NASX_CACHE_DIR`` (when set and not empty; ``~`` expanded);
2. ``$XDG_CACHE_HOME/nasx`` (when set to an absolute path, as the XDG spec asks);
3. the platform's cache folder: ``%LOCALAPPDATA%\\nasx`` on Windows, ``~/.cache/nasx`` elsewhere
   (macOS included, as torch.hub does).

Under it, each kind of file has its own folder: ``hub/`` (published weights), ``data/`` (decoded
datasets), ``compiled/`` (compiled artifacts). Every call reads the environment again, so a test
or a script may change it at any time.

    >>> import os
    >>> os.environ["NASX_CACHE_DIR"] = "/tmp/nasx-cache"
    >>> cache_dir("hub").as_posix()
    '/tmp/nasx-cache/hub'
    >>> del os.environ["NASX_CACHE_DIR"]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

CacheKind = Literal["hub", "data", "compiled"]
KINDS: tuple[CacheKind, ...] = ("hub", "data", "compiled")


def cache_root() -> Path:
    """The cache root (see the module docstring for the order); not created here."""
    explicit = os.environ.get("NASX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "nasx"
    if _on_windows():
        local = os.environ.get("LOCALAPPDATA")
        if local:
            return Path(local) / "nasx"
    return Path.home() / ".cache" / "nasx"


def _on_windows() -> bool:
    return sys.platform == "win32"


def cache_dir(kind: CacheKind) -> Path:
    """The folder for one kind of cached file: ``'hub'``, ``'data'`` or ``'compiled'``."""
    if kind not in KINDS:
        raise ValueError(f"cache kind must be one of {list(KINDS)}, got {kind!r}")
    return cache_root() / kind
