"""A small detection data set made of real images: objects pasted on a canvas, with their boxes.

No public detection set ships with nasx or its test machines, so :class:`PastedObjects` builds an
honest one from real object images (Fashion-MNIST, CIFAR-10 or scikit-learn's digits): every
canvas (``canvas x canvas`` RGB, default 128) gets 1 to 3 objects, each drawn from the source
set, resized to a random square side and pasted at a random position where it overlaps no other
object. Exactly, for image ``i`` (a ``numpy.random.default_rng([seed, i])`` draw, so any image
can be rebuilt alone and the set is the same on every machine):

1. the background is one RGB colour, each channel uniform in ``[0, 0.5]``;
2. the number of objects is uniform in ``objects_per_image`` (inclusive);
3. each object: a source index (uniform), a side ``round(u * canvas)`` with ``u`` uniform in
   ``object_size``, a top-left corner uniform over the canvas; placements whose square meets an
   earlier object's square are redrawn (at most 50 times, then the object is left out);
4. the object is resized (bilinear, antialiased) to its side and pasted. Sources on a black
   background (Fashion-MNIST, digits: ``masked``) are blended in with their own intensity as
   alpha and a random colour (each channel uniform in ``[0.5, 1]``), so only the object's shape
   shows, and its box is the tight box of the pixels whose alpha exceeds 0.2; photographs
   (CIFAR-10) are pasted whole and their box is the pasted square.

Boxes are ``(xmin, ymin, xmax, ymax)`` in pixels with pixel-edge coordinates (a box covering
columns 3..5 has ``xmin=3, xmax=6``); labels are the source's class ids (0-based).
:func:`write_detection_shards` stores such a set in the TFRecord detection layout
(``image/object/bbox/*`` relative to the image size), which
:class:`~nasx.datasets.TFRecordImageDataset` ``(task='detection')`` reads back.

    >>> import numpy as np
    >>> squares = ObjectImages(np.full((4, 1, 8, 8), 255, np.uint8), np.array([0, 1, 2, 3]),
    ...                        classes=('a', 'b', 'c', 'd'), masked=True)
    >>> ds = PastedObjects(squares, num_images=5, canvas=32, object_size=(0.25, 0.5), seed=0)
    >>> image, target = ds[0]
    >>> image.shape, target['boxes'].shape[1], target['labels'].dtype
    (torch.Size([3, 32, 32]), 4, torch.int64)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

from .tfrecord import decode_example, encode_example, write_record
from .tfrecord_images import encode_image, image_example

__all__ = [
    "OBJECT_SOURCES",
    "ObjectImages",
    "PastedObjects",
    "PastedSegmentation",
    "detection_collate",
    "load_objects",
    "training_and_validation_objects",
    "write_detection_shards",
]

OBJECT_SOURCES = ("fashion_mnist", "cifar10", "digits")
ALPHA_THRESHOLD = 0.2  # a masked object's pixel belongs to its box when its alpha exceeds this
MAX_TRIES = 50  # placements drawn per object before it is left out


@dataclass(frozen=True)
class ObjectImages:
    """Object images to paste: ``images`` (N, C, h, w) uint8 (C is 1 or 3), ``labels`` (N,).

    ``masked``: the objects lie on a black background (their intensity is their alpha and
    their box is tight); otherwise each image is pasted whole as a photograph.
    """

    images: np.ndarray
    labels: np.ndarray
    classes: tuple[str, ...] = ()
    masked: bool = False
    origin: str = "in-memory arrays"

    def __post_init__(self) -> None:
        if self.images.ndim != 4 or self.images.shape[1] not in (1, 3):
            raise ValueError(
                f"object images must be (N, C, h, w) with C 1 or 3, got shape {self.images.shape}"
            )
        if self.images.dtype != np.uint8:
            raise ValueError(f"object images must be uint8, got {self.images.dtype}")
        if len(self.labels) != len(self.images):
            raise ValueError(f"{len(self.images)} object images but {len(self.labels)} labels")
        if len(self.images) == 0:
            raise ValueError("no object images to paste")

    @property
    def num_classes(self) -> int:
        """Number of classes: ``len(classes)``, else one more than the largest label."""
        return len(self.classes) or int(np.max(self.labels)) + 1


def load_objects(name: str, split: str = "train", limit: int | None = None) -> ObjectImages:
    """Real object images from a local source: ``'fashion_mnist'``, ``'cifar10'`` or ``'digits'``.

    Fashion-MNIST and CIFAR-10 are found as :func:`~nasx.datasets.fashion_mnist` and
    :func:`~nasx.datasets.cifar10` find them (raising :class:`~nasx.datasets.DataNotFoundError`
    when absent); digits are scikit-learn's 1,797 8x8 images (``split`` is ignored: there is one
    set). ``limit`` keeps the first ``limit`` images.

    Example:
        >>> digits = load_objects('digits', limit=100)
        >>> digits.images.shape, digits.num_classes, digits.masked
        ((100, 1, 8, 8), 10, True)
    """
    if name == "fashion_mnist":
        from .fashion import FASHION_MNIST_CLASSES, fashion_mnist

        ds = fashion_mnist(split)
        images, labels = np.asarray(ds.images), ds.targets
        if images.ndim == 3:
            images = images[:, None]
        objects = ObjectImages(
            np.ascontiguousarray(images[:limit]),
            labels[:limit],
            FASHION_MNIST_CLASSES,
            masked=True,
            origin=ds.origin,
        )
    elif name == "cifar10":
        from .cifar import CIFAR10_CLASSES, cifar10

        ds = cifar10(split, normalize=False)
        objects = ObjectImages(
            np.ascontiguousarray(ds.images[:limit]),
            ds.targets[:limit],
            CIFAR10_CLASSES,
            masked=False,
            origin=ds.origin,
        )
    elif name == "digits":
        from nasx._optional import optional_import

        sklearn_datasets = optional_import("sklearn.datasets", "digits", "the digits objects")
        digits = sklearn_datasets.load_digits()
        # 8x8 intensities 0..16 -> uint8 0..255
        images = (digits.images[:limit] * (255 / 16)).round().astype(np.uint8)[:, None]
        objects = ObjectImages(
            images,
            digits.target[:limit].astype(np.int64),
            tuple(str(d) for d in range(10)),
            masked=True,
            origin="scikit-learn load_digits()",
        )
    else:
        raise ValueError(f"object source must be one of {OBJECT_SOURCES}, got {name!r}")
    return objects


def training_and_validation_objects() -> tuple[ObjectImages, ObjectImages, str]:
    """Real objects to train and to validate on, from the first source found locally:
    Fashion-MNIST (train/test splits), else CIFAR-10 photos (train/test), else scikit-learn's
    digits (the first 1,500 to train, the other 297 to validate). Returns both and the
    source's title (``'Fashion-MNIST'``, ``'CIFAR-10'`` or ``'digits'``)."""
    from .locate import DataNotFoundError

    for name, title in (("fashion_mnist", "Fashion-MNIST"), ("cifar10", "CIFAR-10")):
        try:
            return load_objects(name), load_objects(name, "test"), title
        except DataNotFoundError:
            pass
    d = load_objects("digits")
    train = ObjectImages(d.images[:1500], d.labels[:1500], d.classes, masked=True, origin=d.origin)
    val = ObjectImages(d.images[1500:], d.labels[1500:], d.classes, masked=True, origin=d.origin)
    return train, val, "digits"


