"""Fashion-MNIST: read the IDX gzip files (Debian ``dataset-fashion-mnist``), cache them as ``.npy``."""

from __future__ import annotations

import gzip
import logging
import os
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from .arrays import ArrayImageDataset
from .files import _cache_paths, _check_split, _save_npy_atomic, download_file
from .locate import DataNotFoundError, _data_dir_candidates, cache_dir

__all__ = ["FASHION_MNIST_CLASSES", "fashion_mnist", "read_idx"]

#: Fashion-MNIST's class names, in label order (label 0 is ``'T-shirt/top'``).
FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                         "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")  # fmt: skip
FASHION_MNIST_SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")
# Used only when no local copy exists and download=True is passed.
FASHION_MNIST_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
log = logging.getLogger("nasx.datasets")  # one logger for the package, as before the split

_IDX_DTYPES: dict[int, np.dtype] = {
    code: np.dtype(t)
    for code, t in {
        0x08: "u1",
        0x09: "i1",
        0x0B: ">i2",
        0x0C: ">i4",
        0x0D: ">f4",
        0x0E: ">f8",
    }.items()
}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (optionally gzip-compressed): a 4-byte magic, dims, then big-endian data.

    Example:
        >>> import struct, tempfile, os
        >>> raw = struct.pack('>BBBB', 0, 0, 0x08, 2) + struct.pack('>II', 2, 3) + bytes(range(6))
        >>> with tempfile.NamedTemporaryFile(delete=False) as f:
        ...     _ = f.write(raw)
        >>> read_idx(f.name).tolist()
        [[0, 1, 2], [3, 4, 5]]
        >>> os.unlink(f.name)
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype_code not in _IDX_DTYPES:
        raise ValueError(f"{path} is not an IDX file (magic bytes {raw[:4].hex()})")
    shape = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=_IDX_DTYPES[dtype_code], offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says shape {shape} but holds {data.size} values")
    return data.reshape(shape)


def _fashion_mnist_names(split: str) -> tuple[str, str]:
    prefix = "train" if split == "train" else "t10k"
    return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"


def _find_fashion_mnist(root: str | os.PathLike | None, split: str) -> tuple[Path, Path]:
    names = _fashion_mnist_names(split)
    folders = []
    if root is not None:
        folders += [Path(root).expanduser(), Path(root).expanduser() / "fashion-mnist"]
    else:
        folders += [d / "fashion-mnist" for d in _data_dir_candidates()]
        folders += [FASHION_MNIST_SYSTEM_DIR, cache_dir() / "fashion-mnist"]
    looked = []
    for folder in folders:
        for suffix in (".gz", ""):
            paths = (folder / (names[0] + suffix), folder / (names[1] + suffix))
            looked.append(str(paths[0]))
            if all(p.is_file() for p in paths):
                return paths
    raise DataNotFoundError(
        f"Fashion-MNIST ({split}) not found. Looked for {names[0]}(.gz) and its labels at:\n  "
        + "\n  ".join(looked)
        + "\nInstall it with `apt-get install dataset-fashion-mnist` (files go to "
        f"{FASHION_MNIST_SYSTEM_DIR}), pass root=<folder with the IDX files>, or pass "
        f"download=True to fetch it from {FASHION_MNIST_URL} into {cache_dir() / 'fashion-mnist'}"
    )


def _download_fashion_mnist(split: str) -> tuple[Path, Path]:
    folder = cache_dir() / "fashion-mnist"
    images, labels = _fashion_mnist_names(split)
    paths = (folder / (images + ".gz"), folder / (labels + ".gz"))
    for path in paths:
        if not path.exists():
            download_file(FASHION_MNIST_URL.rstrip("/") + "/" + path.name, path)
    return paths


def fashion_mnist(
    split: str = "train",
    root: str | os.PathLike | None = None,
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    download: bool = False,
) -> ArrayImageDataset:
    """Fashion-MNIST as a Dataset of ``(float32 image 1x28x28 in [0, 1], int label)``.

    Read from ``root`` (or ``root/fashion-mnist``), else ``<data dir>/fashion-mnist``, else
    ``/usr/share/datasets/fashion-mnist`` (Debian package ``dataset-fashion-mnist``), else a
    copy downloaded earlier into the cache; ``download=True`` fetches it when all are absent.
    The IDX files are parsed once and cached as ``.npy`` (so pickling sends only paths);
    ``dataset.origin`` names the file used.

    Example:
        >>> train = fashion_mnist('train')  # doctest: +SKIP
        >>> len(train), train[0][0].shape  # doctest: +SKIP
        (60000, torch.Size([1, 28, 28]))
    """
    _check_split(split)
    try:
        images_idx, labels_idx = _find_fashion_mnist(root, split)
    except DataNotFoundError:
        if not download:
            raise
        images_idx, labels_idx = _download_fashion_mnist(split)
    images_path, labels_path = _cache_paths(images_idx, "fashion-mnist", split)
    if not (images_path.exists() and labels_path.exists()):
        images = read_idx(images_idx)  # (N, 28, 28) uint8
        labels = read_idx(labels_idx)  # (N,) uint8
        if images.ndim != 3 or len(images) != len(labels):
            raise ValueError(f"{images_idx}: {images.shape} images for {labels.shape} labels")
        _save_npy_atomic(labels_path, labels)
        _save_npy_atomic(images_path, images[:, None])  # (N, 1, 28, 28)
    log.info("Fashion-MNIST %s: %s", split, images_idx)
    return ArrayImageDataset(
        np.load(images_path, mmap_mode="r", allow_pickle=False),
        np.load(labels_path, allow_pickle=False),
        transform=transform,
        classes=FASHION_MNIST_CLASSES,
        source=(images_path, labels_path),
        origin=str(images_idx),
    )
