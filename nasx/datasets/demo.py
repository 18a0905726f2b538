"""Data for the demo on any machine: Fashion-MNIST from wherever it can come, else real digits.

``demo_images()`` tries, in order, and says which one it used:

1. Fashion-MNIST on disk: ``root``, ``$NASX_DATA_DIR`` / ``../shared/data``, Debian's
   ``/usr/share/datasets/fashion-mnist``, or a copy downloaded earlier into the cache;
2. a download of Fashion-MNIST into the cache, when the internet answers;
3. Debian's package ``dataset-fashion-mnist`` installed with ``apt-get``, when running as root on
   a machine with apt (Debian and Ubuntu);
4. scikit-learn's ``load_digits()``: 1,797 real 8x8 handwritten digits that ship inside
   scikit-learn (upsampled to 28x28 so the same models apply), when scikit-learn is installed.

All four are real images with 10 classes, so the demo's numbers mean something whichever it got.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .fashion import FASHION_MNIST_CLASSES, FASHION_MNIST_URL, fashion_mnist
from .locate import DataNotFoundError

__all__ = ["DemoImages", "demo_images"]


@dataclass
class DemoImages:
    """Grey 28x28 images as uint8 arrays (N, 1, 28, 28) with int labels, and where they came from."""

    name: str
    origin: str
    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    classes: tuple[str, ...]


def _fashion(root: str | os.PathLike | None, download: bool, how: str) -> DemoImages:
    train = fashion_mnist("train", root=root, download=download)
    test = fashion_mnist("test", root=root, download=download)
    return DemoImages(
        "Fashion-MNIST",
        f"{how}: {Path(train.origin).parent}",
        np.asarray(train.images),
        np.asarray(train.targets),
        np.asarray(test.images),
        np.asarray(test.targets),
        FASHION_MNIST_CLASSES,
    )


def _online(url: str, timeout: float = 5.0) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except Exception:
        return False


def _apt_install(package: str, say) -> bool:
    """``apt-get install -y package`` (after ``apt-get update`` if the first try fails)."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    say(f"installing Debian's {package} with apt-get (you are root; about 30 MB)...")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "-qq", package]
    quiet: dict[str, Any] = dict(
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600
    )
    try:
        if subprocess.run(command, **quiet).returncode == 0:
            return True
        subprocess.run(["apt-get", "update", "-qq"], **quiet)
        return subprocess.run(command, **quiet).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _digits() -> DemoImages:
    import torch
    import torch.nn.functional as F

    from nasx._optional import optional_import

    load_digits = optional_import(
        "sklearn.datasets", "digits", "the demo's fallback data", package="sklearn"
    ).load_digits

    digits = load_digits()
    # (N, 8, 8) in 0..16 -> (N, 1, 28, 28) uint8 in 0..255, bilinear upsampling
    x = torch.tensor(digits.images, dtype=torch.float32)[:, None] * (255.0 / 16.0)
    x = F.interpolate(x, size=(28, 28), mode="bilinear", align_corners=False)
    images = x.round().clamp(0, 255).to(torch.uint8).numpy()
    labels = np.asarray(digits.target, dtype=np.int64)
    order = np.random.default_rng(0).permutation(len(labels))  # classes are interleaved anyway
    images, labels = images[order], labels[order]
    n_test = 360  # about 20%, as the demo's held-out test split
    return DemoImages(
        "scikit-learn digits",
        "shipped inside scikit-learn (sklearn.datasets.load_digits), upsampled from 8x8 to 28x28",
        images[n_test:],
        labels[n_test:],
        images[:n_test],
        labels[:n_test],
        tuple(str(d) for d in range(10)),
    )


def demo_images(
    root: str | os.PathLike | None = None,
    *,
    allow_download: bool = True,
    allow_apt: bool = True,
    allow_digits: bool = True,
    say=print,
) -> DemoImages:
    """The demo's data set, from the first source that works (see the module docstring).

    ``root`` names a folder with Fashion-MNIST's IDX files; with it nothing else is tried.
    ``say`` receives a line for each fallback taken. Raises :class:`DataNotFoundError` naming
    everything tried and how to point nasx at other data.

    Example:
        >>> data = demo_images(allow_download=False, allow_apt=False, say=lambda line: None)  # doctest: +SKIP
        >>> data.name, data.train_images.shape[1:]  # doctest: +SKIP
        ('Fashion-MNIST', (1, 28, 28))
    """
    tried = []
    try:
        return _fashion(root, False, "local files")
    except DataNotFoundError as e:
        if root is not None:
            raise
        tried.append(f"Fashion-MNIST on disk: {str(e).splitlines()[0]}")
    if allow_download:
        if _online(FASHION_MNIST_URL):
            say(f"Fashion-MNIST is not on this machine: downloading it from {FASHION_MNIST_URL}")
            try:
                return _fashion(None, True, "downloaded")
            except Exception as e:  # a half-broken network: go on to the next source
                tried.append(f"download from {FASHION_MNIST_URL}: {type(e).__name__}: {e}")
        else:
            tried.append(f"download: {FASHION_MNIST_URL} did not answer (offline?)")
    if allow_apt:
        if _apt_install("dataset-fashion-mnist", say):
            return _fashion(None, False, "Debian package dataset-fashion-mnist")
        tried.append("Debian's dataset-fashion-mnist: not root, no apt-get, or the install failed")
    if allow_digits:
        try:
            data = _digits()
            say("Fashion-MNIST is not available: using scikit-learn's digits instead")
            return data
        except ImportError:
            tried.append("scikit-learn digits: scikit-learn is not installed")
    raise DataNotFoundError(
        "no data for the demo. Tried:\n  "
        + "\n  ".join(tried)
        + "\nPoint nasx at Fashion-MNIST with NASX_DATA_DIR=<folder holding fashion-mnist/> or "
        "--data-dir <folder with the IDX files>, run `apt-get install dataset-fashion-mnist` as "
        'root, or `pip install "nasx[digits]"` for scikit-learn\'s digits.'
    )
