"""NNI 3.0's spellings of evaluator arguments, translated to what nasx and Lightning 2 take.

NNI's evaluators pass ``gpus=`` to a Lightning 1.x trainer; Lightning 2 replaced it with
``accelerator=`` and ``devices=``. :func:`translate_trainer_kwargs` maps one to the other and
logs a note (not a warning: a ported script should run clean).

    >>> translate_trainer_kwargs({'gpus': 1, 'max_epochs': 2})
    {'max_epochs': 2, 'accelerator': 'gpu', 'devices': 1}
    >>> translate_trainer_kwargs({'gpus': 0})
    {'accelerator': 'cpu'}
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["translate_trainer_kwargs"]


def translate_trainer_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with Lightning 1.x's ``gpus=`` replaced by ``accelerator=``/``devices=``.

    ``gpus=0`` or ``None`` means the CPU; ``gpus=N`` (or a list of indices, or -1 for all) means
    that many GPUs. Giving ``gpus`` together with ``accelerator`` or ``devices`` is refused.
    """
    if "gpus" not in kwargs:
        return kwargs
    out = dict(kwargs)
    gpus = out.pop("gpus")
    clash = [name for name in ("accelerator", "devices") if name in out]
    if clash:
        raise TypeError(
            f"give gpus= (Lightning 1.x, NNI) or {' and '.join(clash)}= (Lightning 2), not both"
        )
    if gpus is None or (isinstance(gpus, int) and not isinstance(gpus, bool) and gpus == 0):
        out["accelerator"] = "cpu"
    elif isinstance(gpus, (int, str, list, tuple)) and not isinstance(gpus, bool):
        out["accelerator"], out["devices"] = "gpu", gpus
    else:
        raise TypeError(f"gpus must be an int, a list of GPU indices or None, got {gpus!r}")
    log.info(
        "gpus=%r is Lightning 1.x's argument (NNI 3.0); nasx passes Lightning 2's %s instead",
        gpus,
        ", ".join(f"{k}={out[k]!r}" for k in ("accelerator", "devices") if k in out),
    )
    return out
