"""Show a figure where the person is: inline in a notebook, as a named file from a script.

nasx's plotting functions return a closed matplotlib figure (nothing pops up, nothing leaks).
:func:`show` is the one call a script or notebook then makes: it writes the figure to ``path``
when one is given, and in a Jupyter kernel it also displays it under the cell, so the same code
draws into a notebook, into the docs' tutorial gallery and into a file for a script's user.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nasx._notebook import in_notebook

__all__ = ["in_notebook", "show"]


def show(figure: Any, path: str | os.PathLike[str] | None = None, *, dpi: int = 100) -> Path | None:
    """Write ``figure`` to ``path`` (when given) and display it inline in a notebook.

    Args:
        figure: a matplotlib figure, e.g. from :func:`nasx.plot.plot_metric_history`.
        path: where to save it (the format follows the suffix: ``.png``, ``.svg``, ``.pdf``);
            its folder is created. ``None`` saves nothing.
        dpi: resolution of a raster file.

    Returns:
        The saved file's path, or ``None`` when nothing was saved.

    Example:
        >>> import tempfile
        >>> import matplotlib.pyplot as plt
        >>> fig, ax = plt.subplots(); _ = ax.plot([0, 1], [1, 0]); plt.close(fig)
        >>> show(fig, tempfile.mkdtemp() + "/line.png").name
        'line.png'
    """
    if not callable(getattr(figure, "savefig", None)):
        raise TypeError(
            f"show() takes a matplotlib figure (what nasx.plot's functions return), got "
            f"{type(figure).__name__}"
        )
    saved = None
    if path is not None:
        saved = Path(path)
        saved.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(saved, dpi=dpi, bbox_inches="tight")
    if in_notebook():
        from IPython.display import display

        display(figure)
    return saved
