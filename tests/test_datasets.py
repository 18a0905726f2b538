"""Tests for nasx.datasets: data discovery, CIFAR-10 decode + cache, Fashion-MNIST IDX parsing."""

import gzip
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from nasx import datasets as D
from nasx.datasets import cifar, fashion, locate

DATA = D.find_data_dir()
HAS_CIFAR = DATA is not None and (DATA / "cifar10" / "cifar10_jpg.tar.gz").is_file()
needs_cifar = pytest.mark.skipif(
    not HAS_CIFAR, reason="CIFAR-10 JPEG archive not found (set NASX_DATA_DIR)"
)
HAS_FMNIST = (D.FASHION_MNIST_SYSTEM_DIR / "t10k-images-idx3-ubyte.gz").is_file()
needs_fmnist = pytest.mark.skipif(
    not HAS_FMNIST, reason="Fashion-MNIST absent: apt-get install dataset-fashion-mnist"
)


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """A private cache folder for this module (one CIFAR-10 decode shared by its tests)."""
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
    assert found is None or found == (locate._repo_root() / ".." / "shared" / "data").resolve()
    (tmp_path / "sub").mkdir()
    (tmp_path / "shared" / "data").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "sub")
    assert D.find_data_dir() == (tmp_path / "shared" / "data").resolve()


def test_not_found_errors_list_places(tmp_path):
    with pytest.raises(D.DataNotFoundError, match=str(tmp_path)) as err:
        D.cifar10("test", root=tmp_path)
    assert isinstance(err.value, FileNotFoundError) and "NASX_DATA_DIR" in str(err.value)
    assert "download=True" in str(err.value)
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
    mean = np.asarray(ds.images).mean(axis=(0, 2, 3)) / 255
    np.testing.assert_allclose(mean, [0.4942, 0.4851, 0.4504], atol=0.002)
    assert "cifar10_jpg.tar.gz" in ds.origin
    assert len(list((cache / "data" / "cifar10").glob("*.npy"))) == 2
    assert not list((cache / "data" / "cifar10").glob("*.tmp"))


@needs_cifar
def test_cifar10_image_comes_from_the_right_jpeg(cache):
    """Independent check of the canonical order: index i is file <class>/<k>.jpg, k = rank of i."""
    import io
    import tarfile

    from PIL import Image

    ds = D.cifar10("test", normalize=False)
    wanted = {}
    for i in (0, 1, 4321, 9999):
        label = ds.targets[i]
        k = int((ds.targets[:i] == label).sum())
        wanted[f"test/{D.CIFAR10_CLASSES[label]}/{k:04d}.jpg"] = i
    with tarfile.open(DATA / "cifar10" / "cifar10_jpg.tar.gz") as tar:
        for member in tar:  # one pass: random access into a .tar.gz re-reads it
            if member.name in wanted:
                i = wanted.pop(member.name)
                img = Image.open(io.BytesIO(tar.extractfile(member).read())).convert("RGB")
                expected = np.asarray(img).transpose(2, 0, 1).astype(np.float32) / 255
                assert torch.equal(ds[i][0], torch.from_numpy(expected))
    assert not wanted


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
    mean = np.asarray(ds.images).mean(axis=(0, 2, 3)) / 255
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
    assert "fashion-mnist" in ds.origin
    assert len(pickle.dumps(ds)) < 100_000  # sent by cache path
    if split == "test":
        assert ds.targets[:10].tolist() == [9, 2, 1, 1, 6, 1, 4, 6, 5, 7]  # published first labels