@dataclass(frozen=True)
class Placement:
    """One pasted object: source ``index``, ``label``, top-left ``x``, ``y``, square ``side``,
    ``color`` (RGB, masked objects only) and its ``box`` (xmin, ymin, xmax, ymax) in pixels."""

    index: int
    label: int
    x: int
    y: int
    side: int
    color: tuple[float, float, float]
    box: tuple[float, float, float, float]


class PastedObjects(Dataset):
    """Canvases with 1-3 real objects pasted on them, as ``(image, {'boxes', 'labels'})``.

    See the module docstring for exactly how a canvas is made.

    Args:
        objects: the object images (:func:`load_objects` or an :class:`ObjectImages`).
        num_images: canvases in the set.
        canvas: side of the square canvas in pixels.
        objects_per_image: ``(min, max)`` objects per canvas, both inclusive.
        object_size: ``(min, max)`` side of an object as a fraction of the canvas side.
        seed: the set's seed (canvas ``i`` uses ``default_rng([seed, i])``).
        masks: add ``target['mask']``, the canvas's class mask (see :meth:`render`).

    Items: ``image`` is a ``[3, canvas, canvas]`` float tensor in [0, 1]; ``target['boxes']`` is
    ``[N, 4]`` float32 and ``target['labels']`` ``[N]`` int64. ``layout(i)`` returns the
    :class:`Placement` of each object of canvas ``i``; :class:`PastedSegmentation` gives the
    same canvases as ``(image, mask)`` pairs.
    """

    def __init__(
        self,
        objects: ObjectImages,
        num_images: int,
        canvas: int = 128,
        objects_per_image: tuple[int, int] = (1, 3),
        object_size: tuple[float, float] = (0.2, 0.5),
        seed: int = 0,
        masks: bool = False,
    ) -> None:
        lo, hi = objects_per_image
        if not 1 <= lo <= hi:
            raise ValueError(
                f"objects_per_image must be (min, max) with 1 <= min <= max, got {objects_per_image}"
            )
        smin, smax = object_size
        if not 0 < smin <= smax <= 1:
            raise ValueError(
                f"object_size must be (min, max) with 0 < min <= max <= 1, got {object_size}"
            )
        if round(smin * canvas) < 2:
            raise ValueError(
                f"object_size[0]={smin} on a {canvas}-pixel canvas gives objects under 2 pixels"
            )
        if num_images < 1:
            raise ValueError(f"num_images must be >= 1, got {num_images}")
        self.objects = objects
        self.num_images = num_images
        self.canvas = canvas
        self.objects_per_image = (lo, hi)
        self.object_size = (smin, smax)
        self.seed = seed
        self.masks = masks
        self.classes = objects.classes
        self.num_classes = objects.num_classes
        self._layouts: dict[int, tuple[tuple[float, float, float], list[Placement]]] = {}

    def __len__(self) -> int:
        return self.num_images

    def _draw(self, i: int) -> tuple[tuple[float, float, float], list[Placement]]:
        """Background colour and placements of canvas ``i`` (drawn once, then remembered)."""
        if i in self._layouts:
            return self._layouts[i]
        rng = np.random.default_rng([self.seed, i])
        background = _rgb(rng.uniform(0, 0.5, 3))
        count = int(rng.integers(self.objects_per_image[0], self.objects_per_image[1] + 1))
        squares: list[tuple[int, int, int]] = []
        placements = []
        for _ in range(count):
            index = int(rng.integers(len(self.objects.images)))
            side = max(2, round(float(rng.uniform(*self.object_size)) * self.canvas))
            color = _rgb(rng.uniform(0.5, 1.0, 3))
            for _try in range(MAX_TRIES):
                x = int(rng.integers(self.canvas - side + 1))
                y = int(rng.integers(self.canvas - side + 1))
                if all(_disjoint((x, y, side), sq) for sq in squares):
                    break
            else:
                continue  # no free spot: this canvas gets one object fewer
            squares.append((x, y, side))
            box = (
                _box(self._alpha(index, side), x, y)
                if self.objects.masked
                else (float(x), float(y), float(x + side), float(y + side))
            )
            label = int(self.objects.labels[index])
            placements.append(Placement(index, label, x, y, side, color, box))
        self._layouts[i] = (background, placements)
        return background, placements

    def layout(self, i: int) -> list[Placement]:
        """The objects of canvas ``i``: where each was pasted and its box."""
        return list(self._draw(self._index(i))[1])

    def _index(self, i: int) -> int:
        if not -self.num_images <= i < self.num_images:
            raise IndexError(f"canvas {i} out of range for {self.num_images} images")
        return i % self.num_images

    def _resized(self, index: int, side: int) -> torch.Tensor:
        """Source image ``index`` as a ``[C, side, side]`` float tensor in [0, 1]."""
        x = torch.from_numpy(np.asarray(self.objects.images[index], dtype=np.float32) / 255.0)
        return F.interpolate(
            x[None], size=(side, side), mode="bilinear", align_corners=False, antialias=True
        )[0].clamp_(0, 1)

    def _alpha(self, index: int, side: int) -> torch.Tensor:
        """A masked object's alpha ``[side, side]`` (its intensity; the channel mean)."""
        return self._resized(index, side).mean(0)

    def render(self, i: int) -> tuple[torch.Tensor, torch.Tensor, list[Placement]]:
        """Canvas ``i`` as ``(image, mask, placements)``: ``mask`` is ``[canvas, canvas]`` int64,
        0 for background and ``label + 1`` on each object's pixels (its alpha above
        ``ALPHA_THRESHOLD`` for masked sources, its whole square for photographs; objects never
        overlap, and were they to, the one pasted last would win)."""
        background, placements = self._draw(self._index(i))
        image = torch.tensor(background, dtype=torch.float32).view(3, 1, 1)
        image = image.expand(3, self.canvas, self.canvas).clone()
        mask = torch.zeros(self.canvas, self.canvas, dtype=torch.int64)
        for p in placements:
            obj = self._resized(p.index, p.side)
            region = image[:, p.y : p.y + p.side, p.x : p.x + p.side]
            mask_region = mask[p.y : p.y + p.side, p.x : p.x + p.side]
            if self.objects.masked:
                alpha = obj.mean(0, keepdim=True)  # [1, side, side]
                color = torch.tensor(p.color).view(3, 1, 1)
                region.mul_(1 - alpha).add_(alpha * color)
                mask_region[alpha[0] > ALPHA_THRESHOLD] = p.label + 1
            else:
                region.copy_(obj.expand(3, -1, -1))
                mask_region.fill_(p.label + 1)
        return image, mask, placements

    def mask(self, i: int) -> torch.Tensor:
        """The ``[canvas, canvas]`` int64 class mask of canvas ``i`` (see :meth:`render`)."""
        return self.render(i)[1]

    def __getitem__(self, i: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        image, mask, placements = self.render(i)
        boxes = torch.tensor([p.box for p in placements], dtype=torch.float32).reshape(-1, 4)
        labels = torch.tensor([p.label for p in placements], dtype=torch.int64)
        target = {"boxes": boxes, "labels": labels}
        if self.masks:
            target["mask"] = mask
        return image, target

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n={self.num_images}, canvas={self.canvas}, "
            f"classes={self.num_classes}, source={self.objects.origin!r})"
        )


