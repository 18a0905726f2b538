"""File helpers: split checks, content digests, atomic ``.npy`` writes, downloads."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from nasx._errors import NasxError

__all__ = ["ChecksumMismatchError", "download_file", "file_sha256"]

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


class ChecksumMismatchError(NasxError, ValueError):
    """A downloaded or given file's digest is not the one asked for (the file is not kept)."""


def download_file(
    url: str,
    dest: Path,
    md5: str | None = None,
    *,
    sha256: str | None = None,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Fetch ``url`` to ``dest`` (temporary file + rename), checking ``md5`` or ``sha256``.

    The bytes are hashed as they arrive; ``dest`` appears only once the whole file is there and
    its digest is right, so an interrupted or wrong download never looks like a finished one
    (:class:`ChecksumMismatchError` otherwise). ``progress(bytes_so_far, total_or_None)`` is
    called after each MiB.

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
        digests = {"md5": hashlib.md5(), "sha256": hashlib.sha256()}
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            done = 0
            for block in iter(lambda: response.read(1 << 20), b""):
                for digest in digests.values():
                    digest.update(block)
                out.write(block)
                done += len(block)
                if progress is not None:
                    progress(done, total)
        for name, want in (("md5", md5), ("sha256", sha256)):
            got = digests[name].hexdigest()
            if want is not None and got != want.lower():
                raise ChecksumMismatchError(
                    f"{url} has {name} {got}, not the {want} asked for: the download is deleted "
                    "(a different or damaged file; check the URL and the checksum)"
                )
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dest


def file_sha256(path: str | os.PathLike[str]) -> str:
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
