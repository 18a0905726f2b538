"""CIFAR-10: decode the JPEG archive once into cached ``.npy`` arrays, else the downloaded original."""

from __future__ import annotations

import gzip
import io
import logging
import os
import pickle
import re
import tarfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._errors import NasxError
from .arrays import ArrayImageDataset
from .files import _cache_paths, _check_split, _save_npy_atomic, download_file, file_sha256
from .locate import DataNotFoundError, _data_dir_candidates, cache_dir

__all__ = ["CIFAR10_CLASSES", "CIFAR10_MEAN", "CIFAR10_STD", "cifar10"]

#: CIFAR-10's class names, in label order (label 0 is ``'airplane'``).
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer",
                   "dog", "frog", "horse", "ship", "truck")  # fmt: skip
# Official CIFAR-10 training-set statistics (the usual normalization constants).
#: Per-channel (R, G, B) mean of CIFAR-10's training images, on the [0, 1] scale.
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
#: Per-channel (R, G, B) standard deviation of CIFAR-10's training images, on the [0, 1] scale.
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
# Used only when no local copy exists and download=True is passed.
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"  # the one the CIFAR-10 page publishes
# SHA-256 of the same file (as Keras pins it): checked before every read of its pickled batches.
CIFAR10_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
_CIFAR_COUNTS = {"train": 50_000, "test": 10_000}
log = logging.getLogger("nasx.datasets")  # one logger for the package, as before the split


def _find_cifar10(root: str | os.PathLike | None) -> Path:
    """Locate ``cifar10_jpg.tar.gz``; ``root`` is the data directory or its ``cifar10/`` folder."""
    looked = []
    roots = [Path(root).expanduser()] if root is not None else _data_dir_candidates()
    for r in roots:
        for candidate in (r / "cifar10" / "cifar10_jpg.tar.gz", r / "cifar10_jpg.tar.gz"):
            looked.append(str(candidate))
            if (
                candidate.is_file()
                and (candidate.parent / "cifar10_labels_canonical.npz").is_file()
            ):
                return candidate
    raise DataNotFoundError(
        "CIFAR-10 not found. Looked for cifar10/cifar10_jpg.tar.gz (with "
        "cifar10_labels_canonical.npz beside it) at:\n  " + "\n  ".join(looked) + "\n"
        "Set NASX_DATA_DIR to the folder holding cifar10/, or pass root=..."
    )


class _UnusualTar(NasxError, ValueError):
    """The fast tar reader met an entry it does not handle (long names, sparse files...)."""


def _tar_gz_files_fast(path: Path) -> Iterator[tuple[str, bytes]]:
    """Yield ``(name, content)`` of regular files in a ``.tar.gz``, reading POSIX headers directly.

    ``tarfile`` spends about 2 s building 60,000 TarInfo objects; walking the 512-byte ustar
    headers of the decompressed archive takes a fraction of that. Raises :class:`_UnusualTar`
    on entries other than plain files and folders.
    """
    data = gzip.decompress(path.read_bytes())
    offset = 0
    while offset + 512 <= len(data):
        header = data[offset : offset + 512]
        if header.count(0) == 512:  # end-of-archive marker
            return
        kind = header[156:157]
        size_field = header[124:136]
        if kind not in (b"0", b"\0", b"5") or size_field[0] & 0x80:
            raise _UnusualTar(f"tar entry type {kind!r}")
        name = header[:100].split(b"\0", 1)[0].decode()
        prefix = header[345:500].split(b"\0", 1)[0].decode() if header[257:262] == b"ustar" else ""
        size = int(size_field.split(b"\0", 1)[0].strip() or b"0", 8)
        if kind != b"5":
            yield (f"{prefix}/{name}" if prefix else name), data[offset + 512 : offset + 512 + size]
        offset += 512 + -(-size // 512) * 512  # contents are padded to 512-byte blocks


def _tar_gz_files(path: Path) -> Iterator[tuple[str, bytes]]:
    """Regular files of a ``.tar.gz`` as ``(name, content)``; tarfile when the fast path balks."""
    try:
        yield from _tar_gz_files_fast(path)
        return
    except _UnusualTar:
        pass
    with tarfile.open(path, "r:gz") as tar:
        for member in tar:
            f = tar.extractfile(member) if member.isfile() else None
            if f is not None:  # None for anything but a regular file
                yield member.name, f.read()


def _decode_jpegs(blobs: list[bytes], use_torchvision: bool = True) -> np.ndarray:
    """Decode same-size RGB JPEGs into an (N, 3, H, W) uint8 array.

    torchvision's batched libjpeg-turbo decoder is about twice as fast as Pillow here and gives
    identical pixels on the CIFAR-10 archive; Pillow is the fallback.
    """
    if use_torchvision:
        try:
            with warnings.catch_warnings():
                # torchvision 0.29 deprecates its image codecs; Pillow takes over once they go
                warnings.simplefilter("ignore", DeprecationWarning)
                from torchvision.io import ImageReadMode, decode_jpeg

                tensors = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in blobs]
                return torch.stack(decode_jpeg(tensors, mode=ImageReadMode.RGB)).numpy()
        except (ImportError, RuntimeError) as err:  # no torchvision, or built without libjpeg
            log.info("torchvision JPEG decoding unavailable (%s); using Pillow", err)
    from PIL import Image

    out = []
    for blob in blobs:
        with Image.open(io.BytesIO(blob)) as img:
            rgb = img if img.mode == "RGB" else img.convert("RGB")
            out.append(np.asarray(rgb).transpose(2, 0, 1))  # (H, W, 3) -> (3, H, W)
    return np.stack(out)