class PastedSegmentation(PastedObjects):
    """The canvases of :class:`PastedObjects` for semantic segmentation: ``(image, mask)`` items.

    ``mask`` is ``[canvas, canvas]`` int64 with ``num_classes + 1`` values: 0 is the background
    and ``label + 1`` an object of class ``label`` (see :meth:`PastedObjects.render`). Items
    stack, so torch's default ``DataLoader`` collate makes ``([B, 3, H, W], [B, H, W])``
    batches. Same arguments as :class:`PastedObjects` (``masks`` does not apply).

        >>> import numpy as np
        >>> squares = ObjectImages(np.full((2, 1, 4, 4), 255, np.uint8), np.array([0, 1]),
        ...                        masked=True)
        >>> ds = PastedSegmentation(squares, num_images=3, canvas=16, objects_per_image=(1, 1),
        ...                         object_size=(0.25, 0.25), seed=0)
        >>> image, mask = ds[0]
        >>> mask.shape, int((mask > 0).sum()), ds.num_segmentation_classes
        (torch.Size([16, 16]), 16, 3)
    """

    @property
    def num_segmentation_classes(self) -> int:
        """Classes of the masks: the objects' classes plus the background."""
        return self.num_classes + 1

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        image, mask, _ = self.render(i)
        return image, mask


