"""Cutout and random crop/flip, checked against what the DARTS reference code does."""

from __future__ import annotations

import pickle

import pytest
import torch

from nasx.evaluator.augment import Cutout, RandomCropFlip, darts_train_transform


def test_cutout_zeroes_one_square_clipped_at_the_borders():
    torch.manual_seed(0)
    img = torch.ones(3, 32, 32)
    for _ in range(50):
        out = Cutout(16)(img)
        zero = (out == 0).all(0)  # (H, W): the same square on every channel
        rows, cols = zero.any(1).nonzero().flatten(), zero.any(0).nonzero().flatten()
        top, bottom, left, right = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
        assert int(zero.sum()) == (bottom - top) * (right - left)  # a filled rectangle
        # reference: the centre +- 8, clipped; a square away from the borders is exactly 16 x 16
        if 0 < top and bottom < 32:
            assert bottom - top == 16
        if 0 < left and right < 32:
            assert right - left == 16
        assert torch.equal(out[:, ~zero], img[:, ~zero])  # the rest untouched
    assert torch.equal(img, torch.ones(3, 32, 32))  # the input is not modified


def test_random_crop_flip_is_a_shifted_window_of_the_padded_image():
    torch.manual_seed(0)
    img = torch.arange(2 * 8 * 8, dtype=torch.float32).view(2, 8, 8) + 1
    padded = torch.nn.functional.pad(img, (2, 2, 2, 2))
    windows = [padded[:, t : t + 8, s : s + 8] for t in range(5) for s in range(5)]
    flips = 0
    for _ in range(40):
        out = RandomCropFlip(2)(img)
        plain = any(torch.equal(out, w) for w in windows)
        flipped = any(torch.equal(out.flip(-1), w) for w in windows)
        assert plain or flipped
        flips += flipped and not plain
    assert 5 < flips < 35  # about half flipped


def test_darts_transform_pickles_and_bad_arguments_are_refused():
    t = pickle.loads(pickle.dumps(darts_train_transform()))
    assert t(torch.rand(3, 32, 32)).shape == (3, 32, 32)
    assert "Cutout" not in repr(darts_train_transform(cutout_length=None))
    with pytest.raises(ValueError, match="Cutout length"):
        Cutout(0)
    with pytest.raises(ValueError, match="padding"):
        RandomCropFlip(-1)
