"""Build nasx's NAS-Bench-201 table (``nb201.csv``) from the benchmark's official release.

The release is NATS-Bench's topology search space (the 15,625 NAS-Bench-201 archs), the
"simple" version without weights: ``NATS-tss-v1_0-3ffb9-simple.tar`` from NATS-Bench's download
page (github.com/D-X-Y/NATS-Bench), unpacked into a folder holding ``meta.pickle.pbz2`` and one
``NNNNNN.pickle.pbz2`` per arch. Convert it once (about a minute)::

    python -m nasx.evaluator.nasbench201_release NATS-tss-v1_0-3ffb9-simple

The argument may also be the tar itself or a URL of it (``https://...`` or ``file://...``,
downloaded and checked against ``--sha256`` when given: :mod:`.nasbench201_fetch`). The command
writes ``nb201/nb201.csv`` under nasx's data cache (``$NASX_CACHE_DIR/data``, see
``nasx.datasets.cache_dir``), where :class:`NasBench201Evaluator` finds it; ``--out FILE`` writes
elsewhere (then set ``NASX_DATA_DIR`` to the folder above ``nb201/``, or pass ``path=``). It
installs the table only when its SHA-256 is :data:`TABLE_SHA256`, the table nasx's figures were
measured on (``--expect-sha256 any`` installs whatever the release converts to).

Each column is the benchmark's own number, averaged over its seeds as NATS-Bench's
``get_more_info`` averages them:

- ``<ds>_valid_12ep`` and ``<ds>_test_12ep``: the 12-epoch schedule (``hp='12'``), accuracy
  after its last epoch (``@11``); CIFAR-10's validation comes from the ``cifar10-valid`` run
  (``x-valid``) and its test from the ``cifar10`` run (``ori-test``); CIFAR-100 and
  ImageNet16-120 use their ``x-valid`` / ``x-test`` halves.
- ``<ds>_test_200ep``: the 200-epoch schedule (``hp='200'``) after its last epoch (``@199``):
  ``ori-test`` for CIFAR-10, ``x-test`` for the others.

The release's files are Python pickles: they are read with an unpickler that admits only the
three types they hold (``OrderedDict``, numpy's dtype and scalar), so a tampered file cannot run
code. The three archs NATS-Bench ships as test fixtures (``fake_torch_dir/`` in its repository:
indexes 0, 11 and 284) convert to the rows of the table nasx was measured on, to the last digit
(checked for issue 30); ``tests/evaluator/test_nasbench201_release.py`` converts a release folder
written in the same format.
"""

from __future__ import annotations

import argparse
import bz2
import collections
import csv
import hashlib
import http.client
import io
import os
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["COLUMNS", "TABLE_MD5", "TABLE_SHA256", "convert_release", "release_rows"]

# (column, schedule, NATS-Bench dataset, evaluation split): where each column's number is read.
_SOURCES = (
    ("cifar10_valid_12ep", "12", "cifar10-valid", "x-valid"),
    ("cifar10_test_12ep", "12", "cifar10", "ori-test"),
    ("cifar100_valid_12ep", "12", "cifar100", "x-valid"),
    ("cifar100_test_12ep", "12", "cifar100", "x-test"),
    ("imagenet16_valid_12ep", "12", "ImageNet16-120", "x-valid"),
    ("imagenet16_test_12ep", "12", "ImageNet16-120", "x-test"),
    ("cifar10_test_200ep", "200", "cifar10", "ori-test"),
    ("cifar100_test_200ep", "200", "cifar100", "x-test"),
    ("imagenet16_test_200ep", "200", "ImageNet16-120", "x-test"),
)
COLUMNS = ("index", "arch", *(c for c, *_ in _SOURCES))
"""The table's header, in order."""
TABLE_MD5 = "a93b42e7d01b3b983b297eb055b743c6"
"""md5 of the full table (15,625 rows) that nasx's tests and benchmarks were measured on."""
TABLE_SHA256 = "a93db5bb0b063ff228548548976134ff30088d7e6aa0c36996c222c7ca9fd575"
"""SHA-256 of the same table: what the command checks before it installs a table."""
NUM_ARCHS = 15_625


class _ReleaseUnpickler(pickle.Unpickler):
    """Admits only the types the release's pickles hold: nothing else can be constructed."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("numpy", "dtype"):
            import numpy as np

            return np.dtype
        if (module, name) in {
            ("numpy.core.multiarray", "scalar"),
            ("numpy._core.multiarray", "scalar"),
        }:
            return _numpy_scalar()
        raise pickle.UnpicklingError(
            f"{module}.{name} is not a type of the NAS-Bench-201 release: refusing to load it"
        )


def _numpy_scalar() -> Any:
    try:
        from numpy._core.multiarray import scalar  # numpy 2
    except ImportError:  # numpy 1
        from numpy.core.multiarray import scalar  # type: ignore[no-redef]
    return scalar


def _load(path: Path) -> Any:
    with open(path, "rb") as f:
        return _ReleaseUnpickler(io.BytesIO(bz2.decompress(f.read()))).load()


def _mean_accuracy(results: dict[str, Any], dataset: str, split: str, path: Path) -> float:
    """The accuracy after the last epoch on ``split``, averaged over the run's seeds."""
    seeds = results["dataset_seed"].get(dataset)
    if not seeds:
        raise ValueError(f"{path}: no {dataset!r} runs (it has {sorted(results['dataset_seed'])})")
    values = []
    for seed in seeds:
        run = results["all_results"][(dataset, seed)]
        key = f"{split}@{run['epochs'] - 1}"
        if key not in run["eval_acc1es"]:
            raise ValueError(f"{path}: the {dataset!r} run of seed {seed} has no {key!r} accuracy")
        values.append(float(run["eval_acc1es"][key]))
    return sum(values) / len(values)