def _write_idx_gz(path, array, code):
    header = struct.pack(">HBB", 0, code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


@pytest.fixture
def nothing_local(tmp_path, monkeypatch):
    """No data directory, no system Fashion-MNIST, an empty cache: only downloads can help."""
    for module in (locate, cifar, fashion):  # each module that looks up the candidates
        monkeypatch.setattr(module, "_data_dir_candidates", lambda: [])
    monkeypatch.setattr(fashion, "FASHION_MNIST_SYSTEM_DIR", tmp_path / "absent")
    monkeypatch.setenv("NASX_CACHE_DIR", str(tmp_path / "cache"))
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    return mirror


def test_fashion_mnist_download_only_when_asked(nothing_local, monkeypatch):
    images = np.random.default_rng(0).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    labels = np.array([0, 9, 3, 3, 1], dtype=np.uint8)
    _write_idx_gz(nothing_local / "t10k-images-idx3-ubyte.gz", images, 0x08)
    _write_idx_gz(nothing_local / "t10k-labels-idx1-ubyte.gz", labels, 0x08)
    monkeypatch.setattr(fashion, "FASHION_MNIST_URL", nothing_local.as_uri() + "/")
    with pytest.raises(D.DataNotFoundError, match="download=True"):
        D.fashion_mnist("test")
    ds = D.fashion_mnist("test", download=True)
    assert ds.targets.tolist() == labels.tolist()
    assert torch.equal(ds[1][0], torch.from_numpy(images[1][None].astype(np.float32)) / 255)
    # the downloaded copy is found again without downloading (the mirror is gone)
    for f in nothing_local.iterdir():
        f.unlink()
    assert "cache" in D.fashion_mnist("test").origin


def _fake_cifar_python(path, n=6):
    """A cifar-10-python.tar.gz holding a test_batch of n images: (n, 3072) uint8 rows."""
    import io
    import tarfile

    rng = np.random.default_rng(1)
    batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), b"labels": list(range(n))}
    blob = pickle.dumps(batch)
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("cifar-10-batches-py/test_batch")
        info.size = len(blob)
        tar.addfile(info, io.BytesIO(blob))
    return batch


def test_cifar10_download_fallback(nothing_local, monkeypatch):
    import hashlib

    tarball = nothing_local / "cifar-10-python.tar.gz"
    batch = _fake_cifar_python(tarball)
    monkeypatch.setattr(cifar, "CIFAR10_URL", tarball.as_uri())
    monkeypatch.setattr(cifar, "_CIFAR_COUNTS", {"train": 0, "test": 6})
    with pytest.raises(D.DataNotFoundError, match="download=True"):
        D.cifar10("test")
    monkeypatch.setattr(cifar, "CIFAR10_MD5", "0" * 32)
    with pytest.raises(ValueError, match="md5"):
        D.cifar10("test", download=True)
    assert not list((nothing_local.parent / "cache").rglob("*.tar.gz*"))  # no partial file left
    monkeypatch.setattr(cifar, "CIFAR10_MD5", hashlib.md5(tarball.read_bytes()).hexdigest())
    monkeypatch.setattr(cifar, "CIFAR10_SHA256", hashlib.sha256(tarball.read_bytes()).hexdigest())
    ds = D.cifar10("test", download=True, normalize=False)
    assert ds.targets.tolist() == list(range(6)) and "downloaded" in ds.origin
    # rows are R, G, B planes of 32x32: image 2, green channel, pixel (row 0, col 5)
    assert ds[2][0][1, 0, 5].item() == pytest.approx(batch[b"data"][2, 1024 + 5] / 255)


class _RunsCode:
    """A pickle payload: unpickling it creates the file ``marker`` (what an attacker's would do)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (eval, (f"open({self.marker!r}, 'w').close()",))


def _tarball_with_batch(path, batch_bytes):
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("cifar-10-batches-py/test_batch")
        info.size = len(batch_bytes)
        tar.addfile(info, io.BytesIO(batch_bytes))


def test_a_tampered_cifar10_cache_is_not_unpickled_without_download(nothing_local, monkeypatch):
    """Whoever can write the cache folder must not run code in the next user's process."""
    marker = nothing_local / "pwned"
    cached = nothing_local.parent / "cache" / "data" / "cifar10" / "cifar-10-python.tar.gz"
    cached.parent.mkdir(parents=True)
    _tarball_with_batch(cached, pickle.dumps({b"data": _RunsCode(marker), b"labels": []}))
    with pytest.raises(ValueError, match="sha256 .* is not that of the CIFAR-10 archive") as err:
        D.cifar10("test")  # download=False: the cached archive alone
    assert str(cached) in str(err.value) and "Delete the file" in str(err.value)
    with pytest.raises(ValueError, match="refusing to unpickle"):
        D.cifar10("test", download=True)  # a cached archive is checked as well
    assert not marker.exists()
    assert not list(cached.parent.glob("*.npy"))  # nothing cached from it


