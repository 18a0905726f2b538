"""docs/porting_from_nni.md stays true, checked against the modules in both directions.

The table's rows are ``| NNI name | nasx name | status | notes |``. A row whose status is
``same`` or ``differs`` names nasx objects that must import (and not be a "not provided"
stand-in); an ``absent`` row says "not provided" and its NNI name must be absent from the nasx
module the doc's module map gives (or be such a stand-in); every public name of NNI 3.0's NAS
modules (``NNI_PUBLIC``, their ``__all__`` as NNI 3.0 documents them) must have a row. Every
``xfail`` of this suite must name a difference the doc describes.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from nasx.space.not_provided import SPACE_NOT_PROVIDED, NotProvided

DOC = Path(__file__).resolve().parents[2] / "docs" / "porting_from_nni.md"
TEXT = DOC.read_text()
SUITE = Path(__file__).resolve().parent

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
        "recursive_freeze",
        "MutableModule",
        "ModelSpace",
        "ParametrizedModule",
        "LayerChoice",
        "InputChoice",
        "ValueChoice",
        "MutationAnchor",
        "ChosenInputs",
        "ReductionType",
        "Repeat",
        "Cell",
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
    "nni.nas.space": [
        "model_context",
        "current_model",
        "BaseModelSpace",
        "ExecutableModelSpace",
        "RawFormatModelSpace",
        "SimplifiedModelSpace",
        "ModelStatus",
        "GraphModelSpace",
        "Graph",
        "Node",
        "Edge",
        "IllegalGraphError",
        "Metrics",
        "MutationSampler",
        "Mutator",
        "StationaryMutator",
        "InvalidMutation",
        "MutatorSequence",
        "Mutation",
    ],
    "nni.nas.evaluator": [
        "Evaluator",
        "MutableEvaluator",
        "FrozenEvaluator",
        "FunctionalEvaluator",
    ],
    "nni.nas.evaluator.pytorch": [
        "LightningModule",
        "Trainer",
        "DataLoader",
        "Lightning",
        "Classification",
        "Regression",
        "SupervisedLearningModule",
        "ClassificationModule",
        "RegressionModule",
    ],
    "nni.nas.strategy": [
        "Strategy",
        "Random",
        "GridSearch",
        "RegularizedEvolution",
        "TPEStrategy",
        "TPE",
        "PolicyBasedRL",
        "DARTS",
        "Proxyless",
        "GumbelDARTS",
        "ENAS",
        "RandomOneShot",
    ],
    "nni.nas.strategy.middleware": [
        "Chain",
        "StrategyMiddleware",
        "Filter",
        "Deduplication",
        "FailureHandler",
        "MultipleEvaluation",
        "MedianStop",
    ],
    "nni.nas.experiment": ["NasExperiment", "NasExperimentConfig"],
    "nni.nas.hub.pytorch": [
        "MobileNetV3Space",
        "NasBench101",
        "NasBench201",
        "NDS",
        "NASNet",
        "ENAS",
        "AmoebaNet",
        "PNAS",
        "DARTS",
        "ProxylessNAS",
        "ShuffleNetSpace",
        "AutoformerSpace",
        "AutoFormer",
    ],
    "nni.nas.hub.pytorch.modules": ["AutoActivation", "NasBench101Cell", "NasBench201Cell"],
}


def module_map() -> dict[str, str]:
    """NNI module -> nasx module, from the doc's first table."""
    found = {"nni": "nasx"}
    for line in TEXT.split("## Where nasx")[0].splitlines():
        cells = line.strip().strip("|").split("|")
        if len(cells) == 2 and "`nni." in cells[0]:
            nasx = re.findall(r"`(nasx[\w.]*)`", cells[1])
            for nni in re.findall(r"`(nni[\w.]*)`", cells[0]):
                if not nni.startswith("nni.choice") and nasx:
                    found[nni] = nasx[0]
    return found


MODULES = module_map()


def table_rows() -> list[tuple[str, str, str, str]]:
    rows = []
    for line in TEXT.split("## Every public name")[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("NNI name", "---"):
            rows.append((cells[0], cells[1], cells[2], cells[3]))
    return rows


ROWS = table_rows()


def nni_name(row) -> str | None:
    """The row's NNI dotted name (None for rows about something that is not a name)."""
    match = re.match(r"`(nni(?:\.\w+)*)", row[0])
    return match.group(1) if match else None


def mapped(dotted: str) -> tuple[str, list[str]]:
    """``nni.nas.space.Graph`` -> ``('nasx.space', ['Graph'])``: the mapped module and the rest."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            return MODULES[module], parts[cut:]
    raise AssertionError(f"{dotted}: no row of the doc's module map covers its module")


def resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError:  # a name on a class or a module attribute chain
        return getattr(resolve(module), name)


def test_the_table_has_rows_and_only_known_statuses():
    assert len(ROWS) >= 140
    for row in ROWS:
        assert row[2] in ("same", "differs", "absent"), row
        assert (row[2] == "absent") == row[1].startswith("not provided"), row


@pytest.mark.parametrize("module", list(NNI_PUBLIC))
def test_every_public_nni_name_has_a_row(module):
    listed = {nni_name(r) for r in ROWS}
    missing = [n for n in NNI_PUBLIC[module] if f"{module}.{n}" not in listed]
    assert not missing, f"docs/porting_from_nni.md has no row for {module}.{missing}"


PROVIDED = [r for r in ROWS if r[2] != "absent"]


@pytest.mark.parametrize("row", PROVIDED, ids=[r[0].strip("`") for r in PROVIDED])
def test_every_nasx_name_of_a_provided_row_exists(row):
    names = re.findall(r"`(nasx(?:\.\w+)+)`", row[1])
    assert names, f"row {row[0]}: the nasx column must name a nasx object or say 'not provided'"
    for dotted in names:
        found = resolve(dotted)
        assert found is not None and not isinstance(found, NotProvided), dotted


def test_differing_rows_say_how():
    for row in ROWS:
        if row[2] in ("differs", "absent"):
            assert len(row[3]) > 10, f"row {row[0]} must say why in its notes"


ABSENT = [r for r in ROWS if r[2] == "absent" and nni_name(r) and "(" not in r[0]]


@pytest.mark.parametrize("row", ABSENT, ids=[r[0].strip("`") for r in ABSENT])
def test_a_name_the_table_calls_absent_is_absent(row):
    module, attrs = mapped(nni_name(row))
    obj = importlib.import_module(module)
    for attr in attrs:
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            return
    assert isinstance(obj, NotProvided), (
        f"docs/porting_from_nni.md says {nni_name(row)} is not provided, but {module}."
        f"{'.'.join(attrs)} exists: update its row"
    )


@pytest.mark.parametrize("name", sorted(SPACE_NOT_PROVIDED))
def test_each_stand_in_has_its_row_and_names_the_nasx_way(name):
    import nasx.space

    stand_in = getattr(nasx.space, name)
    assert isinstance(stand_in, NotProvided)
    nni = stand_in.nni_name.split(" ")[0]
    assert any(nni_name(r) == nni for r in ROWS), f"no row for {nni}"
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