def release_rows(folder: str | os.PathLike) -> Iterator[list[str]]:
    """The table's rows (strings, as written) from an unpacked release folder, in index order.

    Every arch the folder holds a file for is converted; ``convert_release`` checks they are all
    15,625 there. Example (with the fixture files NATS-Bench ships, not run here)::

        >>> rows = list(release_rows('NATS-tss-v1_0-3ffb9-simple'))  # doctest: +SKIP
        >>> rows[0][:3]  # doctest: +SKIP
        ['0', '|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|...', '63.3640']
    """
    folder = Path(folder)
    meta_path = folder / "meta.pickle.pbz2"
    if not meta_path.is_file():
        raise FileNotFoundError(
            f"{folder} is not an unpacked NATS-Bench topology release: no meta.pickle.pbz2 "
            "(expected NATS-tss-v1_0-3ffb9-simple/, from github.com/D-X-Y/NATS-Bench)"
        )
    archs = _load(meta_path)["meta_archs"]
    files = sorted(folder.glob("[0-9]" * 6 + ".pickle.pbz2"))
    for file in files:
        index = int(file.name[:6])
        by_schedule = _load(file)
        arch = by_schedule["200"]["arch_str"]
        if index >= len(archs) or archs[index] != arch:
            raise ValueError(f"{file}: arch {arch!r} is not entry {index} of {meta_path}")
        values = [
            _mean_accuracy(by_schedule[hp], dataset, split, file)
            for _, hp, dataset, split in _SOURCES
        ]
        yield [str(index), arch, *(f"{v:.4f}" for v in values)]


def convert_release(
    folder: str | os.PathLike,
    out: str | os.PathLike,
    *,
    allow_partial: bool = False,
    expected_sha256: str | None = None,
) -> Path:
    """Write the table from an unpacked release folder to ``out`` (atomically) and return it.

    Refuses a folder without all 15,625 archs unless ``allow_partial`` (for tests and samples).
    With ``expected_sha256`` (:data:`TABLE_SHA256` for the real release), a table whose digest
    differs is not written: :class:`~.nasbench201_fetch.ChecksumMismatchError`, ``out`` untouched.
    """
    from .nasbench201_fetch import ChecksumMismatchError

    out = Path(out)
    rows = list(release_rows(folder))
    if len(rows) != NUM_ARCHS and not allow_partial:
        raise ValueError(
            f"{folder} holds {len(rows)} of the {NUM_ARCHS} archs: an incomplete download or "
            "unpacking? (allow_partial=True converts what is there)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    if expected_sha256 is not None and digest != expected_sha256.lower():
        tmp.unlink()
        raise ChecksumMismatchError(
            f"the table converted from {folder} has SHA-256 {digest}, not {expected_sha256}: "
            f"not written to {out} (a different release? --expect-sha256 {digest} or any "
            "installs it anyway)"
        )
    os.replace(tmp, out)
    return out


def _default_out() -> Path:
    from nasx.datasets.locate import cache_dir

    from .nasbench201 import RELATIVE_PATH

    return cache_dir() / RELATIVE_PATH


def main(argv: list[str] | None = None) -> int:
    import tempfile

    from .nasbench201_fetch import release_folder

    parser = argparse.ArgumentParser(
        prog="python -m nasx.evaluator.nasbench201_release",
        description="Convert NATS-Bench's topology release (NATS-tss-v1_0-3ffb9-simple) into "
        "nasx's NAS-Bench-201 table.",
    )
    parser.add_argument(
        "release",
        help="the release: its unpacked folder, its .tar, or an https:// or file:// URL of the "
        "tar (downloaded)",
    )
    parser.add_argument(
        "--out", help="the CSV to write (default: nb201/nb201.csv in nasx's data cache)"
    )
    parser.add_argument(
        "--sha256", help="the tar's SHA-256: a download or tar that differs is refused unread"
    )
    parser.add_argument(
        "--expect-sha256",
        default=TABLE_SHA256,
        help="install the table only if it has this SHA-256 (default: the table nasx was "
        "measured on; 'any': whatever the release converts to)",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds a download may stall (default 60)"
    )
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else _default_out()
    expected = None if args.expect_sha256 == "any" else args.expect_sha256
    try:
        with tempfile.TemporaryDirectory(prefix="nasx-nb201-") as work:
            folder = release_folder(
                args.release, work, sha256=args.sha256, timeout=args.timeout, progress=_progress
            )
            convert_release(folder, out, expected_sha256=expected)
    except (OSError, ValueError, pickle.UnpicklingError, http.client.HTTPException) as err:
        # OSError: a failed download (urllib's URLError) or a missing file; HTTPException: a
        # download cut short (IncompleteRead)
        parser.exit(1, f"error: {err}\n")
    if "://" in args.release:
        print()  # ends the download's progress line
    data = out.read_bytes()
    sha256, md5 = hashlib.sha256(data).hexdigest(), hashlib.md5(data).hexdigest()
    same = "the table nasx was measured on" if sha256 == TABLE_SHA256 else f"not {TABLE_SHA256}"
    print(f"wrote {out}: {NUM_ARCHS} archs, SHA-256 {sha256} ({same}), md5 {md5}")
    return 0


def _progress(done: int, total: int | None) -> None:
    size = f" of {total / 2**20:.0f}" if total else ""
    print(f"\rdownloaded {done / 2**20:.0f}{size} MiB", end="", flush=True)


if __name__ == "__main__":
    sys.exit(main())
