"""Train/validation loaders for one-shot search: weights learn on one split, the architecture on
the other. When an evaluator gives only training data it is split in two, and a warning says so."""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch.utils.data import DataLoader, RandomSampler, random_split


def _loader_like(loader: DataLoader[Any], dataset: Any, shuffle: bool = True) -> DataLoader[Any]:
    """A DataLoader over ``dataset`` with ``loader``'s batch size, workers and collate."""
    return DataLoader(
        dataset,
        batch_size=loader.batch_size,
        shuffle=shuffle,
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        drop_last=loader.drop_last,
    )


def split_loader(loader: DataLoader[Any], seed: int = 0) -> tuple[DataLoader[Any], DataLoader[Any]]:
    """Split a DataLoader's dataset in two halves (weights, architecture), as DARTS does."""
    if not isinstance(loader, DataLoader):
        raise TypeError(
            f"cannot split training data of type {type(loader).__name__}; give val_dataloaders too"
        )
    n = len(loader.dataset)  # type: ignore[arg-type]  # map-style datasets have a length
    if n < 2:
        raise ValueError(
            f"cannot split a training set of {n} sample(s) into weight and architecture halves"
        )
    first, second = random_split(
        loader.dataset, [n - n // 2, n // 2], generator=torch.Generator().manual_seed(seed)
    )
    return _loader_like(loader, first), _loader_like(loader, second)


def in_order(loader: Any) -> Any:
    """``loader`` without shuffling, for the validation loop (the architecture steps keep theirs).

    Example:
        >>> from torch.utils.data import TensorDataset, SequentialSampler
        >>> shuffled = DataLoader(TensorDataset(torch.arange(4)), batch_size=2, shuffle=True)
        >>> isinstance(in_order(shuffled).sampler, SequentialSampler)
        True
    """
    if isinstance(loader, DataLoader) and isinstance(loader.sampler, RandomSampler):
        return _loader_like(loader, loader.dataset, shuffle=False)
    return loader


def search_loaders(evaluator: Any, seed: int = 0) -> tuple[Any, Any]:
    """``(train, val)`` loaders of a one-shot evaluator (``OneShotEvaluator``'s data attributes).

    Uses the evaluator's datamodule when it has one, else ``train_dataloaders`` and
    ``val_dataloaders``. Without validation data the training set is split 50/50 (with a warning).
    """
    if evaluator.datamodule is not None:
        evaluator.datamodule.setup("fit")
        train = evaluator.datamodule.train_dataloader()
        val = evaluator.datamodule.val_dataloader()
    else:
        train, val = evaluator.train_dataloaders, evaluator.val_dataloaders
    if train is None:
        raise ValueError(
            "one-shot strategies need an evaluator with training data (train_dataloaders= or datamodule=), "
            f"got {type(evaluator).__name__} without any"
        )
    if isinstance(val, (list, tuple)):
        val = val[0] if val else None
    if val is None:
        warnings.warn(
            "one-shot search: the evaluator has no validation data, so its training data is split "
            "50/50 into a weight-training half and an architecture half (DARTS's protocol)",
            UserWarning,
            stacklevel=2,
        )
        train, val = split_loader(train, seed)
    return train, val
