"""Fixtures that let the CIFAR-10 tutorials run in fast mode on a fresh clone (no ../shared).

``fresh_clone_cifar10`` hides every data directory nasx looks in (``$NASX_DATA_DIR``,
``../shared/data`` from the working directory and from the repository) and puts a generated
stand-in for CIFAR-10 in a temporary cache, written in the official release's format
(``cifar-10-python.tar.gz``: pickled batches of uint8 rows), where ``nasx.datasets.cifar10``
finds a copy downloaded earlier. Its images are random class-coloured noise: enough to run
every step of a tutorial, and no number it prints means anything (fast mode says so).
"""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest

TEST_IMAGES = 10_000  # the test split's size: nasx.datasets checks it


def write_cifar10_python_tarball(path: Path, n: int = TEST_IMAGES, seed: int = 0) -> None:
    """A ``cifar-10-python.tar.gz`` holding only ``test_batch``: ``n`` images whose colour
    depends on the label, plus noise (rows of 3072 uint8: the R, G, B planes of 32x32)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    colour = rng.integers(64, 192, (10, 3, 1, 1), dtype=np.uint8)  # one mean colour per class
    noise = rng.integers(0, 64, (n, 3, 32, 32), dtype=np.uint8)
    images = colour[labels] - 32 + noise  # uint8: within [0, 255] by construction
    batch = {b"data": images.reshape(n, 3072), b"labels": labels.tolist()}
    blob = pickle.dumps(batch, protocol=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz", compresslevel=0) as tar:  # stored: seconds saved
        info = tarfile.TarInfo("cifar-10-batches-py/test_batch")
        info.size = len(blob)
        tar.addfile(info, io.BytesIO(blob))


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
    from nasx.datasets.cifar import CIFAR10_URL

    cache = fresh_clone_data
    write_cifar10_python_tarball(cache / "data" / "cifar10" / Path(CIFAR10_URL).name)
    return cache
