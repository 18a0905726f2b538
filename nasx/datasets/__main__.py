"""``python -m nasx.datasets``: print where each dataset would be read from."""

from __future__ import annotations

from .cifar import _find_cifar10
from .fashion import _find_fashion_mnist
from .locate import DataNotFoundError, _data_dir_candidates, cache_dir, find_data_dir


def _describe() -> str:
    """Where each dataset would be read from, without decoding anything (``python -m nasx.datasets``)."""
    lines = [
        f"data directory: {find_data_dir()} (looked at {', '.join(map(str, _data_dir_candidates()))})"
    ]
    lines.append(f"cache directory: {cache_dir()}")
    for name, locate in (
        ("cifar10", lambda: _find_cifar10(None)),
        ("fashion_mnist", lambda: _find_fashion_mnist(None, "train")[0]),
    ):
        try:
            lines.append(f"{name}: {locate()}")
        except DataNotFoundError as err:
            lines.append(f"{name}: not found ({str(err).splitlines()[0]})")
    return "\n".join(lines)


if __name__ == "__main__":
    print(_describe())
