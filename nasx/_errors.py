"""``NasxError``: the root of every exception nasx raises on purpose.

Each nasx exception also keeps its built-in base (``InvalidArchError`` is a ``ValueError``,
``DataNotFoundError`` a ``FileNotFoundError``, ``MissingExtraError`` an ``ImportError``), so code
written against those still catches them; ``except nasx.NasxError`` catches every one of them
and nothing raised by torch, Lightning or Python itself.

    >>> import nasx
    >>> from nasx.space import InvalidArchError
    >>> issubclass(InvalidArchError, nasx.NasxError), issubclass(InvalidArchError, ValueError)
    (True, True)
"""

from __future__ import annotations

__all__ = ["NasxError"]


class NasxError(Exception):
    """Base class of nasx's own exceptions (each also derives from a built-in one)."""
