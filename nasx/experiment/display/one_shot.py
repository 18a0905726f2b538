"""A one-shot search's progress in Jupyter: the same refreshing HTML block as a multi-trial run's.

A one-shot search trains one supernet, so its progress is in epochs and steps rather than
trials: :class:`NotebookSearchProgress` is a Lightning callback that ``NasExperiment`` gives the
strategy when it runs in a Jupyter kernel (Lightning's own text bar is then turned off). It
shows a bar over the training steps, the epoch, the last validation metric, elapsed and remaining
time, and the architecture's current front-runner per label (the most probable value).

Imported only when a one-shot search runs in a notebook (it imports Lightning).

    >>> import types
    >>> shown = []
    >>> p = NotebookSearchProgress(show=shown.append)
    >>> trainer = types.SimpleNamespace(current_epoch=0, max_epochs=2, num_training_batches=5,
    ...     estimated_stepping_batches=10, callback_metrics={'val_acc': 0.75})
    >>> p.on_train_start(trainer, None)
    >>> p.on_train_batch_end(trainer, None, None, None, 0)
    >>> 'steps 1/10' in shown[-1] and 'epoch 1/2' in shown[-1] and 'val_acc 0.7500' in shown[-1]
    True
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Callable
from typing import Any

import pytorch_lightning as pl

from nasx.experiment.display.html import progress_html
from nasx.experiment.display.progress import format_seconds

_REDRAW_S = 0.2  # at most five redraws a second: the front end is not flooded


class NotebookSearchProgress(pl.Callback):
    """Lightning callback: the search's progress as refreshing HTML (``show`` gets each version;
    default an IPython display updated in place). ``probs`` returns the strategy's architecture
    probabilities (``{label: {value: p}}``) for the front-runner line."""

    def __init__(
        self,
        show: Callable[[str], None] | None = None,
        probs: Callable[[], dict[str, dict[Any, float]]] | None = None,
    ):
        super().__init__()
        self._show = show
        self._probs = probs
        self._started = time.monotonic()
        self._last_draw = 0.0
        self._batches = 0  # trained in this run
        self._done_before = 0  # batches of the epochs a resumed search had trained
        self.reason: str | None = None

    def _update(self, text: str) -> None:
        if self._show is None:
            from nasx.experiment.display.notebook import _ipython_display

            self._show = _ipython_display(text)
            return
        self._show(text)

    def html(self, trainer: Any) -> str:
        # batches, not trainer.global_step: a search step may step two optimizers
        total = trainer.estimated_stepping_batches
        total = int(total) if total is not None and math.isfinite(total) else None
        step = self._done_before + self._batches
        elapsed = time.monotonic() - self._started
        left = elapsed / step * (total - step) if total and step else None
        metrics = {
            k: float(v)
            for k, v in (trainer.callback_metrics or {}).items()
            if not k.startswith("arch/") and _scalar(v)
        }
        head = progress_html(step, total, 0, 0, None, format_seconds(elapsed), None)
        # the trials' wording of the shared bar, said in steps
        head = head.replace(f"trials {step}", f"steps {step}").split(" &middot; best")[0]
        epochs = trainer.max_epochs if trainer.max_epochs and trainer.max_epochs > 0 else None
        current = trainer.current_epoch + 1  # 0-based, and past the last one once fit ends
        epoch = f"epoch {min(current, epochs) if epochs else current}" + (
            f"/{epochs}" if epochs else ""
        )
        parts = [epoch, *(f"{html.escape(k)} {v:.4f}" for k, v in sorted(metrics.items()))]
        parts.append(format_seconds(elapsed))
        if left is not None and self.reason is None:
            parts.append(f"about {format_seconds(left)} left")
        out = head + " &middot; " + " &middot; ".join(parts) + "</div>"
        leaders = self._leaders()
        if leaders:
            out += f'<div style="font-size:12px;color:#555">leading: {html.escape(leaders)}</div>'
        if self.reason:
            out += f'<div style="font-size:12px">stopped: {html.escape(self.reason)}</div>'
        return out

    def _leaders(self) -> str:
        """``label=value (p)`` of the most probable value per label, the first few labels."""
        if self._probs is None:
            return ""
        try:
            probs = self._probs()
        except Exception:  # noqa: BLE001 - a display must not stop the search (no supernet yet)
            return ""
        shown = []
        for label, dist in list(probs.items())[:6]:
            if dist:
                value, p = max(dist.items(), key=lambda kv: kv[1])
                shown.append(f"{label}={value} ({p:.2f})")
        return ", ".join(shown) + (" ..." if len(probs) > 6 else "")

    def _draw(self, trainer: Any, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_draw > _REDRAW_S:
            self._last_draw = now
            self._update(self.html(trainer))

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        batches = trainer.num_training_batches
        if isinstance(batches, int | float) and math.isfinite(batches):
            self._done_before = int(trainer.current_epoch * batches)

    def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
        self._batches += 1
        self._draw(trainer)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        self._draw(trainer, force=True)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.reason = "the one-shot strategy finished"
        self._draw(trainer, force=True)


def _scalar(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, RuntimeError):  # a tensor of several values
        return False
