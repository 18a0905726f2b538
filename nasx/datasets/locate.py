"""Where the data lives: data-directory discovery, the cache folder, DataNotFoundError."""

from __future__ import annotations

import os
from pathlib import Path

from .._errors import NasxError

__all__ = ["DataNotFoundError", "cache_dir", "find_data_dir"]


class DataNotFoundError(NasxError, FileNotFoundError):
    """Data is not on disk; the message lists every place looked and how to get the data."""


def _repo_root() -> Path:
    """Parent of the ``nasx`` package (the repository root in a source checkout)."""
    return Path(__file__).resolve().parents[2]  # nasx/datasets/locate.py -> repository root


def _data_dir_candidates() -> list[Path]:
    """``$NASX_DATA_DIR``, then ``../shared/data`` from the cwd and from the repository root."""
    candidates = []
    if os.environ.get("NASX_DATA_DIR"):
        candidates.append(Path(os.environ["NASX_DATA_DIR"]).expanduser())
    candidates.append(Path.cwd() / ".." / "shared" / "data")
    candidates.append(_repo_root() / ".." / "shared" / "data")
    unique = []
    for path in (p.resolve() for p in candidates):
        if path not in unique:
            unique.append(path)
    return unique


def find_data_dir() -> Path | None:
    """The first existing data directory: ``$NASX_DATA_DIR``, ``../shared/data`` (cwd, repo root).

    Example:
        >>> d = find_data_dir()
        >>> d is None or d.is_dir()
        True
    """
    for candidate in _data_dir_candidates():
        if candidate.is_dir():
            return candidate.resolve()
    return None


def cache_dir() -> Path:
    """Where decoded arrays are cached: the ``data/`` folder of nasx's one cache root
    (``$NASX_CACHE_DIR``, else ``$XDG_CACHE_HOME/nasx``, else ``~/.cache/nasx``; see ``nasx._cache``).

    Example:
        >>> cache_dir().name
        'data'
    """
    from nasx._cache import cache_dir as nasx_cache_dir

    return nasx_cache_dir("data")
