"""Image augmentations of the DARTS retraining recipe, on tensors: random crop + flip, and Cutout.

They take a ``(C, H, W)`` float tensor and return one of the same shape, so they plug into
``nasx.datasets`` (``cifar10('train', transform=darts_train_transform())``) and into torchvision
pipelines after ``ToTensor()``. Randomness comes from torch's generator (seed it with
``torch.manual_seed``; each DataLoader worker is seeded by torch).

    >>> import torch
    >>> x = torch.ones(3, 32, 32)
    >>> out = Cutout(16)(x)
    >>> out.shape, 0 < int((out == 0).all(0).sum()) <= 16 * 16
    (torch.Size([3, 32, 32]), True)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

__all__ = ["Cutout", "RandomCropFlip", "darts_train_transform"]


class Cutout:
    """Zero a ``length`` x ``length`` square at a random centre (DeVries & Taylor 2017).

    The square is clipped at the borders, as in the reference code, so it may be smaller.
    """

    def __init__(self, length: int = 16) -> None:
        if not isinstance(length, int) or length < 1:
            raise ValueError(f"Cutout length must be a positive int, got {length!r}")
        self.length = length

    def __call__(self, img: torch.Tensor) -> torch.Tensor:
        h, w = img.shape[-2:]
        cy, cx = int(torch.randint(h, ())), int(torch.randint(w, ()))
        y1, y2 = max(cy - self.length // 2, 0), min(cy + self.length // 2, h)
        x1, x2 = max(cx - self.length // 2, 0), min(cx + self.length // 2, w)
        out = img.clone()
        out[..., y1:y2, x1:x2] = 0.0
        return out

    def __repr__(self) -> str:
        return f"Cutout(length={self.length})"


class RandomCropFlip:
    """Pad by ``padding`` zeros, crop back to the input size at a random place, flip half the time.

    Example:
        >>> import torch
        >>> RandomCropFlip(4)(torch.rand(3, 32, 32)).shape
        torch.Size([3, 32, 32])
    """

    def __init__(self, padding: int = 4, flip: bool = True) -> None:
        if not isinstance(padding, int) or padding < 0:
            raise ValueError(f"padding must be an int >= 0, got {padding!r}")
        self.padding, self.flip = padding, flip

    def __call__(self, img: torch.Tensor) -> torch.Tensor:
        h, w = img.shape[-2:]
        p = self.padding
        if p:
            padded = F.pad(img, (p, p, p, p))
            top, left = int(torch.randint(2 * p + 1, ())), int(torch.randint(2 * p + 1, ()))
            img = padded[..., top : top + h, left : left + w]
        if self.flip and bool(torch.rand(()) < 0.5):
            img = img.flip(-1)
        return img

    def __repr__(self) -> str:
        return f"RandomCropFlip(padding={self.padding}, flip={self.flip})"


def darts_train_transform(
    cutout_length: int | None = 16, padding: int = 4
) -> Callable[[torch.Tensor], torch.Tensor]:
    """DARTS's CIFAR training augmentation: random crop (pad 4) and flip, then Cutout (16).

    ``cutout_length=None`` leaves Cutout out (the search phase uses crop and flip only).

    Example:
        >>> import torch
        >>> from nasx.datasets import ArrayImageDataset
        >>> import numpy as np
        >>> ds = ArrayImageDataset(np.zeros((4, 3, 32, 32), np.uint8), np.zeros(4, np.int64),
        ...                        transform=darts_train_transform())
        >>> ds[0][0].shape
        torch.Size([3, 32, 32])
    """
    steps: list[Callable[[torch.Tensor], torch.Tensor]] = [RandomCropFlip(padding)]
    if cutout_length:
        steps.append(Cutout(cutout_length))
    return _Chain(steps)


class _Chain:
    """Apply transforms in order (a class, not a closure, so datasets holding it pickle)."""

    def __init__(self, steps: list[Callable[[torch.Tensor], torch.Tensor]]) -> None:
        self.steps = steps

    def __call__(self, img: torch.Tensor) -> torch.Tensor:
        for step in self.steps:
            img = step(img)
        return img

    def __repr__(self) -> str:
        return " -> ".join(repr(s) for s in self.steps)