def _decode_cifar10(
    archive: Path, split: str, use_torchvision: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Decode one split's JPEGs into canonical order: images (N, 3, 32, 32) uint8, labels (N,)."""
    labels = np.load(archive.parent / "cifar10_labels_canonical.npz", allow_pickle=False)[
        split
    ].astype(np.uint8)
    # File NNNN.jpg of class c is the NNNN-th image of class c in canonical order.
    positions = {c: np.flatnonzero(labels == c) for c in range(len(CIFAR10_CLASSES))}
    class_index = {name: i for i, name in enumerate(CIFAR10_CLASSES)}
    pattern = re.compile(rf"^(?:\./)?{split}/([a-z]+)/(\d+)\.jpg$")
    order, blobs = [], []
    for name, data in _tar_gz_files(archive):
        match = pattern.match(name)
        if match is not None:
            order.append(positions[class_index[match.group(1)]][int(match.group(2))])
            blobs.append(data)
    if sorted(order) != list(range(len(labels))):
        raise ValueError(
            f"{archive}: expected {len(labels)} distinct {split} images, found {len(order)} files"
        )
    images = np.empty((len(labels), 3, 32, 32), dtype=np.uint8)
    images[np.asarray(order)] = _decode_jpegs(blobs, use_torchvision)
    return images, labels


def _cifar10_from_archive(archive: Path, split: str) -> tuple[Path, Path]:
    """Paths of the cached (images, labels) ``.npy`` files, decoding the archive on a cache miss."""
    images_path, labels_path = _cache_paths(archive, "cifar10", split)
    folder = images_path.parent
    if not (images_path.exists() and labels_path.exists()):
        log.info("decoding CIFAR-10 %s from %s (once; cached in %s)", split, archive, folder)
        images, labels = _decode_cifar10(archive, split)
        _save_npy_atomic(labels_path, labels)
        _save_npy_atomic(images_path, images)
    return images_path, labels_path


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles what CIFAR-10's batches hold (dicts, lists, bytes, numpy arrays) and nothing else.

    A second guard after the checksum: any global other than numpy's array constructors (the
    way a pickle runs code) is refused by name instead of being imported and called.
    """

    _ALLOWED = {
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("_codecs", "encode"):  # bytes in a protocol-2 pickle written by py3
            return _latin1_bytes
        # the batches were written by numpy 1 (numpy.core); numpy 2 calls it numpy._core
        modern = re.sub(r"^numpy\.core\b", "numpy._core", module)
        if (modern, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(
                f"refusing to unpickle the global {module}.{name}: CIFAR-10 batches hold only "
                "dicts, lists, bytes and numpy arrays"
            )
        return super().find_class(modern if hasattr(np, "_core") else module, name)


def _latin1_bytes(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode`` as protocol-2 pickles use it for bytes, and only that use."""
    if not isinstance(text, str) or encoding != "latin1":
        raise pickle.UnpicklingError("refusing _codecs.encode other than str to latin-1 bytes")
    return text.encode("latin1")


def _verify_cifar10_tarball(tarball: Path) -> None:
    """Refuse ``tarball`` unless its SHA-256 is the published archive's: its batches are pickles,
    and unpickling a file anyone with write access to the cache put there would run their code."""
    actual = file_sha256(tarball)
    if actual != CIFAR10_SHA256:
        raise ValueError(
            f"{tarball}: sha256 {actual} is not that of the CIFAR-10 archive ({CIFAR10_SHA256}); "
            "refusing to unpickle its batches (a tampered pickle runs code). Delete the file and "
            f"pass download=True to fetch {CIFAR10_URL} again"
        )


