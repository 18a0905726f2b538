"""Byte-level language-modelling data built at run time from text already on the machine.

No download: the Python standard library's own ``.py`` files are on every machine that runs nasx.
:func:`stdlib_files` lists them (sorted, ``site-packages`` and the test suites left out) and
splits them **by file** into train and validation with a fixed rule (a hash of the file's path
relative to the stdlib folder), so a file's text is never on both sides and the split is the
same on every run. :class:`ByteTextDataset` cuts bytes (vocabulary 256: no tokenizer) into
fixed-length windows; :func:`stdlib_text` and :func:`text_files` build one from the stdlib or from
any user text files.

    >>> data = ByteTextDataset(b'hello world, hello bytes', block_size=8)
    >>> len(data), data[0][0].tolist()[:5], data[0][1].tolist()[:4]
    (2, [104, 101, 108, 108, 111], [101, 108, 108, 111])
"""

from __future__ import annotations

import sysconfig
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from torch.utils.data import Dataset

__all__ = ["VOCAB_SIZE", "ByteTextDataset", "stdlib_files", "stdlib_text", "text_files"]

VOCAB_SIZE = 256
"""Byte-level: every byte value is a token."""

_SPLITS = ("train", "validation")
_SKIPPED_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}
_SEPARATOR = b"\n\x00\n"  # between files: a byte no source file holds marks the boundary


def _check_split(split: str) -> None:
    if split not in _SPLITS:
        raise ValueError(f"split must be one of {_SPLITS}, got {split!r}")


def _validation_share(val_fraction: float) -> int:
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction!r}")
    return round(val_fraction * 1000)


def stdlib_files(
    split: str = "train", val_fraction: float = 0.1, root: str | Path | None = None
) -> list[Path]:
    """The standard library's ``.py`` files of ``split`` (``'train'`` or ``'validation'``), sorted.

    A file goes to validation when the CRC-32 of its path relative to ``root`` (default: this
    interpreter's stdlib folder), modulo 1000, is below ``val_fraction * 1000``: fixed by name,
    so the split does not depend on the order the file system lists files in.

    Example:
        >>> train, val = stdlib_files('train'), stdlib_files('validation')
        >>> len(train) > len(val) > 0, set(train).isdisjoint(val)
        (True, True)
    """
    _check_split(split)
    share = _validation_share(val_fraction)
    base = Path(root) if root is not None else Path(sysconfig.get_paths()["stdlib"])
    if not base.is_dir():
        raise FileNotFoundError(f"no standard library folder at {base}")
    picked = []
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(base)
        if _SKIPPED_DIRS.intersection(rel.parts[:-1]):
            continue
        in_val = zlib.crc32(rel.as_posix().encode()) % 1000 < share
        if in_val == (split == "validation"):
            picked.append(path)
    return picked


def _read(paths: Iterable[str | Path], max_bytes: int | None) -> bytes:
    chunks, total = [], 0
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise FileNotFoundError(f"text file {path} does not exist (or is not a file)")
        chunk = path.read_bytes() + _SEPARATOR
        chunks.append(chunk)
        total += len(chunk)
        if max_bytes is not None and total >= max_bytes:
            break
    data = b"".join(chunks)
    return data if max_bytes is None else data[:max_bytes]


class ByteTextDataset(Dataset):
    """Non-overlapping windows of ``block_size`` bytes and their next-byte targets.

    Item ``i`` is ``(x, y)``, two ``int64`` tensors of shape ``[block_size]`` with
    ``y[t] = x[t + 1]`` (the byte after the window for the last one); the tail that does not fill
    a window is dropped.

    Example:
        >>> x, y = ByteTextDataset(b'abcdefghij', block_size=4)[1]
        >>> bytes(x.tolist()), bytes(y.tolist())
        (b'efgh', b'fghi')
    """

    def __init__(self, data: bytes, block_size: int):
        if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
            raise ValueError(f"block_size must be a positive int, got {block_size!r}")
        if len(data) < block_size + 1:
            raise ValueError(
                f"{len(data)} bytes of text cannot fill one window of block_size={block_size} "
                f"(needs at least {block_size + 1})"
            )
        self.block_size = block_size
        self.tokens = torch.frombuffer(bytearray(data), dtype=torch.uint8)  # [n_bytes]

    def __len__(self) -> int:
        return (len(self.tokens) - 1) // self.block_size

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"window {i} out of range for {len(self)} windows")
        start = (i % len(self)) * self.block_size
        chunk = self.tokens[start : start + self.block_size + 1].long()
        return chunk[:-1], chunk[1:]

    @property
    def num_tokens(self) -> int:
        """Tokens (bytes) covered by the windows."""
        return len(self) * self.block_size


def stdlib_text(
    split: str = "train",
    block_size: int = 128,
    max_bytes: int | None = None,
    val_fraction: float = 0.1,
) -> ByteTextDataset:
    """A :class:`ByteTextDataset` of the stdlib's ``split`` files (see :func:`stdlib_files`),
    concatenated in sorted order and cut at ``max_bytes`` bytes when given.

    Example:
        >>> val = stdlib_text('validation', block_size=64, max_bytes=10_000)
        >>> len(val), val[0][0].shape
        (156, torch.Size([64]))
    """
    return ByteTextDataset(_read(stdlib_files(split, val_fraction), max_bytes), block_size)


def text_files(
    paths: Sequence[str | Path], block_size: int = 128, max_bytes: int | None = None
) -> ByteTextDataset:
    """A :class:`ByteTextDataset` of the user's text files, in the order given.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / 'poem.txt'
        >>> _ = p.write_text('the quick brown fox')
        >>> len(text_files([p], block_size=5))
        4
    """
    if isinstance(paths, (str, Path)):
        raise TypeError("paths must be a list of files, got a single path: pass [path]")
    if not paths:
        raise ValueError("text_files needs at least one file")
    return ByteTextDataset(_read(paths, max_bytes), block_size)