def _rgb(values: np.ndarray) -> tuple[float, float, float]:
    return (float(values[0]), float(values[1]), float(values[2]))


def _disjoint(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    """Whether squares ``(x, y, side)`` a and b share no pixel."""
    ax, ay, aside = a
    bx, by, bside = b
    return ax + aside <= bx or bx + bside <= ax or ay + aside <= by or by + bside <= ay


def _box(alpha: torch.Tensor, x: int, y: int) -> tuple[float, float, float, float]:
    """Tight pixel-edge box of the pixels of ``alpha`` above the threshold, moved to ``(x, y)``."""
    rows = torch.nonzero((alpha > ALPHA_THRESHOLD).any(1)).flatten()
    cols = torch.nonzero((alpha > ALPHA_THRESHOLD).any(0)).flatten()
    if len(rows) == 0:  # a faint object: its whole square
        side = alpha.shape[0]
        return (float(x), float(y), float(x + side), float(y + side))
    return (
        float(x + cols[0]),
        float(y + rows[0]),
        float(x + cols[-1] + 1),
        float(y + rows[-1] + 1),
    )


def detection_collate(
    batch: Sequence[tuple[torch.Tensor, dict[str, torch.Tensor]]],
) -> tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]:
    """``DataLoader(collate_fn=...)`` for detection: a list of images and a list of targets
    (images and box counts may differ, so nothing is stacked), what torchvision detectors take.

    >>> images, targets = detection_collate([(torch.zeros(3, 4, 4), {'labels': torch.tensor([1])})] * 2)
    >>> len(images), targets[1]['labels']
    (2, tensor([1]))
    """
    images = [image for image, _ in batch]
    targets = [target for _, target in batch]
    return images, targets


