"""Local datasets: find data on disk (never download silently), decode once, cache, serve tensors.

Search order for the data directory: ``$NASX_DATA_DIR``, then ``../shared/data`` relative to the
current directory and to the repository root. CIFAR-10 is decoded from the JPEG archive
``cifar10/cifar10_jpg.tar.gz`` into uint8 ``.npy`` files under ``$NASX_CACHE_DIR`` (default
``~/.cache/nasx``); Fashion-MNIST is read from IDX gzip files (Debian ``dataset-fashion-mnist``).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import struct
import tarfile
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

__all__ = [
    "CIFAR10_CLASSES",
    "CIFAR10_MEAN",
    "CIFAR10_STD",
    "FASHION_MNIST_CLASSES",
    "ArrayImageDataset",
    "DataNotFoundError",
    "cache_dir",
    "cifar10",
    "fashion_mnist",
    "find_data_dir",
]

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer",
                   "dog", "frog", "horse", "ship", "truck")  # fmt: skip
# Official CIFAR-10 training-set statistics (the usual normalization constants).
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                         "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")  # fmt: skip
FASHION_MNIST_SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")
_SPLITS = ("train", "test")
_CIFAR_COUNTS = {"train": 50_000, "test": 10_000}


class DataNotFoundError(FileNotFoundError):
    """Data is not on disk; the message lists every place looked and how to get the data."""


def _repo_root() -> Path:
    """Parent of the ``nasx`` package (the repository root in a source checkout)."""
    return Path(__file__).resolve().parent.parent


def _data_dir_candidates() -> list[Path]:
    candidates = []
    if os.environ.get("NASX_DATA_DIR"):
        candidates.append(Path(os.environ["NASX_DATA_DIR"]).expanduser())
    candidates.append(Path.cwd() / ".." / "shared" / "data")
    candidates.append(_repo_root() / ".." / "shared" / "data")
    return candidates


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
    """Where decoded arrays are cached: ``$NASX_CACHE_DIR`` or ``~/.cache/nasx``.

    Example:
        >>> cache_dir().name in ('nasx', os.environ.get('NASX_CACHE_DIR', 'nasx').rstrip('/').split('/')[-1])
        True
    """
    return Path(os.environ.get("NASX_CACHE_DIR") or Path.home() / ".cache" / "nasx").expanduser()


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


class ArrayImageDataset(Dataset):
    """Images held as a uint8 array (N, C, H, W); items are ``(float32 C x H x W, int label)``.

    Pixels are scaled to [0, 1], then ``transform`` (tensor to tensor, e.g. random crop/flip) is
    applied, then ``(x - mean) / std`` when ``mean``/``std`` are given. When ``source`` names the
    ``.npy`` cache files, pickling sends only those paths (cheap to ship to worker processes).

    Example:
        >>> import numpy as np
        >>> ds = ArrayImageDataset(np.full((2, 1, 2, 2), 255, np.uint8), np.array([3, 1]))
        >>> x, y = ds[0]
        >>> x.shape, float(x.max()), y
        (torch.Size([1, 2, 2]), 1.0, 3)
    """

    def __init__(
        self,
        images: np.ndarray,
        labels: np.ndarray,
        transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
        mean: tuple[float, ...] | None = None,
        std: tuple[float, ...] | None = None,
        classes: tuple[str, ...] = (),
        source: tuple[Path, Path] | None = None,
    ) -> None:
        if len(images) != len(labels):
            raise ValueError(f"{len(images)} images but {len(labels)} labels")
        self.images = images  # (N, C, H, W) uint8, possibly memory-mapped
        self.targets = np.asarray(labels, dtype=np.int64)  # (N,)
        self.transform = transform
        self.mean = mean
        self.std = std
        self.classes = classes
        self.source = source
        self._norm = None
        if mean is not None and std is not None:
            # (C, 1, 1) so that they broadcast over (C, H, W)
            self._norm = (torch.tensor(mean).view(-1, 1, 1), torch.tensor(std).view(-1, 1, 1))

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        x = torch.from_numpy(np.array(self.images[index], dtype=np.float32)) / 255.0  # (C, H, W)
        if self.transform is not None:
            x = self.transform(x)
        if self._norm is not None:
            x = (x - self._norm[0]) / self._norm[1]
        return x, int(self.targets[index])

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self.source is not None and all(Path(p).exists() for p in self.source):
            state["images"] = state["targets"] = None  # reloaded from the cache files
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.images is None:
            images_path, labels_path = self.source
            self.images = np.load(images_path, mmap_mode="r")
            self.targets = np.load(labels_path).astype(np.int64)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={len(self)}, shape={tuple(self.images.shape[1:])})"


# --------------------------------------------------------------------------------------------
# CIFAR-10


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


@lru_cache(maxsize=8)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:10]


def _decode_cifar10(archive: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Decode one split's JPEGs into canonical order: images (N, 3, 32, 32) uint8, labels (N,)."""
    from PIL import Image

    labels = np.load(archive.parent / "cifar10_labels_canonical.npz")[split].astype(np.uint8)
    # File NNNN.jpg of class c is the NNNN-th image of class c in canonical order.
    positions = {c: np.flatnonzero(labels == c) for c in range(len(CIFAR10_CLASSES))}
    class_index = {name: i for i, name in enumerate(CIFAR10_CLASSES)}
    images = np.zeros((len(labels), 3, 32, 32), dtype=np.uint8)
    filled = np.zeros(len(labels), dtype=bool)
    pattern = re.compile(rf"^(?:\./)?{split}/([a-z]+)/(\d+)\.jpg$")
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            match = pattern.match(member.name)
            if match is None or not member.isfile():
                continue
            c, k = class_index[match.group(1)], int(match.group(2))
            pos = positions[c][k]
            data = tar.extractfile(member).read()
            with Image.open(io.BytesIO(data)) as img:
                images[pos] = np.asarray(img.convert("RGB")).transpose(2, 0, 1)  # HWC -> CHW
            filled[pos] = True
    if not filled.all():
        raise ValueError(
            f"{archive}: {int((~filled).sum())} {split} images missing from the archive"
        )
    return images, labels