def test_cifar10_batches_are_unpickled_with_numpy_arrays_only(nothing_local, monkeypatch):
    """Second guard: even an archive that passed the checksum cannot name other globals."""
    import hashlib

    marker = nothing_local / "pwned"
    cached = nothing_local.parent / "cache" / "data" / "cifar10" / "cifar-10-python.tar.gz"
    cached.parent.mkdir(parents=True)
    _tarball_with_batch(cached, pickle.dumps({b"data": _RunsCode(marker), b"labels": []}))
    monkeypatch.setattr(cifar, "CIFAR10_SHA256", hashlib.sha256(cached.read_bytes()).hexdigest())
    with pytest.raises(ValueError, match="refusing to unpickle the global builtins.eval") as err:
        D.cifar10("test")
    assert str(cached) in str(err.value)
    assert not marker.exists()


def test_the_array_unpickler_reads_numpy_1_batches():
    """The published batches name numpy.core (numpy 1); they load under numpy 2 without warnings."""
    import io

    array = np.arange(12, dtype=np.uint8).reshape(2, 6)
    blob = pickle.dumps({b"data": array, b"labels": [3, 4]}, protocol=2)
    blob = blob.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    assert b"numpy.core.multiarray\n_reconstruct" in blob
    batch = cifar._ArrayUnpickler(io.BytesIO(blob), encoding="bytes").load()
    assert np.array_equal(batch[b"data"], array) and batch[b"labels"] == [3, 4]


def test_fast_tar_reader_matches_tarfile(tmp_path):
    import io
    import tarfile

    path = tmp_path / "a.tar.gz"
    files = {"train/": None, "train/cat/0001.jpg": b"x" * 700, "test/empty.bin": b""}
    files["deep/" + "d" * 90 + "/" + "f" * 40 + ".txt"] = b"long path uses the ustar prefix"
    with tarfile.open(path, "w:gz", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name.rstrip("/"))
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    expected = {k: v for k, v in files.items() if v is not None}
    assert dict(cifar._tar_gz_files_fast(path)) == expected
    # a GNU long name (> 100 characters, no ustar prefix possible) takes the tarfile path
    gnu = tmp_path / "gnu.tar.gz"
    with tarfile.open(gnu, "w:gz", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo("n" * 150)
        info.size = 2
        tar.addfile(info, io.BytesIO(b"ok"))
    with pytest.raises(cifar._UnusualTar):
        dict(cifar._tar_gz_files_fast(gnu))
    assert dict(cifar._tar_gz_files(gnu)) == {"n" * 150: b"ok"}


def test_jpeg_decoders_agree():
    import io

    from PIL import Image

    rng = np.random.default_rng(0)
    blobs = []
    for _ in range(3):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(buf, "JPEG")
        blobs.append(buf.getvalue())
    pil = cifar._decode_jpegs(blobs, use_torchvision=False)
    assert pil.shape == (3, 3, 32, 32) and pil.dtype == np.uint8
    assert np.array_equal(cifar._decode_jpegs(blobs), pil)


def test_pickled_dataset_needs_its_cache_files(tmp_path):
    images = np.zeros((2, 1, 2, 2), np.uint8)
    paths = (tmp_path / "x.npy", tmp_path / "y.npy")
    np.save(paths[0], images)
    np.save(paths[1], np.array([0, 1]))
    ds = D.ArrayImageDataset(np.load(paths[0]), np.array([0, 1]), source=paths)
    blob = pickle.dumps(ds)
    assert pickle.loads(blob).targets.tolist() == [0, 1]
    paths[0].unlink()
    with pytest.raises(D.DataNotFoundError, match="NASX_CACHE_DIR"):
        pickle.loads(blob)


def test_python_m_nasx_datasets_says_what_it_would_use(tmp_path):
    import subprocess
    import sys

    env = {
        **os.environ,
        "NASX_DATA_DIR": str(tmp_path),
        "NASX_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    out = subprocess.run(
        [sys.executable, "-m", "nasx.datasets"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert f"cache directory: {tmp_path / 'cache'}" in out.stdout
    assert out.stdout.startswith(f"data directory: {tmp_path} ")  # NASX_DATA_DIR comes first
    assert [line.split(":")[0] for line in out.stdout.splitlines()[2:]] == [
        "cifar10",
        "fashion_mnist",
    ]