def write_detection_shards(
    samples: Iterable[tuple[Any, dict[str, torch.Tensor]]],
    prefix: str | os.PathLike[str],
    num_shards: int = 1,
    *,
    image_format: str = "png",
    class_names: Sequence[str] | None = None,
) -> list[Path]:
    """Write ``(image, {'boxes', 'labels'})`` samples as TFRecord shards in the detection layout.

    Boxes (pixels, xyxy) are stored relative to the image size in ``image/object/bbox/xmin``...,
    labels in ``image/object/class/label`` (and their names in ``image/object/class/text`` when
    ``class_names`` is given), a ``target['mask']`` (``PastedObjects(masks=True)``) as a PNG in
    TF-vision's ``image/segmentation/class/encoded``, round-robin into
    ``<prefix>-0000i-of-0000n.tfrecord``. PNG (the default) keeps the pixels exact. Returns the
    shard paths.

    Example:
        >>> import tempfile
        >>> from nasx.datasets import TFRecordImageDataset
        >>> sample = (torch.zeros(3, 8, 8), {'boxes': torch.tensor([[1.0, 2.0, 5.0, 8.0]]),
        ...                                  'labels': torch.tensor([4])})
        >>> paths = write_detection_shards([sample], tempfile.mkdtemp() + '/val')
        >>> image, target = next(iter(TFRecordImageDataset(paths, task='detection')))
        >>> target['boxes'].tolist(), target['labels'].tolist()
        ([[1.0, 2.0, 5.0, 8.0]], [4])
    """
    if num_shards < 1:
        raise ValueError(f"num_shards must be at least 1, got {num_shards}")
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    paths = [
        prefix.with_name(f"{prefix.name}-{i:05d}-of-{num_shards:05d}.tfrecord")
        for i in range(num_shards)
    ]
    files = [open(p, "wb") for p in paths]  # noqa: SIM115 - closed below
    try:
        for i, (image, target) in enumerate(samples):
            data, h, w = encode_image(image, image_format)
            boxes = torch.as_tensor(target["boxes"], dtype=torch.float64).reshape(-1, 4)
            relative = (boxes / torch.tensor([w, h, w, h], dtype=torch.float64)).tolist()
            labels = [int(v) for v in torch.as_tensor(target["labels"]).tolist()]
            record = image_example(
                data,
                h,
                w,
                image_format=image_format,
                boxes=relative,
                box_labels=labels,
                mask=target.get("mask"),
            )
            if class_names is not None:  # image_example has no field for the boxes' class names
                features = decode_example(record)
                features["image/object/class/text"] = [class_names[c].encode() for c in labels]
                record = encode_example(features)
            write_record(files[i % num_shards], record)
    finally:
        for f in files:
            f.close()
    return paths
