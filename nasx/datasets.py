"""Local datasets: find data on disk (download only when asked), decode once, cache, serve tensors.

Search order for the data directory: ``$NASX_DATA_DIR``, then ``../shared/data`` relative to the
current directory and to the repository root. CIFAR-10 is decoded from the JPEG archive
``cifar10/cifar10_jpg.tar.gz`` into uint8 ``.npy`` files under ``$NASX_CACHE_DIR`` (default
``~/.cache/nasx``); Fashion-MNIST is read from IDX gzip files (Debian ``dataset-fashion-mnist``).
``python -m nasx.datasets`` prints what would be used. Sections: locations, file helpers,
ArrayImageDataset, CIFAR-10, Fashion-MNIST.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import re
import struct
import tarfile
import tempfile
import warnings
from collections.abc import Callable, Iterator
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
    "download_file",
    "fashion_mnist",
    "find_data_dir",
    "read_idx",
]

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer",
                   "dog", "frog", "horse", "ship", "truck")  # fmt: skip
# Official CIFAR-10 training-set statistics (the usual normalization constants).
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
FASHION_MNIST_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                         "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")  # fmt: skip
FASHION_MNIST_SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")
# Used only when no local copy exists and download=True is passed.
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"
FASHION_MNIST_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_SPLITS = ("train", "test")
_CIFAR_COUNTS = {"train": 50_000, "test": 10_000}
log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Locations


class DataNotFoundError(FileNotFoundError):
    """Data is not on disk; the message lists every place looked and how to get the data."""


def _repo_root() -> Path:
    """Parent of the ``nasx`` package (the repository root in a source checkout)."""
    return Path(__file__).resolve().parent.parent


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
    """Where decoded arrays are cached: ``$NASX_CACHE_DIR`` or ``~/.cache/nasx``.

    Example:
        >>> cache_dir().is_absolute()
        True
    """
    return Path(os.environ.get("NASX_CACHE_DIR") or Path.home() / ".cache" / "nasx").expanduser()


# --------------------------------------------------------------------------------------------
# File helpers: atomic writes, downloads


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


class ArrayImageDataset(Dataset):
    """Images held as a uint8 array (N, C, H, W); items are ``(float32 C x H x W, int label)``.

    Pixels are scaled to [0, 1], then ``transform`` (tensor to tensor, e.g. random crop/flip) is
    applied, then ``(x - mean) / std`` when ``mean``/``std`` are given. When ``source`` names the
    ``.npy`` cache files, pickling sends only those paths (cheap to ship to worker processes).
    ``origin`` says where the data came from (a file path or URL).

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
        origin: str = "in-memory arrays",
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
        self.origin = origin  # where the data came from, for logs and demos
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
            if not (Path(images_path).exists() and Path(labels_path).exists()):
                raise DataNotFoundError(
                    f"this dataset was pickled by reference to its cache files {images_path} and "
                    f"{labels_path}, which this machine lacks: share the cache folder "
                    "(NASX_CACHE_DIR) or build the dataset here"
                )
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


class _UnusualTar(ValueError):
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
            if member.isfile():
                yield member.name, tar.extractfile(member).read()


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
    labels = np.load(archive.parent / "cifar10_labels_canonical.npz")[split].astype(np.uint8)
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
    stat = archive.stat()
    tag = _file_digest(str(archive), stat.st_size, stat.st_mtime_ns)
    folder = cache_dir() / "cifar10"
    images_path = folder / f"cifar10-{split}-{tag}-images.npy"
    labels_path = folder / f"cifar10-{split}-{tag}-labels.npy"
    if not (images_path.exists() and labels_path.exists()):
        log.info("decoding CIFAR-10 %s from %s (once; cached in %s)", split, archive, folder)
        images, labels = _decode_cifar10(archive, split)
        _save_npy_atomic(labels_path, labels)
        _save_npy_atomic(images_path, images)
    return images_path, labels_path


def _read_cifar10_python(tarball: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Read the original ``cifar-10-python.tar.gz`` batches: (N, 3, 32, 32) uint8, (N,) uint8."""
    import pickle

    names = [f"data_batch_{i}" for i in range(1, 6)] if split == "train" else ["test_batch"]
    batches = {}
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar:
            if member.isfile() and Path(member.name).name in names:
                # the batches are Python pickles made by the dataset's authors (checksum verified)
                batches[Path(member.name).name] = pickle.load(
                    tar.extractfile(member), encoding="bytes"
                )
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
    the original archive from the CIFAR-10 website. ``transform`` maps the [0, 1] float tensor to
    a tensor; then ``normalize`` applies the official per-channel mean/std. ``dataset.origin``
    says which data was used. Raises :class:`DataNotFoundError` when nothing is found.

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
    images = np.load(images_path, mmap_mode="r")
    labels = np.load(labels_path)
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
            paths = tuple(folder / (name + suffix) for name in names)
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
    paths = tuple(folder / (name + ".gz") for name in _fashion_mnist_names(split))
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
    stat = images_idx.stat()
    tag = _file_digest(str(images_idx), stat.st_size, stat.st_mtime_ns)
    folder = cache_dir() / "fashion-mnist"
    images_path = folder / f"fashion-mnist-{split}-{tag}-images.npy"
    labels_path = folder / f"fashion-mnist-{split}-{tag}-labels.npy"
    if not (images_path.exists() and labels_path.exists()):
        images = read_idx(images_idx)  # (N, 28, 28) uint8
        labels = read_idx(labels_idx)  # (N,) uint8
        if images.ndim != 3 or len(images) != len(labels):
            raise ValueError(f"{images_idx}: {images.shape} images for {labels.shape} labels")
        _save_npy_atomic(labels_path, labels)
        _save_npy_atomic(images_path, images[:, None])  # (N, 1, 28, 28)
    log.info("Fashion-MNIST %s: %s", split, images_idx)
    return ArrayImageDataset(
        np.load(images_path, mmap_mode="r"),
        np.load(labels_path),
        transform=transform,
        classes=FASHION_MNIST_CLASSES,
        source=(images_path, labels_path),
        origin=str(images_idx),
    )


def _describe() -> str:
    """Where each dataset would be read from, without decoding anything (``python -m nasx.datasets``)."""
    lines = [
        f"data directory: {find_data_dir()} (looked at {', '.join(map(str, _data_dir_candidates()))})"
    ]
    lines.append(f"cache directory: {cache_dir()}")
    for name, locate in (
        ("cifar10", lambda: _find_cifar10(None)),
        ("fashion_mnist", lambda: _find_fashion_mnist(None, "train")[0]),
    ):
        try:
            lines.append(f"{name}: {locate()}")
        except DataNotFoundError as err:
            lines.append(f"{name}: not found ({str(err).splitlines()[0]})")
    return "\n".join(lines)


if __name__ == "__main__":
    print(_describe())
