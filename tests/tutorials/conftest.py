"""Fixtures that let the CIFAR-10 tutorials run in fast mode on a fresh clone (no ../shared).

``fresh_clone_cifar10`` hides every data directory nasx looks in (``$NASX_DATA_DIR``,
``../shared/data`` from the working directory and from the repository) and puts a generated
stand-in for CIFAR-10's test split in a temporary cache, as the decoded arrays nasx keeps of a
copy downloaded earlier (``cifar10-test-python-*.npy``), where ``nasx.datasets.cifar10`` reads
them. (The archive itself cannot be faked: nasx checks its SHA-256 before unpickling it.) Its
images are class-coloured noise: enough to run every step of a tutorial, and no number it prints
means anything (fast mode says so).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

TEST_IMAGES = 10_000  # the test split's size: nasx.datasets checks it


def write_cifar10_test_cache(folder: Path, n: int = TEST_IMAGES, seed: int = 0) -> None:
    """The decoded test split as nasx caches it: images (n, 3, 32, 32) uint8 whose colour
    depends on the label, plus noise, and labels (n,) uint8."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    colour = rng.integers(64, 192, (10, 3, 1, 1), dtype=np.uint8)  # one mean colour per class
    noise = rng.integers(0, 64, (n, 3, 32, 32), dtype=np.uint8)
    images = colour[labels] - 32 + noise  # uint8: within [0, 255] by construction
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "cifar10-test-python-images.npy", images)
    np.save(folder / "cifar10-test-python-labels.npy", labels)


@pytest.fixture
def fresh_clone_data(tmp_path, monkeypatch) -> Path:
    """No data directory anywhere nasx looks and an empty cache, as on a fresh clone; the
    working directory is a temporary folder. Returns the cache root."""
    import nasx.datasets.locate as locate

    empty, cache, cwd = tmp_path / "no-data", tmp_path / "cache", tmp_path / "work" / "cwd"
    for d in (empty, cache, cwd):
        d.mkdir(parents=True)
    monkeypatch.setenv("NASX_DATA_DIR", str(empty))
    monkeypatch.setenv("NASX_CACHE_DIR", str(cache))
    monkeypatch.chdir(cwd)  # cwd/../shared/data does not exist
    monkeypatch.setattr(locate, "_repo_root", lambda: tmp_path / "work" / "repo")
    return cache


@pytest.fixture
def fresh_clone_cifar10(fresh_clone_data) -> Path:
    """``fresh_clone_data`` plus the generated CIFAR-10 stand-in in its cache."""
    from nasx.datasets import cifar10

    write_cifar10_test_cache(fresh_clone_data / "data" / "cifar10")
    assert "downloaded" in cifar10("test").origin  # read from the stand-in, not real data
    return fresh_clone_data
