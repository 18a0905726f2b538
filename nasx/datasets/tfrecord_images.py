"""Image datasets in TFRecord shards (the Vertex AI NAS / TF-vision layout), read and written.

Reading: :class:`TFRecordImageDataset` streams ``tf.train.Example`` records from one or more
shards (a glob such as ``'data/train-*.tfrecord'``) as ``(image, label)`` for classification or
``(image, {'boxes', 'labels'})`` for detection, with a shuffling buffer, and splits the shards
across ``DataLoader`` workers (and distributed ranks) so each record is read once per epoch.
Fields read:

- ``image/encoded`` (JPEG or PNG bytes), ``image/class/label`` (int64);
- detection: ``image/object/bbox/xmin|ymin|xmax|ymax`` (floats, relative to the image size),
  ``image/object/class/label`` (int64 per box);
- segmentation: ``image/segmentation/class/encoded`` (a PNG class mask, TF-vision's field).

Writing: :func:`write_shards` writes ``(image, label)`` pairs from any dataset (a torchvision
dataset of PIL images or tensors, :class:`~nasx.datasets.ArrayImageDataset`) and
:func:`write_image_folder` a ``root/<class>/<image>`` folder (what the TPU guide's
``jpeg_to_tf_record.py`` does), in the same layout, with ``image/height``, ``image/width``,
``image/format`` and ``image/class/text``.

    >>> import tempfile, torch
    >>> samples = [(torch.rand(3, 8, 8), i % 3) for i in range(6)]    # any (image, label) pairs
    >>> d = tempfile.mkdtemp()
    >>> paths = write_shards(samples, d + '/train', num_shards=2, image_format='png')
    >>> ds = TFRecordImageDataset(d + '/train-*.tfrecord')
    >>> sorted(int(y) for _, y in ds), next(iter(ds))[0].shape
    ([0, 0, 1, 1, 2, 2], torch.Size([3, 8, 8]))
"""

from __future__ import annotations

import glob
import io
import os
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from .tfrecord import (
    MAX_RECORD_BYTES,
    _check_max_record_bytes,
    compression_kind,
    count_records,
    decode_example,
    encode_example,
    open_records,
    read_records,
    write_record,
)

TASKS = ("classification", "detection", "segmentation")
MASK_KEY = "image/segmentation/class/encoded"  # TF-vision's class mask: a PNG, one class id a pixel
BOX_KEYS = tuple(f"image/object/bbox/{k}" for k in ("xmin", "ymin", "xmax", "ymax"))


