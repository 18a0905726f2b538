"""Third-party output that nasx users cannot act on, silenced around the fits nasx runs.

Each warning entry names a message another library emits about its *own* code, and Lightning's
INFO lines ("GPU available...", "`Trainer.fit` stopped: `max_epochs=1` reached.") say what the
search already shows. Keeping them from users keeps the output of a search about the search. A
user who wants Lightning's lines back asks for them by setting its logger's level below INFO:
``logging.getLogger("pytorch_lightning").setLevel(logging.DEBUG)``.
"""

from __future__ import annotations

import contextlib
import logging
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


LIGHTNING_LOGGERS = (
    "pytorch_lightning",
    "lightning_fabric",
    "lightning.pytorch",
    "lightning.fabric",
)


@contextlib.contextmanager
def quiet_lightning_logs(quiet: bool = True) -> Iterator[None]:
    """Run the block with Lightning's INFO lines hidden (warnings and errors still show), unless
    ``quiet`` is False or the user asked for them (a Lightning logger's level set below INFO).

    A search builds hundreds of trainers; their lines would drown the experiment's own output.

    Example:
        >>> import logging
        >>> lightning = logging.getLogger("pytorch_lightning"); before = lightning.level
        >>> with quiet_lightning_logs():
        ...     lightning.isEnabledFor(logging.INFO)
        False
        >>> lightning.level == before  # restored
        True
    """
    loggers = [logging.getLogger(name) for name in LIGHTNING_LOGGERS]
    asked = any(logging.NOTSET < lg.level < logging.INFO for lg in loggers)
    if not quiet or asked:
        yield
        return
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(max(lg.getEffectiveLevel(), logging.WARNING))
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
