"""Third-party warnings that nasx users cannot act on, silenced around the fits nasx runs.

Each entry names a message another library emits about its *own* code. Keeping them from users
(and only them) keeps the output of a search about the search.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

# (message regex, category)
KNOWN_HARMLESS = [
    # Lightning 2.6 calls torch.utils._pytree's LeafSpec, which torch 2.14 deprecates.
    (r"`isinstance\(treespec, LeafSpec\)` is deprecated", Warning),
]


@contextlib.contextmanager
def quiet_third_party_warnings() -> Iterator[None]:
    """Run the block with the warnings in ``KNOWN_HARMLESS`` ignored (all others unchanged).

    Example:
        >>> import warnings
        >>> with quiet_third_party_warnings(), warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     warnings.warn("something else")
        >>> len(seen)
        1
    """
    with warnings.catch_warnings():
        for message, category in KNOWN_HARMLESS:
            warnings.filterwarnings("ignore", message=message, category=category)
        yield
