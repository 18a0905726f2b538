"""docs/porting_from_nni_eval.md stays true: every nasx name in its table imports."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

TABLE = Path(__file__).resolve().parents[2] / "docs" / "porting_from_nni_eval.md"


def _rows():
    out = []
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`nni"):
            out.append(cells)
    return out


def _resolve(dotted):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


ROWS = _rows()


@pytest.mark.parametrize("row", ROWS, ids=[r[0].strip("`").split("`")[0] for r in ROWS])
def test_every_row_names_a_nasx_object_or_says_why_not(row):
    if row[1].startswith("not provided"):
        assert "because" in row[1] or row[2], f"{row[0]}: say why it is not provided"
        return
    names = re.findall(r"`(nasx(?:\.\w+)+)`", row[1])
    assert names, f"row {row[0]}: name a nasx object or say 'not provided'"
    for name in names:
        assert _resolve(name) is not None
