"""nasx.plot.show: a file for a script's user, the figure under the cell in a notebook."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("IPython", reason="the display path needs IPython (a Jupyter kernel has it)")
import matplotlib.pyplot as plt  # noqa: E402

from nasx.plot import display as display_module  # noqa: E402
from nasx.plot import in_notebook, show  # noqa: E402


def _figure():
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    plt.close(fig)
    return fig


def test_show_writes_the_file_in_its_format_and_makes_the_folder(tmp_path):
    saved = show(_figure(), tmp_path / "new" / "line.png")
    assert saved == tmp_path / "new" / "line.png"
    assert saved.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = show(_figure(), tmp_path / "line.svg")
    assert "<svg" in svg.read_text()


def test_outside_a_kernel_nothing_is_displayed(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    assert not in_notebook()
    assert show(_figure()) is None and shown == []


def test_in_a_kernel_the_figure_is_displayed(monkeypatch):
    shown = []
    monkeypatch.setattr(display_module, "in_notebook", lambda: True)
    monkeypatch.setattr("IPython.display.display", shown.append)
    fig = _figure()
    assert show(fig) is None
    assert shown == [fig]


def test_what_is_not_a_figure_is_refused_by_name(tmp_path):
    with pytest.raises(TypeError, match="takes a matplotlib figure .* got Axes"):
        show(_figure().axes[0], tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
    with pytest.raises(ValueError, match="not supported"):  # matplotlib names the formats
        show(_figure(), tmp_path / "line.xyz")
