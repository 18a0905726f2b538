"""Get NATS-Bench's topology release onto disk: download it (checksummed), or read its tar.

:mod:`nasx.evaluator.nasbench201_release` converts an unpacked release folder into nasx's
NAS-Bench-201 table. This module gives it that folder from whatever the user has:

- a folder already unpacked: used as it is;
- the release's tar (``NATS-tss-v1_0-3ffb9-simple.tar``, any compression ``tarfile`` reads):
  only the release's own files are taken out of it (``meta.pickle.pbz2`` and
  ``NNNNNN.pickle.pbz2``, by their base name), never a path the archive names, so a crafted tar
  cannot write outside the folder (no ``..``, no absolute path, no link);
- an ``http(s)://`` or ``file://`` URL of that tar: streamed to disk through a temporary file
  and hashed on the way; with ``sha256=`` a download whose digest differs is deleted and refused
  before anything reads it.

NATS-Bench publishes its files on Google Drive without checksums, so nasx cannot pin the tar's
SHA-256 for you; what it pins is the *converted table*
(:data:`~nasx.evaluator.nasbench201_release.TABLE_SHA256`), which the converter checks before it
installs a table. The release's pickles are read with an unpickler that admits only plain data
types, so even an unchecked download cannot run code.

    >>> import tarfile, tempfile, pathlib
    >>> work = pathlib.Path(tempfile.mkdtemp())
    >>> (work / 'meta.pickle.pbz2').write_bytes(b'meta')
    4
    >>> with tarfile.open(work / 'release.tar', 'w') as tar:
    ...     tar.add(work / 'meta.pickle.pbz2', arcname='NATS-tss-v1_0-3ffb9-simple/meta.pickle.pbz2')
    >>> folder = release_folder(str(work / 'release.tar'), work / 'unpacked')
    >>> sorted(p.name for p in folder.iterdir())
    ['meta.pickle.pbz2']
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

from nasx.datasets.files import ChecksumMismatchError, download_file, file_sha256

__all__ = ["ChecksumMismatchError", "download", "release_folder", "unpack_release"]

#: the base names of the release's files; nothing else is taken out of an archive
_MEMBER = re.compile(r"(meta|[0-9]{6})\.pickle\.pbz2")
#: a release file is a few kB to a few MB; a member claiming more is not one of them
MAX_MEMBER_BYTES = 256 * 2**20
_CHUNK = 2**20


def download(
    url: str,
    dest: str | os.PathLike,
    *,
    sha256: str | None = None,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Stream ``url`` to ``dest`` and return it; with ``sha256``, refuse a different file
    (:func:`nasx.datasets.files.download_file`: a temporary file renamed only once complete and
    checked, so an interrupted or wrong download never looks like a finished one).

        >>> import pathlib, tempfile
        >>> src = pathlib.Path(tempfile.mkdtemp()) / 'a.bin'
        >>> _ = src.write_bytes(b'nasx')
        >>> download(src.as_uri(), src.with_name('b.bin')).read_bytes()
        b'nasx'
        >>> download(src.as_uri(), src.with_name('c.bin'), sha256='0' * 64)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        nasx.datasets.files.ChecksumMismatchError: file:///.../a.bin has sha256 ...
    """
    want = _checked_digest(sha256)
    return download_file(url, Path(dest), sha256=want, timeout=timeout, progress=progress)


def unpack_release(archive: str | os.PathLike, into: str | os.PathLike) -> Path:
    """Take the release's files out of the tar ``archive`` into the folder ``into``; return it.

    Only regular files whose base name is a release file's (``meta.pickle.pbz2``,
    ``NNNNNN.pickle.pbz2``) are written, under that base name: the archive's paths, links and
    other members are never used, so it cannot write anywhere else.
    """
    archive, into = Path(archive), Path(into)
    into.mkdir(parents=True, exist_ok=True)
    try:
        tar = tarfile.open(archive)  # noqa: SIM115 (closed below; open() raises before `with`)
    except (tarfile.TarError, OSError) as err:
        raise ValueError(
            f"{archive} is not a tar archive ({err}): give the NATS-tss-v1_0-3ffb9-simple.tar "
            "file, its unpacked folder, or a URL of the tar"
        ) from None
    with tar:
        for member in tar:
            name = member.name.rsplit("/", 1)[-1]
            if not member.isfile() or not _MEMBER.fullmatch(name):
                continue
            if member.size > MAX_MEMBER_BYTES:
                raise ValueError(
                    f"{archive}: {member.name} claims {member.size} bytes, more than a release "
                    f"file holds (at most {MAX_MEMBER_BYTES}): not a NATS-Bench release"
                )
            source = tar.extractfile(member)
            assert source is not None  # a regular file always has a file object
            with source, open(into / name, "wb") as out:
                shutil.copyfileobj(source, out, _CHUNK)
    return into


def release_folder(
    source: str,
    work: str | os.PathLike,
    *,
    sha256: str | None = None,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """A folder holding the unpacked release, from ``source``: a folder, a tar or a URL of one.

    Args:
        source: an unpacked release folder (returned as it is), a tar file, or an
            ``http(s)://`` / ``file://`` URL of the tar.
        work: where a download and the unpacked files go (the caller deletes it).
        sha256: the tar's expected SHA-256 (a download or a local tar): a different file is
            refused before it is read.
        timeout: seconds a download may stall before it is given up.
        progress: called as a download goes (:func:`download`'s ``progress``).
    """
    work = Path(work)
    if "://" in source:
        if not source.startswith(("http://", "https://", "file://")):
            raise ValueError(f"{source!r}: only http://, https:// and file:// URLs are fetched")
        archive = download(
            source, work / "release.tar", sha256=sha256, timeout=timeout, progress=progress
        )
        return unpack_release(archive, work / "release")
    path = Path(source)
    if path.is_dir():
        if sha256 is not None:
            raise ValueError(
                f"--sha256 checks a tar or a download; {path} is a folder (give the tar instead)"
            )
        return path
    if not path.exists():
        raise FileNotFoundError(
            f"{source}: no such file or folder (give the NATS-tss-v1_0-3ffb9-simple.tar file, "
            "its unpacked folder, or a URL of the tar)"
        )
    want = _checked_digest(sha256)
    if want is not None:
        got = file_sha256(path)
        if got != want:
            raise ChecksumMismatchError(f"{path} has SHA-256 {got}, not the {want} asked for")
    return unpack_release(path, work / "release")


def _checked_digest(sha256: str | None) -> str | None:
    if sha256 is None:
        return None
    digest = sha256.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError(f"sha256 must be 64 hexadecimal digits, got {sha256!r}")
    return digest
