"""docs/porting_from_nni.md stays true: every nasx name in its table exists.

Each table row is ``| NNI name | nasx name | notes |``; a row whose nasx column names a
``nasx...`` object is imported, a row that says "not provided" must give a reason.
"""

import importlib
import re
from pathlib import Path

import pytest

TABLE = Path(__file__).resolve().parents[2] / "docs" / "porting_from_nni.md"


def rows():
    found = []
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if (
            len(cells) == 3
            and cells[0].startswith("`nni")
            or cells[0].startswith("(")
            or cells[0].startswith("other")
        ):
            found.append(tuple(cells))
    return found


ROWS = rows()
PROVIDED = [r for r in ROWS if not r[1].startswith("not provided")]


def resolve(dotted):
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError:  # a name that lives on a class or module attribute chain
        return getattr(resolve(module), name)


def test_the_table_covers_every_nni_module():
    nni_names = [r[0] for r in ROWS]
    assert len(ROWS) >= 90
    for prefix in [
        "`nni.mutable.",
        "`nni.nas.nn.pytorch.",
        "`nni.nas.space.",
        "`nni.nas.evaluator.pytorch.",
        "`nni.nas.strategy.",
        "`nni.nas.experiment.",
        "`nni.nas.hub.pytorch.",
    ]:
        assert any(n.startswith(prefix) for n in nni_names), prefix


@pytest.mark.parametrize("row", PROVIDED, ids=[r[0].strip("`") for r in PROVIDED])
def test_every_nasx_name_in_the_table_imports(row):
    names = re.findall(r"`(nasx(?:\.\w+)+)`", row[1])
    assert names, f"row {row[0]}: the nasx column must name a nasx object or say 'not provided'"
    for dotted in names:
        assert resolve(dotted) is not None


def test_rows_not_provided_give_a_reason():
    for nni_name, nasx_name, notes in ROWS:
        if nasx_name.startswith("not provided"):
            assert "because" in nasx_name or "(yet)" in nasx_name, nni_name
            assert notes or "because" in nasx_name, nni_name
