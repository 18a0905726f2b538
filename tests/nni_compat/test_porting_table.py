"""docs/porting_from_nni.md stays true, checked against NNI 3.0's modules and nasx's.

Every public name of every public module of NNI 3.0's ``nni.nas`` package (``nni_nas_names.txt``
beside this file: ``module name defined_in`` lines read from NNI's source at tag v3.0) has a row
``| NNI name | nasx name | status | notes |`` under the heading of its module; a package and the
submodule it re-exports share one row per object (the same ``defined_in``). A row may list several
NNI names (NNI internals with one answer). Statuses:

- ``same`` and ``differs``: the nasx column names nasx objects, which must import (and not be a
  "not provided" stand-in); each ``same`` row's nasx name is exercised by a test of the suite;
- ``not needed``: the nasx column says ``not needed: <what nasx does instead>``, its nasx names
  import, and the NNI name is absent from the nasx module the doc's module map gives;
- ``absent``: the nasx column says "not provided" and the NNI name is absent likewise (or is such
  a stand-in).

``nni`` and ``nni.mutable`` (outside ``nni.nas``) are checked against ``NNI_PUBLIC``, as NNI 3.0
documents them. Every ``xfail`` of this suite must name a difference the doc describes.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from pathlib import Path

import pytest
import torch.nn as nn

from nasx.space.not_provided import SPACE_NOT_PROVIDED, NotProvided

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "porting_from_nni.md"
TEXT = DOC.read_text()
SUITE = Path(__file__).resolve().parent
STATUSES = ("same", "differs", "not needed", "absent")

# NNI 3.0's public names outside ``nni.nas``, and the ``Mutable*`` layers its docs name (the
# module computes them at import, so nni_nas_names.txt lists them as one ``Mutable*``).
NNI_PUBLIC = {
    "nni": [
        "choice",
        "uniform",
        "quniform",
        "loguniform",
        "qloguniform",
        "normal",
        "qnormal",
        "trace",
        "report_intermediate_result",
        "report_final_result",
        "get_current_parameter",
        "dump",
        "load",
    ],
    "nni.mutable": [
        "Mutable",
        "LabeledMutable",
        "MutableSymbol",
        "MutableExpression",
        "Sample",
        "Categorical",
        "CategoricalMultiple",
        "Numerical",
        "MutableList",
        "MutableDict",
        "MutableAnnotation",
        "Constraint",
        "ExpressionConstraint",
        "ensure_frozen",
        "frozen_context",
        "frozen_factory",
        "ConstraintViolation",
        "SampleValidationError",
        "SampleMissingError",
        "uid",
        "reset_uid",
        "NoContextError",
        "ContextStack",
        "get_current_context",
        "label_scope",
        "auto_label",
    ],
    "nni.nas.nn.pytorch": [
        "MutableLinear",
        "MutableConv1d",
        "MutableConv2d",
        "MutableConv3d",
        "MutableBatchNorm1d",
        "MutableBatchNorm2d",
        "MutableBatchNorm3d",
        "MutableLayerNorm",
        "MutableGroupNorm",
        "MutableDropout",
        "MutableEmbedding",
        "MutableConvTranspose2d",
        "MutableMultiheadAttention",
    ],
}


def nni_nas_names() -> list[tuple[str, str, str]]:
    """``(module, name, defined_in)`` for every public name of NNI 3.0's ``nni.nas``."""
    lines = (SUITE / "nni_nas_names.txt").read_text().splitlines()
    return [tuple(line.split()) for line in lines if line.strip() and not line.startswith("#")]


NNI_NAS = nni_nas_names()


def module_map() -> dict[str, str | None]:
    """NNI module -> nasx module (None: nasx has none), from the doc's first table."""
    found: dict[str, str | None] = {"nni": "nasx"}
    for line in TEXT.split("## Spaces, values")[0].splitlines():
        cells = line.strip().strip("|").split("|")
        if len(cells) == 2 and "`nni." in cells[0]:
            nasx = re.findall(r"`(nasx[\w.]*)`", cells[1])
            for nni in re.findall(r"`(nni[\w.]*)`", cells[0]):
                if not nni.startswith("nni.choice"):
                    found[nni] = nasx[0] if nasx else None
    return found


MODULES = module_map()


def sections() -> list[tuple[str, list[str], list[tuple[str, str, str, str]]]]:
    """``(heading, NNI modules it names, rows)`` for each ``###`` section of the tables."""
    found = []
    for block in TEXT.split("## Every public name")[1].split("\n### ")[1:]:
        heading = block.splitlines()[0]
        rows = []
        for line in block.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("|") and len(cells) == 4 and cells[0] not in ("NNI name", "---"):
                rows.append((cells[0], cells[1], cells[2], cells[3]))
        found.append((heading, re.findall(r"`(nni[\w.]*)`", heading), rows))
    return found


