"""Whether code runs in a Jupyter kernel: one test for the progress display and nasx.plot.show."""

from __future__ import annotations

import sys


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel (not a terminal IPython, not plain Python).

    Example:
        >>> in_notebook()  # doctest runs in a plain interpreter
        False
    """
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")
