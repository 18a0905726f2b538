"""Local datasets: find data on disk (download only when asked), decode once, cache, serve tensors.

Search order for the data directory: ``$NASX_DATA_DIR``, then ``../shared/data`` relative to the
current directory and to the repository root. CIFAR-10 is decoded from the JPEG archive
``cifar10/cifar10_jpg.tar.gz`` into uint8 ``.npy`` files under ``data/`` of the cache root
(``$NASX_CACHE_DIR``, else ``$XDG_CACHE_HOME/nasx``, else ``~/.cache/nasx``); Fashion-MNIST is
read from IDX gzip files (Debian ``dataset-fashion-mnist``).
``python -m nasx.datasets`` prints what would be used. Modules: ``locate`` (locations),
``files`` (file helpers), ``arrays`` (ArrayImageDataset), ``cifar`` (CIFAR-10), ``fashion``
(Fashion-MNIST), ``tfrecord`` (TFRecord files and ``tf.train.Example`` without TensorFlow),
``tfrecord_images`` (image datasets in TFRecord shards, read and written), ``detection`` (a
detection set of real objects pasted on canvases, and its TFRecord writer), ``__main__`` (that
printout).
"""

from __future__ import annotations

# ``X as X``: module-level settings that were attributes of ``nasx.datasets`` before it became a
# package, still readable here; the code reads them in its own module, so patch them there
# (``nasx.datasets.cifar``, ``nasx.datasets.fashion``).
from .arrays import ArrayImageDataset
from .cifar import CIFAR10_CLASSES, CIFAR10_MEAN, CIFAR10_STD, cifar10
from .cifar import CIFAR10_MD5 as CIFAR10_MD5
from .cifar import CIFAR10_URL as CIFAR10_URL
from .fashion import FASHION_MNIST_CLASSES, fashion_mnist, read_idx
from .fashion import FASHION_MNIST_SYSTEM_DIR as FASHION_MNIST_SYSTEM_DIR
from .fashion import FASHION_MNIST_URL as FASHION_MNIST_URL
from .files import ChecksumMismatchError, download_file
from .locate import DataNotFoundError, cache_dir, find_data_dir
from .tfrecord import TFRecordError
from .tfrecord_images import TFRecordImageDataset, write_image_folder, write_shards

__all__ = [
    "CIFAR10_CLASSES",
    "CIFAR10_MEAN",
    "CIFAR10_STD",
    "FASHION_MNIST_CLASSES",
    "ArrayImageDataset",
    "ChecksumMismatchError",
    "DataNotFoundError",
    "TFRecordError",
    "TFRecordImageDataset",
    "cache_dir",
    "cifar10",
    "download_file",
    "fashion_mnist",
    "find_data_dir",
    "read_idx",
    "write_image_folder",
    "write_shards",
]