SECTIONS = sections()
ROWS = [row for _, _, rows in SECTIONS for row in rows]


def nni_names(row) -> list[str]:
    """The NNI dotted names a row is about (none for rows about something that is not a name)."""
    return re.findall(r"`(nni(?:\.\w+)*\*?)(?!\w)", row[0])


def row_id(row) -> str:
    return row[0].split(",")[0].strip("`")[:80]


def mapped(dotted: str) -> tuple[str | None, list[str]]:
    """``nni.nas.space.Graph`` -> ``('nasx.space', ['Graph'])``: the mapped module and the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            return MODULES[module], parts[cut:]
    raise AssertionError(f"{dotted}: no row of the doc's module map covers its module")


def resolve(dotted: str):
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError:
        pass
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError:  # a name on a class or a module attribute chain
        return getattr(resolve(module), name)


def test_the_tables_have_rows_and_only_known_statuses():
    assert len(ROWS) >= 250
    for row in ROWS:
        assert row[2] in STATUSES, row
        assert (row[2] == "absent") == row[1].startswith("not provided"), row
        assert (row[2] == "not needed") == row[1].startswith("not needed: "), row


def test_every_table_line_has_four_cells():
    """A ``|`` inside a cell (even in code) splits it: Markdown would show a broken row."""
    for line in TEXT.split("## Every public name")[1].splitlines():
        if line.startswith("|"):
            assert len(line.strip().strip("|").split("|")) == 4, line[:100]


def test_the_names_file_is_nni_3_0_nas():
    modules = {m for m, _, _ in NNI_NAS}
    assert len(NNI_NAS) >= 600 and len(modules) >= 120
    assert all(m == "nni.nas" or m.startswith("nni.nas.") for m in modules)
    for expected in [
        ("nni.nas.execution", "SequentialExecutionEngine", "nni.nas.execution.sequential"),
        (
            "nni.nas.oneshot.pytorch.base_lightning",
            "BaseOneShotLightningModule",
            "nni.nas.oneshot.pytorch.base_lightning",
        ),
        ("nni.nas.profiler.pytorch.flops", "FlopsProfiler", "nni.nas.profiler.pytorch.flops"),
        (
            "nni.nas.benchmark.nasbench201",
            "query_nb201_trial_stats",
            "nni.nas.benchmark.nasbench201.query",
        ),
        (
            "nni.nas.experiment.config",
            "NasExperimentConfig",
            "nni.nas.experiment.config.experiment",
        ),
    ]:
        assert expected in NNI_NAS, expected


def _rowless(module: str) -> list[str]:
    """The public names of NNI's ``module`` that no row names (nor a row of the same object: a
    package re-exporting it, or the submodule defining it)."""
    listed = {name for row in ROWS for name in nni_names(row)}
    spellings: dict[tuple[str, str], list[str]] = {}
    for m, n, d in NNI_NAS:
        spellings.setdefault((d, n), []).append(f"{m}.{n}")
    return [
        f"{m}.{n}"
        for m, n, d in NNI_NAS
        if m == module and not any(s in listed for s in spellings[(d, n)])
    ]


@pytest.mark.parametrize("module", sorted({m for m, _, _ in NNI_NAS}))
def test_every_public_name_of_nni_nas_has_a_row(module):
    missing = _rowless(module)
    assert not missing, f"docs/porting_from_nni.md has no row for {', '.join(missing)}"


@pytest.mark.parametrize("module", list(NNI_PUBLIC))
def test_every_documented_nni_name_has_a_row(module):
    listed = {name for row in ROWS for name in nni_names(row)}
    missing = [n for n in NNI_PUBLIC[module] if f"{module}.{n}" not in listed]
    assert not missing, f"docs/porting_from_nni.md has no row for {module}.{missing}"


@pytest.mark.parametrize("section", SECTIONS, ids=[s[0][:60] for s in SECTIONS])
def test_rows_sit_under_their_modules_heading(section):
    heading, modules, rows = section
    assert rows, f"section {heading!r} has no row"
    for row in rows:
        for name in nni_names(row) if modules else []:
            assert any(name == m or name.startswith(m + ".") for m in modules), (
                f"{name} is under the heading {heading!r}: move its row to its module's section"
            )


def test_every_nni_nas_module_is_mapped():
    for module in sorted({m for m, _, _ in NNI_NAS}):
        mapped(f"{module}.name")  # raises naming the module


GIVEN = [r for r in ROWS if r[2] != "absent"]


@pytest.mark.parametrize("row", GIVEN, ids=[row_id(r) for r in GIVEN])
def test_every_nasx_name_a_row_gives_exists(row):
    names = re.findall(r"`(nasx(?:\.\w+)+)`", row[1])
    assert names or row[2] == "not needed", (
        f"row {row[0]}: the nasx column must name a nasx object, or say 'not needed: ...' or "
        "'not provided'"
    )
    for dotted in names:
        found = resolve(dotted)
        assert found is not None and not isinstance(found, NotProvided), dotted


def test_rows_that_are_not_same_say_how():
    for row in ROWS:
        if row[2] != "same":
            assert len(row[3]) > 10, f"row {row[0]} must say why in its notes"


@functools.cache
def _test_sources() -> str:
    return "\n".join(
        p.read_text() for p in sorted((ROOT / "tests").rglob("*.py")) if p != Path(__file__)
    )


SAME = [r for r in ROWS if r[2] == "same"]


@pytest.mark.parametrize("row", SAME, ids=[row_id(r) for r in SAME])
def test_every_same_row_is_exercised_by_a_test(row):
    sources = _test_sources()
    for dotted in re.findall(r"`(nasx(?:\.\w+)+)`", row[1]):
        name = dotted.rsplit(".", 1)[1]
        assert re.search(rf"\b{re.escape(name)}\b", sources), (
            f"row {row[0]} says nasx has NNI's {name}, but no test uses it: "
            "add one to tests/nni_compat/test_porting_rows.py"
        )


NOT_THERE = [
    r for r in ROWS if r[2] in ("absent", "not needed") and nni_names(r) and "(" not in r[0]
]


@pytest.mark.parametrize("row", NOT_THERE, ids=[row_id(r) for r in NOT_THERE])
def test_a_name_the_table_calls_absent_or_not_needed_is_not_in_nasx(row):
    for dotted in nni_names(row):
        module, attrs = mapped(dotted)
        if module is None:  # NNI's TensorFlow modules: nasx has none
            continue
        obj = importlib.import_module(module)
        for attr in attrs:
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                break
        else:
            assert isinstance(obj, NotProvided), (
                f"docs/porting_from_nni.md says {dotted} is {row[2]}, but {module}."
                f"{'.'.join(attrs)} exists: update its row"
            )


def _torch_layers_nni_wraps() -> list[str]:
    """The ``torch.nn`` classes NNI 3.0's ``nn/pytorch/layers.py`` makes a ``Mutable<Name>`` of."""
    not_wrapped = {"Parameter", "ParameterList", "UninitializedBuffer", "UninitializedParameter"}
    not_wrapped |= {"Module", "Sequential", "Container", "DataParallel", "ModuleList", "ModuleDict"}
    return [
        name
        for name, obj in inspect.getmembers(nn)
        if inspect.isclass(obj) and name not in not_wrapped and issubclass(obj, nn.Module)
    ]


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch's deprecated layers
def test_mutable_star_row_holds_for_every_torch_layer():
    import nasx.space

    (row,) = [r for r in ROWS if "nni.nas.nn.pytorch.Mutable*" in nni_names(r)]
    missing = []
    for name in _torch_layers_nni_wraps():
        try:
            layer = getattr(nasx.space, f"Mutable{name}")
        except AttributeError:
            missing.append(f"Mutable{name}")
            continue
        assert issubclass(layer, getattr(nn, name)), name
    assert all(f"`{name}`" in row[3] for name in missing), (
        f"nasx.space lacks {missing}: the row's notes must name each"
    )
    assert missing == ["MutableParameterDict"]


