"""Tests for nasx.datasets: data discovery, CIFAR-10 decode + cache, Fashion-MNIST IDX parsing."""

import gzip
import pickle
import struct

import numpy as np
import pytest
import torch

from nasx import datasets as D

DATA = D.find_data_dir()
HAS_CIFAR = DATA is not None and (DATA / "cifar10" / "cifar10_jpg.tar.gz").is_file()
needs_cifar = pytest.mark.skipif(
    not HAS_CIFAR, reason="CIFAR-10 JPEG archive not found (set NASX_DATA_DIR)"
)
HAS_FMNIST = (D.FASHION_MNIST_SYSTEM_DIR / "t10k-images-idx3-ubyte.gz").is_file()
needs_fmnist = pytest.mark.skipif(
    not HAS_FMNIST, reason="Fashion-MNIST absent: apt-get install dataset-fashion-mnist"
)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One decode per test module, into a private cache folder."""
    mp = pytest.MonkeyPatch()
    path = tmp_path_factory.mktemp("nasx-cache")
    mp.setenv("NASX_CACHE_DIR", str(path))
    yield path
    mp.undo()


def test_find_data_dir_order(tmp_path, monkeypatch):
    monkeypatch.setenv("NASX_DATA_DIR", str(tmp_path))
    assert D.find_data_dir() == tmp_path.resolve()
    monkeypatch.setenv("NASX_DATA_DIR", str(tmp_path / "absent"))
    monkeypatch.chdir(tmp_path)  # no ../shared/data here: falls back to the repository root's
    found = D.find_data_dir()
    assert found is None or found == (D._repo_root() / ".." / "shared" / "data").resolve()
    (tmp_path / "sub").mkdir()
    (tmp_path / "shared" / "data").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "sub")
    assert D.find_data_dir() == (tmp_path / "shared" / "data").resolve()


def test_not_found_errors_list_places(tmp_path):
    with pytest.raises(D.DataNotFoundError, match=str(tmp_path)) as err:
        D.cifar10("test", root=tmp_path)
    assert isinstance(err.value, FileNotFoundError) and "NASX_DATA_DIR" in str(err.value)
    with pytest.raises(D.DataNotFoundError, match="apt-get install dataset-fashion-mnist"):
        D.fashion_mnist("test", root=tmp_path)
    with pytest.raises(ValueError, match="'train' or 'test'"):
        D.cifar10("val")


@needs_cifar
def test_cifar10_test_split_matches_references(cache):
    ds = D.cifar10("test", normalize=False)
    assert len(ds) == 10_000 and ds.classes[3] == "cat"
    x, y = ds[0]
    assert x.dtype == torch.float32 and x.shape == (3, 32, 32) and isinstance(y, int)
    # Published fact: the first test images are cat, ship, ship, airplane, frog.
    assert ds.targets[:5].tolist() == [3, 8, 8, 0, 6]
    canonical = np.load(DATA / "cifar10" / "cifar10_labels_canonical.npz")["test"]
    assert np.array_equal(ds.targets, canonical)
    # Per-channel mean of the test split; official (lossless) values 0.4942/0.4851/0.4504.
    mean = np.asarray(ds.images, dtype=np.float64).mean(axis=(0, 2, 3)) / 255
    np.testing.assert_allclose(mean, [0.4942, 0.4851, 0.4504], atol=0.002)
    assert len(list((cache / "cifar10").glob("*.npy"))) == 2
    assert not list((cache / "cifar10").glob("*.tmp"))


@needs_cifar
def test_cifar10_image_comes_from_the_right_jpeg(cache):
    """Independent check of the canonical order: index i is file <class>/<k>.jpg, k = rank of i."""
    import io
    import tarfile

    from PIL import Image

    ds = D.cifar10("test", normalize=False)
    with tarfile.open(DATA / "cifar10" / "cifar10_jpg.tar.gz") as tar:
        for i in (0, 1, 4321, 9999):
            label = ds.targets[i]
            k = int((ds.targets[:i] == label).sum())
            data = tar.extractfile(f"test/{D.CIFAR10_CLASSES[label]}/{k:04d}.jpg").read()
            expected = np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).transpose(2, 0, 1)
            assert torch.equal(ds[i][0], torch.from_numpy(expected.astype(np.float32)) / 255)


@needs_cifar
def test_cifar10_normalize_transform_and_pickle(cache):
    raw = D.cifar10("test", normalize=False)
    flip = lambda x: x.flip(-1)  # noqa: E731
    ds = D.cifar10("test", transform=flip)
    mean = torch.tensor(D.CIFAR10_MEAN).view(3, 1, 1)
    std = torch.tensor(D.CIFAR10_STD).view(3, 1, 1)
    assert torch.allclose(ds[7][0], (raw[7][0].flip(-1) - mean) / std)
    import cloudpickle

    blob = cloudpickle.dumps(ds)
    assert len(blob) < 100_000  # pickled by cache path, not by its 30 MB of pixels
    clone = pickle.loads(blob)
    assert torch.equal(clone[7][0], ds[7][0]) and clone[7][1] == ds[7][1]


@pytest.mark.slow
@needs_cifar
def test_cifar10_train_split_full_decode(cache):
    ds = D.cifar10("train", normalize=False)
    assert len(ds) == 50_000
    assert ds.targets[:5].tolist() == [6, 9, 9, 4, 1]  # frog, truck, truck, deer, automobile
    canonical = np.load(DATA / "cifar10" / "cifar10_labels_canonical.npz")["train"]
    assert np.array_equal(ds.targets, canonical)
    mean = np.asarray(ds.images, dtype=np.float64).mean(axis=(0, 2, 3)) / 255
    np.testing.assert_allclose(mean, [0.4913, 0.4821, 0.4465], atol=0.0005)  # data README


def test_read_idx_round_trip(tmp_path):
    array = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    header = struct.pack(">HBB", 0, 0x08, 3) + struct.pack(">3I", 2, 3, 4)
    path = tmp_path / "x-idx3-ubyte.gz"
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())
    assert np.array_equal(D.read_idx(path), array)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="not an IDX file"):
        D.read_idx(tmp_path / "bad")


@needs_fmnist
@pytest.mark.parametrize("split, n", [("train", 60_000), ("test", 10_000)])
def test_fashion_mnist(split, n):
    ds = D.fashion_mnist(split)
    assert len(ds) == n
    x, y = ds[0]
    assert x.shape == (1, 28, 28) and x.dtype == torch.float32
    assert 0.0 <= x.min() and x.max() <= 1.0
    assert set(np.unique(ds.targets).tolist()) == set(range(10))
    assert np.bincount(ds.targets).tolist() == [n // 10] * 10  # balanced classes
    if split == "test":
        assert ds.targets[:10].tolist() == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]  # published first labels