def _read_cifar10_python(tarball: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Read the original ``cifar-10-python.tar.gz`` batches: (N, 3, 32, 32) uint8, (N,) uint8.

    Every call checks the archive's SHA-256 first (a cached copy as much as a fresh download)
    and unpickles with :class:`_ArrayUnpickler`; the arrays are then cached as ``.npy`` files,
    which are read back without pickle (``allow_pickle=False``).
    """
    _verify_cifar10_tarball(tarball)
    names = [f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]
    batches = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar:
            f = tar.extractfile(member) if member.isfile() else None
            if f is not None and Path(member.name).name in names:
                try:
                    batches[Path(member.name).name] = _ArrayUnpickler(f, encoding="bytes").load()
                except pickle.UnpicklingError as e:
                    raise ValueError(f"{tarball}: {member.name}: {e}") from None
    missing = [n for n in names if n not in batches]
    if missing:
        raise ValueError(f"{tarball} lacks CIFAR-10 batches {missing}")
    # each batch: b"data" (10000, 3072) uint8 rows of R, G, B planes; b"labels" list of ints
    images = np.concatenate([batches[n][b"data"] for n in names]).reshape(-1, 3, 32, 32)
    labels = np.concatenate([np.asarray(batches[n][b"labels"], np.uint8) for n in names])
    return images, labels


def _cifar10_downloaded(
    split: str, download: bool, not_found: DataNotFoundError
) -> tuple[Path, Path, str]:
    """Cached arrays from the original archive, downloading it first when allowed."""
    folder = cache_dir() / "cifar10"
    images_path = folder / f"cifar10-{split}-python-images.npy"
    labels_path = folder / f"cifar10-{split}-python-labels.npy"
    origin = f"{CIFAR10_URL} (downloaded; decoded cache {images_path})"
    if images_path.exists() and labels_path.exists():
        return images_path, labels_path, origin
    tarball = folder / Path(CIFAR10_URL).name
    if not tarball.exists():
        if not download:
            raise DataNotFoundError(
                f"{not_found}\nOr pass download=True to fetch {CIFAR10_URL} into {folder}"
            ) from None
        download_file(CIFAR10_URL, tarball, md5=CIFAR10_MD5)
    images, labels = _read_cifar10_python(tarball, split)
    _save_npy_atomic(labels_path, labels)
    _save_npy_atomic(images_path, images)
    return images_path, labels_path, origin


def cifar10(
    split: str = "train",
    root: str | os.PathLike | None = None,
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    normalize: bool = True,
    download: bool = False,
) -> ArrayImageDataset:
    """CIFAR-10 as a Dataset of ``(float32 image 3x32x32, int label)`` in canonical order.

    Decoded from ``<data dir>/cifar10/cifar10_jpg.tar.gz`` (found by :func:`find_data_dir`, or
    under ``root``) once and cached as uint8 ``.npy`` files (see :func:`cache_dir`). Only when
    that archive is absent: a previously downloaded copy in the cache, then (``download=True``)
    the original archive from the CIFAR-10 website; that archive (cached or fresh) is read only
    after its SHA-256 matches the published one, since its batches are pickles. ``transform``
    maps the [0, 1] float tensor to a tensor; then ``normalize`` applies the official
    per-channel mean/std. ``dataset.origin`` says which data was used. Raises
    :class:`DataNotFoundError` when nothing is found.

    Example:
        >>> test = cifar10('test')  # doctest: +SKIP
        >>> x, y = test[0]; x.shape, test.classes[y]  # doctest: +SKIP
        (torch.Size([3, 32, 32]), 'cat')
    """
    _check_split(split)
    try:
        archive = _find_cifar10(root)
    except DataNotFoundError as not_found:
        images_path, labels_path, origin = _cifar10_downloaded(split, download, not_found)
    else:
        images_path, labels_path = _cifar10_from_archive(archive, split)
        origin = f"{archive} (JPEG; decoded cache {images_path})"
    images = np.load(images_path, mmap_mode="r", allow_pickle=False)
    labels = np.load(labels_path, allow_pickle=False)
    if images.shape != (_CIFAR_COUNTS[split], 3, 32, 32) or len(labels) != len(images):
        raise ValueError(f"cache file {images_path} has shape {images.shape}; delete it to rebuild")
    log.info("CIFAR-10 %s: %s", split, origin)
    return ArrayImageDataset(
        images,
        labels,
        transform=transform,
        mean=CIFAR10_MEAN if normalize else None,
        std=CIFAR10_STD if normalize else None,
        classes=CIFAR10_CLASSES,
        source=(images_path, labels_path),
        origin=origin,
    )