@pytest.mark.parametrize("name", sorted(SPACE_NOT_PROVIDED))
def test_each_stand_in_has_its_row_and_names_the_nasx_way(name):
    import nasx.space

    stand_in = getattr(nasx.space, name)
    assert isinstance(stand_in, NotProvided)
    nni = stand_in.nni_name.split(" ")[0]
    assert any(nni in nni_names(r) for r in ROWS), f"no row for {nni}"
    with pytest.raises(NotImplementedError, match="not provided by nasx: .+"):
        stand_in()


def test_unknown_names_are_still_attribute_errors():
    import nasx.space

    with pytest.raises(AttributeError):
        nasx.space.NoSuchThing  # noqa: B018


def _xfail_reasons():
    """Every xfail reason written in this suite (literal strings, or NOT_YET's values)."""
    for path in sorted(SUITE.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "xfail"):
                continue
            reason = next((k.value for k in node.keywords if k.arg == "reason"), None)
            if isinstance(reason, ast.Constant):
                yield path.name, reason.value
            elif isinstance(reason, ast.Subscript) and isinstance(reason.value, ast.Name):
                module = importlib.import_module(f"tests.nni_compat.{path.stem}")
                for value in getattr(module, reason.value.id).values():
                    yield path.name, value
            else:
                yield path.name, None


def test_every_xfail_names_a_difference_the_doc_describes():
    for file, reason in _xfail_reasons():
        assert reason is not None, f"{file}: write the xfail's reason as a literal string"
        match = re.search(r"porting_from_nni\.md: ([^)]+)\)", reason)
        assert match, f"{file}: {reason!r} must cite '(docs/porting_from_nni.md: <its words>)'"
        assert match.group(1) in TEXT, f"{file}: the doc does not say {match.group(1)!r}"
