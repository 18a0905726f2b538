"""Workdirs written by older nasx releases, read and upgraded by the current one.

Before one-shot runs had a ``nasx.db`` (nasx up to commit 53493d0), a one-shot ``NasExperiment``
left only its supernet checkpoint (``checkpoints/last.ckpt``) and ``oneshot.json`` (how to rebuild
the supernet, and the arch the search exported). :func:`legacy_one_shot` reads such a workdir as
the current layout stores it (the meta and one row per exported arch), without writing anything:
``nasx show``, ``nasx serve`` and :func:`~nasx.experiment.load_model` read it so, even on
read-only storage. :func:`migrate_one_shot` writes that store into the workdir: a resume
(``NasExperiment(..., resume=True)``) does it before training on.

    >>> import json, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / 'checkpoints').mkdir(); (d / 'checkpoints' / 'last.ckpt').write_bytes(b'')
    0
    >>> _ = (d / 'oneshot.json').write_text(json.dumps({'strategy': 'DARTS',
    ...     'space': {'module': 'm', 'qualname': 'Net'}, 'exported': [{'op': 'conv'}]}))
    >>> meta, rows = legacy_one_shot(d)
    >>> meta['kind'], meta['space'], [(t.id, t.arch, t.status) for t in rows]
    ('one-shot', 'Net', [(0, {'op': 'conv'}, 'succeeded')])
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from nasx._errors import NasxError
from nasx.experiment.storage.store import DB_NAME
from nasx.trial import SUCCEEDED, Trial

_log = logging.getLogger("nasx.experiment")

#: The file older releases wrote beside a one-shot checkpoint (read, never written, now).
LEGACY_ONESHOT_FILE = "oneshot.json"
#: The checkpoint a one-shot run keeps training from (written by the strategy).
SUPERNET_CHECKPOINT = Path("checkpoints") / "last.ckpt"


class LegacyWorkdirError(NasxError, ValueError):
    """An older release's workdir that cannot be read (its ``oneshot.json`` is damaged)."""


def is_legacy_one_shot(directory: Path) -> bool:
    """Whether ``directory`` is a one-shot workdir of a release before one-shot runs had a
    ``nasx.db``: a supernet checkpoint and no database."""
    return not (directory / DB_NAME).exists() and (directory / SUPERNET_CHECKPOINT).is_file()


def legacy_one_shot(directory: Path) -> tuple[dict[str, Any], list[Trial]]:
    """The meta and rows the current layout stores for the older one-shot workdir ``directory``.

    What ``oneshot.json`` does not say (it did not record the direction or the settings) is left
    out of the meta, and ``'migrated_from'`` names the file it came from. A checkpoint written by
    ``strategy.run`` alone (no ``oneshot.json``) reads as a one-shot run with no exported arch.
    """
    info = _read_info(directory)
    space = info.get("space") or {}
    meta: dict[str, Any] = {
        "kind": "one-shot",
        "space": space.get("qualname", "-"),
        "strategy": info.get("strategy", "-"),
        "direction": "maximize",
        "oneshot": {k: v for k, v in info.items() if k != "exported"},
        "migrated_from": LEGACY_ONESHOT_FILE if info else str(SUPERNET_CHECKPOINT),
    }
    rows = [
        Trial(i, dict(arch), SUCCEEDED, metrics={}, intermediates=[])
        for i, arch in enumerate(info.get("exported") or [])
    ]
    return meta, rows


def migrate_one_shot(directory: Path, meta: dict[str, Any]) -> Any:
    """Give the older one-shot workdir ``directory`` its store: a new ``nasx.db`` with ``meta``
    (this run's, which the checkpoint's own identity check has vouched for) and the exported archs
    ``oneshot.json`` recorded. ``oneshot.json`` stays (an older nasx can still read the workdir).
    Returns the open :class:`~nasx.experiment.storage.store.TrialStore`."""
    from nasx.experiment.storage.store import TrialStore

    _, rows = legacy_one_shot(directory)
    store = TrialStore.create(directory, {**meta, "migrated_from": LEGACY_ONESHOT_FILE})
    try:
        store.replace_trials(rows)
    except BaseException:
        store.close()
        raise
    _log.info("%s: one-shot workdir of an older nasx given its nasx.db", directory)
    return store


def _read_info(directory: Path) -> dict[str, Any]:
    path = directory / LEGACY_ONESHOT_FILE
    try:
        info = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise LegacyWorkdirError(f"{path} is not readable ({e})") from None
    if not isinstance(info, dict):
        raise LegacyWorkdirError(f"{path} is not a JSON object (got {type(info).__name__})")
    return info
