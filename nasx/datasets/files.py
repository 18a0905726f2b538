"""File helpers: split checks, content digests, atomic ``.npy`` writes, downloads."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["download_file"]

_SPLITS = ("train", "test")
log = logging.getLogger("nasx.datasets")  # one logger for the package, as before the split


def _check_split(split: str) -> None:
    if split not in _SPLITS:
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")


def _save_npy_atomic(path: Path, array: np.ndarray) -> None:
    """Write ``array`` to a temporary file in the same folder, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, array)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def download_file(url: str, dest: Path, md5: str | None = None) -> Path:
    """Fetch ``url`` to ``dest`` (temporary file + rename), checking ``md5`` when given.

    Example:
        >>> import tempfile, pathlib
        >>> src = pathlib.Path(tempfile.mkdtemp()) / 'a.txt'
        >>> _ = src.write_text('hi')
        >>> download_file(src.as_uri(), src.with_name('b.txt'), md5='49f68a5c8493ec2c0bf489821c21fc3b').read_text()
        'hi'
    """
    import urllib.request

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    log.warning("downloading %s to %s", url, dest)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".tmp")
    try:
        digest = hashlib.md5()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
            for block in iter(lambda: response.read(1 << 20), b""):
                digest.update(block)
                out.write(block)
        if md5 is not None and digest.hexdigest() != md5:
            raise ValueError(f"{url}: md5 {digest.hexdigest()} differs from the expected {md5}")
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest


def _file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@lru_cache(maxsize=8)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:10]


def _cache_paths(source: Path, dataset: str, split: str) -> tuple[Path, Path]:
    """Where the decoded (images, labels) ``.npy`` of ``source`` live: keyed by its content digest,
    so a changed source file never serves a stale cache."""
    from .locate import cache_dir

    stat = source.stat()
    tag = _file_digest(str(source), stat.st_size, stat.st_mtime_ns)
    folder = cache_dir() / dataset
    return (
        folder / f"{dataset}-{split}-{tag}-images.npy",
        folder / f"{dataset}-{split}-{tag}-labels.npy",
    )
