"""The byte-level text data: windows against hand-cut bytes, a split by file that is fixed and
disjoint, user files, and clear errors."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
import torch

from nasx.datasets.text import ByteTextDataset, stdlib_files, stdlib_text, text_files


def test_windows_are_the_bytes_and_their_next_bytes():
    data = bytes(range(50, 80))  # 30 bytes
    ds = ByteTextDataset(data, block_size=7)
    assert len(ds) == (30 - 1) // 7 == 4
    for i in range(len(ds)):
        x, y = ds[i]
        assert x.dtype == torch.int64 and x.shape == y.shape == (7,)
        assert x.tolist() == list(data[7 * i : 7 * i + 7])
        assert y.tolist() == list(data[7 * i + 1 : 7 * i + 8])
    assert ds[-1][0].tolist() == ds[3][0].tolist()
    with pytest.raises(IndexError, match="window 4 out of range for 4"):
        ds[4]


def test_the_split_is_by_file_fixed_and_disjoint():
    train, val = stdlib_files("train"), stdlib_files("validation")
    assert train == sorted(train) and val == sorted(val)
    assert set(train).isdisjoint(val)
    assert 0.05 < len(val) / (len(train) + len(val)) < 0.15  # val_fraction=0.1 of files
    assert stdlib_files("validation") == val  # the same on every call
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    assert all("site-packages" not in p.relative_to(stdlib).parts for p in train + val)
    assert stdlib / "inspect.py" in train + val


def test_the_split_follows_the_relative_path_not_the_folder(tmp_path):
    for name in ("a.py", "b.py", "pkg/c.py", "pkg/d.py", "tests/t.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    copy = tmp_path.parent / (tmp_path.name + "_copy")
    for p in tmp_path.rglob("*.py"):
        (copy / p.relative_to(tmp_path)).parent.mkdir(parents=True, exist_ok=True)
        (copy / p.relative_to(tmp_path)).write_text(p.read_text())
    both = stdlib_files("train", 0.5, tmp_path) + stdlib_files("validation", 0.5, tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in both) == [
        "a.py",
        "b.py",
        "pkg/c.py",
        "pkg/d.py",  # fmt: skip
    ]  # tests/ left out
    again = stdlib_files("validation", 0.5, copy)
    assert [p.relative_to(copy) for p in again] == [
        p.relative_to(tmp_path) for p in stdlib_files("validation", 0.5, tmp_path)
    ]


def test_stdlib_text_reads_the_split_files_in_order():
    val = stdlib_text("validation", block_size=32, max_bytes=4096)
    first = stdlib_files("validation")[0].read_bytes()
    x, _ = val[0]
    assert bytes(x.tolist()) == first[:32]
    assert len(val) == (4096 - 1) // 32


def test_user_text_files(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(b"abcdef")
    b.write_bytes(b"uvwxyz")
    ds = text_files([a, b], block_size=4)
    joined = b"".join(bytes(ds[i][0].tolist()) for i in range(len(ds)))
    assert joined.startswith(b"abcdef") and b"uvwxyz"[:2] in joined


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="split must be one of"):
        stdlib_files("test")
    with pytest.raises(ValueError, match="val_fraction must be in"):
        stdlib_files("train", val_fraction=1.0)
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        ByteTextDataset(b"abc", 0)
    with pytest.raises(ValueError, match="cannot fill one window of block_size=8"):
        ByteTextDataset(b"abc", 8)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        text_files([Path("/nonexistent/nope.txt")])
    with pytest.raises(TypeError, match="single path"):
        text_files("a.txt")  # type: ignore[arg-type]