def expand_shards(files: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """Sorted file paths from a glob pattern, a directory, a path or a list of them."""
    items = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    out: list[str] = []
    for item in items:
        s = os.fspath(item)
        if os.path.isdir(s):
            out += sorted(str(p) for p in Path(s).iterdir() if p.is_file())
        elif any(c in s for c in "*?["):
            out += sorted(glob.glob(s))
        else:
            out.append(s)
    if not out:
        raise FileNotFoundError(f"no TFRecord files match {files!r}")
    missing = [p for p in out if not os.path.exists(p)]
    if missing:
        raise FileNotFoundError(f"TFRecord file(s) not found: {missing[:5]}")
    return out


class TFRecordImageDataset(IterableDataset):
    """Images and labels (or boxes) from TFRecord shards of ``tf.train.Example`` records.

    Args:
        files: a glob pattern, a directory, a path or a list of them.
        task: ``'classification'`` (``(image, label)``) or ``'detection'`` (``(image, target)``
            with ``target = {'boxes': [N, 4] float (xmin, ymin, xmax, ymax in pixels),
            'labels': [N] int64}``, plus ``'mask'`` when the record has one) or
            ``'segmentation'`` (``(image, mask)``, ``mask`` a ``[H, W]`` int64 class mask read
            from ``image/segmentation/class/encoded``, TF-vision's field).
        transform: applied to the image (a ``[C, H, W]`` float tensor in [0, 1], or the PIL
            image with ``decode='pil'``). Detection boxes and class masks are not
            transformed (use a photometric transform, or transform the pairs yourself).
        decode: ``'tensor'`` or ``'pil'``.
        shuffle_buffer: records held to shuffle from (0: file order); shards are shuffled too.
        seed: the shuffle's seed; the epoch (``set_epoch``) is added, so epochs differ.
        check_crc: verify each record's CRC (a corrupt record raises
            :class:`~nasx.datasets.tfrecord.TFRecordError` naming the file and offset).
        label_offset: added to every class label (``-1`` for 1-based ImageNet labels).
        compression: ``'auto'`` (plain or GZIP-compressed shards, told apart per file),
            ``'gzip'`` or ``'none'`` (TensorFlow's ``compression_type``).
        max_record_bytes: the largest record accepted (default 256 MiB,
            ``nasx.datasets.tfrecord.MAX_RECORD_BYTES``; None: no limit): a longer
            one, as a corrupt or forged length claims, raises ``TFRecordError`` naming the
            file, the record and this limit, before anything is allocated for it.

    ``len()`` counts the records once when asked, reading each record's header (its length's
    CRC checked with ``check_crc``, the length capped as when iterating) and skipping its data.
    """

    def __init__(
        self,
        files: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        task: str = "classification",
        transform: Callable[[Any], Any] | None = None,
        decode: str = "tensor",
        shuffle_buffer: int = 0,
        seed: int = 0,
        check_crc: bool = True,
        label_offset: int = 0,
        compression: str | None = "auto",
        max_record_bytes: int | None = MAX_RECORD_BYTES,
    ):
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if decode not in ("tensor", "pil"):
            raise ValueError(f"decode must be 'tensor' or 'pil', got {decode!r}")
        if shuffle_buffer < 0:
            raise ValueError(f"shuffle_buffer must be >= 0, got {shuffle_buffer}")
        self.files = expand_shards(files)
        self.task, self.transform, self.decode = task, transform, decode
        self.shuffle_buffer, self.seed, self.epoch = shuffle_buffer, seed, 0
        self.check_crc, self.label_offset = check_crc, label_offset
        self.compression = compression
        compression_kind(compression)
        _check_max_record_bytes(max_record_bytes)
        self.max_record_bytes = max_record_bytes
        self._len: int | None = None

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle differently in the next pass (call once per epoch, as with DistributedSampler)."""
        self.epoch = epoch

    def __len__(self) -> int:
        if self._len is None:
            self._len = sum(
                count_records(f, self.check_crc, self.compression, self.max_record_bytes)
                for f in self.files
            )
        return self._len

    def _my_files(self) -> list[str]:
        files = list(self.files)
        rng = random.Random(self.seed + self.epoch)
        if self.shuffle_buffer:
            rng.shuffle(files)
        # split shards over distributed ranks, then over this process's DataLoader workers
        rank, world = 0, 1
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        info = get_worker_info()
        wid, nworkers = (info.id, info.num_workers) if info is not None else (0, 1)
        slot, slots = rank * nworkers + wid, world * nworkers
        if len(files) < slots:
            raise ValueError(
                f"{len(files)} TFRecord shard(s) cannot be split over {slots} readers "
                f"({world} rank(s) x {nworkers} worker(s)): write more shards or use fewer workers"
            )
        return files[slot::slots]

    def records(self) -> Iterator[dict[str, Any]]:
        """The decoded ``tf.train.Example`` dicts this reader gets, shuffled by the buffer."""
        info = get_worker_info()
        rng = random.Random((self.seed + self.epoch) * 1000 + (info.id if info else 0))
        buffer: list[dict[str, Any]] = []
        for path in self._my_files():
            for data in read_records(path, self.check_crc, self.compression, self.max_record_bytes):
                example = decode_example(data)
                if not self.shuffle_buffer:
                    yield example
                    continue
                if len(buffer) < self.shuffle_buffer:
                    buffer.append(example)
                    continue
                i = rng.randrange(len(buffer))
                yield buffer[i]
                buffer[i] = example
        rng.shuffle(buffer)
        yield from buffer

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for example in self.records():
            yield self.parse(example)

    def parse(self, example: dict[str, Any]) -> tuple[Any, Any]:
        """``(image, label)`` or ``(image, target)`` of one decoded example."""
        if "image/encoded" not in example:
            raise KeyError(f"a record has no 'image/encoded' feature; it has {sorted(example)}")
        image = decode_image(example["image/encoded"][0], self.decode)
        if self.transform is not None:
            image = self.transform(image)
        if self.task == "classification":
            if "image/class/label" not in example:
                raise KeyError(
                    f"a record has no 'image/class/label' feature; it has {sorted(example)}"
                )
            return image, int(example["image/class/label"][0]) + self.label_offset
        if self.task == "segmentation":
            if MASK_KEY not in example:
                raise KeyError(f"a record has no {MASK_KEY!r} feature; it has {sorted(example)}")
            return image, decode_mask(example[MASK_KEY][0])
        return image, self._target(example, image)

    def _target(self, example: dict[str, Any], image: Any) -> dict[str, torch.Tensor]:
        cols = [example.get(k, []) for k in BOX_KEYS]
        n = len(cols[0])
        if any(len(c) != n for c in cols):
            raise ValueError(
                f"a record's box fields have different lengths: {[len(c) for c in cols]}"
            )
        h = int(example.get("image/height", [0])[0]) or _height_width(image)[0]
        w = int(example.get("image/width", [0])[0]) or _height_width(image)[1]
        boxes = torch.tensor(list(zip(*cols)), dtype=torch.float32).reshape(n, 4)
        boxes *= torch.tensor([w, h, w, h], dtype=torch.float32)
        labels = torch.tensor(example.get("image/object/class/label", []), dtype=torch.int64)
        target = {"boxes": boxes, "labels": labels + self.label_offset}
        if MASK_KEY in example:
            target["mask"] = decode_mask(example[MASK_KEY][0])
        return target


def _height_width(image: Any) -> tuple[int, int]:
    if torch.is_tensor(image):
        return int(image.shape[-2]), int(image.shape[-1])
    return int(image.height), int(image.width)


def decode_image(data: bytes, decode: str = "tensor") -> Any:
    """JPEG/PNG bytes to a ``[C, H, W]`` float tensor in [0, 1] (RGB) or a PIL image."""
    from PIL import Image

    img = Image.open(io.BytesIO(data)).convert("RGB")
    if decode == "pil":
        return img
    return torch.from_numpy(np.asarray(img).copy()).permute(2, 0, 1).float().div_(255)


def encode_mask(mask: Any) -> bytes:
    """A ``[H, W]`` class mask (ids 0..255) as 8-bit grayscale PNG bytes, TF-vision's layout of
    ``image/segmentation/class/encoded`` (lossless, so the ids come back exactly).

    >>> decode_mask(encode_mask(torch.tensor([[0, 3], [255, 1]]))).tolist()
    [[0, 3], [255, 1]]
    """
    from PIL import Image

    arr = np.asarray(mask.detach().cpu() if torch.is_tensor(mask) else mask)
    if arr.ndim != 2:
        raise ValueError(f"a class mask must be [H, W], got shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() > 255):
        raise ValueError(
            f"a PNG class mask holds ids 0..255, got {int(arr.min())}..{int(arr.max())}"
        )
    buf = io.BytesIO()
    Image.fromarray(arr.astype(np.uint8)).save(buf, format="PNG")  # 2-d uint8: mode L
    return buf.getvalue()


def decode_mask(data: bytes) -> torch.Tensor:
    """PNG bytes of a class mask to a ``[H, W]`` int64 tensor (see :func:`encode_mask`)."""
    from PIL import Image

    img = Image.open(io.BytesIO(data))
    if img.mode not in ("L", "P", "I", "I;16"):
        raise ValueError(f"a class mask PNG must be single-channel, got mode {img.mode!r}")
    return torch.from_numpy(np.asarray(img).astype(np.int64))


def encode_image(
    image: Any, image_format: str = "jpeg", quality: int = 95
) -> tuple[bytes, int, int]:
    """A PIL image, a ``[C, H, W]`` tensor (float in [0, 1] or uint8) or an ``[H, W, C]`` uint8
    array as JPEG/PNG bytes, with its height and width."""
    from PIL import Image

    if torch.is_tensor(image):
        t = image.detach().cpu()
        if t.is_floating_point():
            t = (t.clamp(0, 1) * 255).round().to(torch.uint8)
        arr = t.permute(1, 2, 0).numpy() if t.dim() == 3 else t.numpy()
        image = Image.fromarray(arr.squeeze(-1) if arr.ndim == 3 and arr.shape[-1] == 1 else arr)
    elif isinstance(image, np.ndarray):
        image = Image.fromarray(image)
    if not isinstance(image, Image.Image):
        raise TypeError(f"cannot encode a {type(image).__name__} as an image")
    if image_format not in ("jpeg", "png"):
        raise ValueError(f"image_format must be 'jpeg' or 'png', got {image_format!r}")
    buf = io.BytesIO()
    image = image.convert("RGB")
    if image_format == "jpeg":
        image.save(buf, format="JPEG", quality=quality)
    else:
        image.save(buf, format="PNG")
    return buf.getvalue(), image.height, image.width


def image_example(
    encoded: bytes,
    height: int,
    width: int,
    label: int | None = None,
    *,
    image_format: str = "jpeg",
    text: str | None = None,
    boxes: Sequence[Sequence[float]] | None = None,
    box_labels: Sequence[int] | None = None,
    filename: str | None = None,
    mask: Any = None,
) -> bytes:
    """A serialised ``tf.train.Example`` in the Vertex / TF-vision layout (boxes relative)."""
    feats: dict[str, Any] = {
        "image/encoded": [encoded],
        "image/format": [image_format.encode()],
        "image/height": [int(height)],
        "image/width": [int(width)],
    }
    if label is not None:
        feats["image/class/label"] = [int(label)]
    if text is not None:
        feats["image/class/text"] = [text.encode()]
    if filename is not None:
        feats["image/filename"] = [filename.encode()]
    if boxes is not None:
        cols = list(zip(*boxes)) if len(boxes) else [(), (), (), ()]
        for key, col in zip(BOX_KEYS, cols):
            feats[key] = [float(v) for v in col]
        feats["image/object/class/label"] = [int(v) for v in (box_labels or [])]
    if mask is not None:
        feats[MASK_KEY] = [encode_mask(mask)]
        feats["image/segmentation/class/format"] = [b"png"]
    return encode_example(feats)


def write_shards(
    samples: Iterable[tuple[Any, int]],
    prefix: str | os.PathLike[str],
    num_shards: int = 1,
    *,
    image_format: str = "jpeg",
    class_names: Sequence[str] | None = None,
    compression: str | None = None,
) -> list[Path]:
    """Write ``(image, label)`` samples round-robin into ``<prefix>-0000i-of-0000n.tfrecord``.

    Images may be PIL images, ``[C, H, W]`` tensors or ``[H, W, C]`` uint8 arrays; PNG keeps
    them exact, JPEG (the Vertex default) is lossy. ``compression='gzip'`` writes GZIP-compressed
    shards (``.tfrecord.gz``, what TensorFlow's ``compression_type="GZIP"`` reads). Returns the
    shard paths.
    """
    paths = _shard_paths(prefix, num_shards, compression)
    files = [open_records(p, "wb", compression) for p in paths]
    try:
        for i, (image, label) in enumerate(samples):
            data, h, w = encode_image(image, image_format)
            label = int(label)
            text = class_names[label] if class_names is not None else None
            write_record(
                files[i % num_shards],
                image_example(data, h, w, label, image_format=image_format, text=text),
            )
    finally:
        for f in files:
            f.close()
    return paths


IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp")


def write_image_folder(
    root: str | os.PathLike[str],
    prefix: str | os.PathLike[str],
    num_shards: int = 1,
    compression: str | None = None,
) -> list[Path]:
    """Write a ``root/<class name>/<image file>`` folder as TFRecord shards (labels: the class
    folders in sorted order). JPEG files are stored as they are (no re-encoding); other images
    are re-encoded as PNG. ``compression='gzip'``: GZIP shards, as in :func:`write_shards`.
    Returns the shard paths."""
    root = Path(root)
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    if not classes:
        raise FileNotFoundError(f"{root} has no class folders (expected root/<class>/<image>)")
    items = [
        (path, label)
        for label, name in enumerate(classes)
        for path in sorted((root / name).iterdir())
        if path.suffix.lower() in IMAGE_SUFFIXES
    ]
    paths = _shard_paths(prefix, num_shards, compression)
    files = [open_records(p, "wb", compression) for p in paths]
    try:
        from PIL import Image

        for i, (path, label) in enumerate(items):
            with Image.open(path) as img:
                h, w = img.height, img.width
                fmt = (img.format or "").lower()
            if fmt == "jpeg":
                data, image_format = path.read_bytes(), "jpeg"
            else:
                with Image.open(path) as img:
                    data, h, w = encode_image(img.convert("RGB"), "png")
                image_format = "png"
            example = image_example(
                data,
                h,
                w,
                label,
                image_format=image_format,
                text=classes[label],
                filename=path.name,
            )
            write_record(files[i % num_shards], example)
    finally:
        for f in files:
            f.close()
    return paths


def _shard_paths(
    prefix: str | os.PathLike[str], num_shards: int, compression: str | None
) -> list[Path]:
    """``<prefix>-0000i-of-0000n.tfrecord[.gz]``, the parent folder created."""
    if num_shards < 1:
        raise ValueError(f"num_shards must be at least 1, got {num_shards}")
    suffix = (
        ".tfrecord.gz" if compression_kind(compression, writing=True) == "gzip" else ".tfrecord"
    )
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    return [
        prefix.with_name(f"{prefix.name}-{i:05d}-of-{num_shards:05d}{suffix}")
        for i in range(num_shards)
    ]
