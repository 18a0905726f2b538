"""nasx.datasets.demo: the demo's data from the first source that works, and a clear error."""

from __future__ import annotations

import numpy as np
import pytest

from nasx.datasets import DataNotFoundError, demo


@pytest.fixture
def no_fashion_mnist(monkeypatch):
    def missing(*args, **kwargs):
        raise DataNotFoundError("Fashion-MNIST (train) not found. Looked for ...")

    monkeypatch.setattr(demo, "_fashion", missing)


def test_falls_back_to_scikit_learn_digits(no_fashion_mnist):
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits

    said = []
    data = demo.demo_images(allow_download=False, allow_apt=False, say=said.append)
    assert data.name == "scikit-learn digits" and said == [
        "Fashion-MNIST is not available: using scikit-learn's digits instead"
    ]
    assert data.train_images.shape == (1437, 1, 28, 28) and data.train_images.dtype == np.uint8
    assert data.test_images.shape == (360, 1, 28, 28)
    # every digit is there, and the images are the real ones: an upsampled image keeps the mean
    # brightness of its 8x8 original (0..16 scaled to 0..255) within rounding and edge effects
    assert set(data.train_labels.tolist()) == set(range(10))
    original = load_digits()
    order = np.random.default_rng(0).permutation(len(original.target))
    first = original.images[order[0]] * 255 / 16
    assert data.test_labels[0] == original.target[order[0]]
    assert abs(data.test_images[0].mean() - first.mean()) < 6


def test_root_without_the_files_is_an_error_not_a_fallback(tmp_path):
    with pytest.raises(DataNotFoundError, match="Fashion-MNIST"):
        demo.demo_images(tmp_path, allow_download=False, allow_apt=False)


def test_nothing_available_says_what_was_tried_and_how_to_fix(no_fashion_mnist):
    with pytest.raises(DataNotFoundError) as e:
        demo.demo_images(allow_download=False, allow_apt=False, allow_digits=False)
    message = str(e.value)
    assert "Fashion-MNIST on disk" in message
    assert "NASX_DATA_DIR" in message and "apt-get install dataset-fashion-mnist" in message
