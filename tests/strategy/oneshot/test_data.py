"""Search loaders: train/val from the evaluator, or a 50/50 split announced by a warning."""

import pytest
from torch.utils.data import DataLoader

from nasx.strategy.oneshot.data import search_loaders, split_loader

from .toys import toy_data, toy_evaluator


def test_given_train_and_val_are_used_as_is():
    ev = toy_evaluator()
    train, val = search_loaders(ev)
    assert train is ev.train_dataloaders and val is ev.val_dataloaders


def test_only_train_data_is_split_in_halves_with_a_warning():
    ev = toy_evaluator(split=True)
    with pytest.warns(UserWarning, match="split 50/50"):
        train, val = search_loaders(ev)
    assert len(train.dataset) == len(val.dataset) == 256
    assert set(train.dataset.indices).isdisjoint(val.dataset.indices)
    assert train.batch_size == ev.train_dataloaders.batch_size


def test_missing_training_data_is_an_error():
    class Empty:
        train_dataloaders = val_dataloaders = datamodule = None

    with pytest.raises(ValueError, match="training data"):
        search_loaders(Empty())
    with pytest.raises(ValueError, match="1 sample"):
        split_loader(DataLoader(toy_data(1)))