def _cifar10_arrays(archive: Path, split: str) -> tuple[Path, Path]:
    """Paths of the cached (images, labels) ``.npy`` files, decoding the archive on a cache miss."""
    stat = archive.stat()
    tag = _file_digest(str(archive), stat.st_size, stat.st_mtime_ns)
    folder = cache_dir() / "cifar10"
    images_path = folder / f"cifar10-{split}-{tag}-images.npy"
    labels_path = folder / f"cifar10-{split}-{tag}-labels.npy"
    if not (images_path.exists() and labels_path.exists()):
        images, labels = _decode_cifar10(archive, split)
        _save_npy_atomic(labels_path, labels)
        _save_npy_atomic(images_path, images)
    return images_path, labels_path


def cifar10(
    split: str = "train",
    root: str | os.PathLike | None = None,
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    normalize: bool = True,
) -> ArrayImageDataset:
    """CIFAR-10 as a Dataset of ``(float32 image 3x32x32, int label)`` in canonical order.

    Decoded from ``<data dir>/cifar10/cifar10_jpg.tar.gz`` (found by :func:`find_data_dir`, or
    under ``root``) once and cached as uint8 ``.npy`` files (see :func:`cache_dir`). ``transform``
    maps the [0, 1] float tensor to a tensor; then ``normalize`` applies the official per-channel
    mean/std. Raises :class:`DataNotFoundError` when the archive is absent.

    Example:
        >>> test = cifar10('test')  # doctest: +SKIP
        >>> x, y = test[0]; x.shape, test.classes[y]  # doctest: +SKIP
        (torch.Size([3, 32, 32]), 'cat')
    """
    _check_split(split)
    archive = _find_cifar10(root)
    images_path, labels_path = _cifar10_arrays(archive, split)
    images = np.load(images_path, mmap_mode="r")
    labels = np.load(labels_path)
    if images.shape != (_CIFAR_COUNTS[split], 3, 32, 32):
        raise ValueError(
            f"cache file {images_path} has shape {images.shape}; delete it to re-decode"
        )
    return ArrayImageDataset(
        images,
        labels,
        transform=transform,
        mean=CIFAR10_MEAN if normalize else None,
        std=CIFAR10_STD if normalize else None,
        classes=CIFAR10_CLASSES,
        source=(images_path, labels_path),
    )


# --------------------------------------------------------------------------------------------
# Fashion-MNIST

_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


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


def _find_fashion_mnist(root: str | os.PathLike | None, split: str) -> tuple[Path, Path]:
    prefix = "train" if split == "train" else "t10k"
    names = (f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte")
    folders = []
    if root is not None:
        folders += [Path(root).expanduser(), Path(root).expanduser() / "fashion-mnist"]
    else:
        folders += [d / "fashion-mnist" for d in _data_dir_candidates()]
        folders.append(FASHION_MNIST_SYSTEM_DIR)
    looked = []
    for folder in folders:
        for suffix in (".gz", ""):
            paths = tuple(folder / (name + suffix) for name in names)
            looked.append(str(paths[0]))
            if all(p.is_file() for p in paths):
                return paths
    raise DataNotFoundError(
        f"Fashion-MNIST ({split}) not found. Looked for {names[0]}(.gz) and its labels at:\n  "
        + "\n  ".join(looked)
        + "\nInstall it with `apt-get install dataset-fashion-mnist` (files go to "
        f"{FASHION_MNIST_SYSTEM_DIR}), or pass root=<folder with the IDX files>"
    )


def fashion_mnist(
    split: str = "train",
    root: str | os.PathLike | None = None,
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> ArrayImageDataset:
    """Fashion-MNIST as a Dataset of ``(float32 image 1x28x28 in [0, 1], int label)``.

    Read from ``root`` (or ``root/fashion-mnist``), else ``<data dir>/fashion-mnist``, else
    ``/usr/share/datasets/fashion-mnist`` (Debian package ``dataset-fashion-mnist``).

    Example:
        >>> train = fashion_mnist('train')  # doctest: +SKIP
        >>> len(train), train[0][0].shape  # doctest: +SKIP
        (60000, torch.Size([1, 28, 28]))
    """
    _check_split(split)
    images_path, labels_path = _find_fashion_mnist(root, split)
    images = read_idx(images_path)  # (N, 28, 28) uint8
    labels = read_idx(labels_path)  # (N,) uint8
    return ArrayImageDataset(
        images[:, None], labels, transform=transform, classes=FASHION_MNIST_CLASSES
    )
