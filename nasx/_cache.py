"""The one cache root of nasx: ``$NASX_CACHE_DIR`` (when set and not empty) or ``~/.cache/nasx``.

Decoded datasets live directly under it, published hub weights under ``<root>/hub``.

    >>> import os
    >>> cache_root().is_absolute() or not os.environ.get('NASX_CACHE_DIR')
    True
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$NASX_CACHE_DIR`` (``~`` expanded) or ``~/.cache/nasx``; read on every call."""
    return Path(os.environ.get("NASX_CACHE_DIR") or Path.home() / ".cache" / "nasx").expanduser()
