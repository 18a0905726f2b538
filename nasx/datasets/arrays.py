"""ArrayImageDataset: images held as a uint8 array, pickled by reference to its cache files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from .locate import DataNotFoundError

__all__ = ["ArrayImageDataset"]


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
            self.images = np.load(images_path, mmap_mode="r", allow_pickle=False)
            self.targets = np.load(labels_path, allow_pickle=False).astype(np.int64)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={len(self)}, shape={tuple(self.images.shape[1:])})"
