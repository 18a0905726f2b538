"""Benchmark: CIFAR-10 JPEG decode (nasx fast path) and cached load against a plain reference.

Reference: ``tarfile`` + Pillow, one image at a time (the obvious implementation). Prints the
median of several runs for each and the ratios. Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/bench_cifar10_decode.py --split test --repeats 3
"""

from __future__ import annotations

import argparse
import io
import os
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from _timing import median_time

from nasx import datasets as D
from nasx.datasets import cifar


def reference_decode(archive: Path, split: str) -> np.ndarray:
    """tarfile + Pillow, canonical order via the labels file: (N, 3, 32, 32) uint8."""
    from PIL import Image

    labels = np.load(archive.parent / "cifar10_labels_canonical.npz")[split]
    positions = {c: np.flatnonzero(labels == c) for c in range(10)}
    images = np.empty((len(labels), 3, 32, 32), np.uint8)
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if member.isfile() and parts[0] == split:
                pos = positions[D.CIFAR10_CLASSES.index(parts[1])][int(parts[2][:-4])]
                img = Image.open(io.BytesIO(tar.extractfile(member).read())).convert("RGB")
                images[pos] = np.asarray(img).transpose(2, 0, 1)
    return images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=["train", "test"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = D.find_data_dir()
    if data is None or not (data / "cifar10" / "cifar10_jpg.tar.gz").is_file():
        raise SystemExit("CIFAR-10 archive not found: set NASX_DATA_DIR")
    archive = data / "cifar10" / "cifar10_jpg.tar.gz"
    print(f"data: {archive}  split: {args.split}  repeats: {args.repeats} (medians)")

    t_ref, ref = median_time(lambda: reference_decode(archive, args.split), args.repeats)
    t_pil, pil = median_time(
        lambda: cifar._decode_cifar10(archive, args.split, use_torchvision=False)[0], args.repeats
    )
    t_fast, fast = median_time(lambda: cifar._decode_cifar10(archive, args.split)[0], args.repeats)
    assert np.array_equal(ref, pil) and np.array_equal(ref, fast), "decoders disagree"
    print(f"reference tarfile+Pillow decode : {t_ref:6.2f} s")
    print(f"nasx fast tar + Pillow          : {t_pil:6.2f} s  ({t_ref / t_pil:.2f}x faster)")
    print(f"nasx fast tar + torchvision     : {t_fast:6.2f} s  ({t_ref / t_fast:.2f}x faster)")

    with tempfile.TemporaryDirectory() as cache:
        os.environ["NASX_CACHE_DIR"] = cache
        D.cifar10(args.split)  # fills the cache
        t_cached, ds = median_time(lambda: D.cifar10(args.split), args.repeats)
        t_items, _ = median_time(lambda: [ds[i] for i in range(1000)], args.repeats)
    print(
        f"cifar10() from cache            : {t_cached * 1000:6.1f} ms ({t_ref / t_cached:.0f}x faster than decoding)"
    )
    print(f"1000 items from the dataset     : {t_items * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
