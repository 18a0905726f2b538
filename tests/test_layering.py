"""The package layering of DESIGN.md, checked on every import statement under nasx/.

Data flows one way: space -> strategy -> experiment, evaluator -> experiment; the hub builds on
space only; only the experiment brings space, strategy, evaluator and storage together. An import
that breaks this fails here with the file, line and rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

NASX = Path(__file__).resolve().parents[1] / "nasx"

# What each part of nasx may import from the others. Private top-level helpers (``nasx._*``) are
# open to all; a part may always import itself.
ALLOWED: dict[str, set[str]] = {
    "space": set(),  # the foundation: nothing from strategy, evaluator, experiment or hub
    "trial": set(),
    "profiler": set(),
    "datasets": set(),
    # cost, latency, predictor and rewards of archs and models
    "hardware": {"space", "profiler"},
    "serving": set(),  # export of a chosen model for serving
    "hub": {"space", "datasets", "profiler"},  # spaces and weights; never strategies
    # language models: train, prune and distill hub GPT models; Hugging Face in and out
    "lm": {"space", "hub", "datasets", "profiler", "hardware"},
    "strategy": {"space", "trial", "profiler", "hardware"},  # sees only the search space and trials
    "evaluator": {
        "space",
        "trial",
        "datasets",
        "hub",
        "profiler",
        "hardware",
    },  # scores models or archs
    "experiment": {
        "space",
        "strategy",
        "evaluator",
        "trial",
        "datasets",
        "hub",
        "profiler",
        "hardware",
    },
    # Looking at searches, above the experiment: pictures, the page, the command line.
    "plot": {"trial", "experiment", "hub"},  # reads stored trials; hub for DARTS genotypes
    "dashboard": {"trial", "experiment", "plot"},
    "cli": {"trial", "experiment", "plot", "dashboard", "pipeline"},
    # A pipeline file names a hub space, a strategy, an evaluator and data: it builds them all.
    "pipeline": {
        "space",
        "strategy",
        "evaluator",
        "trial",
        "datasets",
        "hub",
        "hardware",
        "experiment",
    },
}
OPEN_TO_ALL = {"__init__", "__main__"}  # nasx/__init__.py re-exports lazily (no import statements)


def part_of(path: Path, root: Path = NASX) -> str:
    """'space' for nasx/space/x.py, 'trial' for nasx/trial.py."""
    rel = path.relative_to(root)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imported_parts(path: Path, root: Path = NASX):
    """(line, part) for every ``nasx.<part>`` an import statement in ``path`` names."""
    package = ("nasx",) + path.relative_to(root).parent.parts  # the package the file is in
    tree = ast.parse(path.read_text(), str(path))
    # A package's ``if TYPE_CHECKING:`` block mirrors its lazy re-exports for type checkers; it
    # imports nothing at run time (nasx.strategy re-exports the experiment's Filter that way).
    typing_only = set()
    if path.name == "__init__.py":
        for top in tree.body:
            if isinstance(top, ast.If) and ast.unparse(top.test) == "TYPE_CHECKING":
                typing_only.update(id(n) for stmt in top.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: climb from the file's package
                base = package[: len(package) - (node.level - 1)]
                names = [".".join(base + ((node.module,) if node.module else ()))]
                if not node.module:  # from .. import x: x may be a part
                    names = [f"{names[0]}.{alias.name}" for alias in node.names]
            else:
                names = [node.module or ""]
        for name in names:
            bits = name.split(".")
            if bits[0] == "nasx" and len(bits) > 1:
                yield node.lineno, bits[1]


def test_every_part_is_in_the_table():
    parts = {part_of(p) for p in NASX.rglob("*.py")} - OPEN_TO_ALL
    private = {p for p in parts if p.startswith("_")}
    assert parts - private <= set(ALLOWED), (
        f"add {sorted(parts - private - set(ALLOWED))} to ALLOWED"
    )


def layering_violations(root: Path) -> list[str]:
    """One line per import statement under ``root`` (a nasx tree) that breaks ``ALLOWED``."""
    broken = []
    for path in sorted(root.rglob("*.py")):
        me = part_of(path, root)
        if me in OPEN_TO_ALL or me.startswith("_"):
            continue
        for line, other in imported_parts(path, root):
            if other == me or other.startswith("_") or other in ALLOWED.get(me, set()):
                continue
            broken.append(
                f"{path.relative_to(root.parent)}:{line}: {me} imports nasx.{other} "
                f"({me} may import {sorted(ALLOWED.get(me, ())) or 'no other part'})"
            )
    return broken


def test_imports_follow_the_layering():
    broken = layering_violations(NASX)
    assert not broken, "imports against DESIGN.md's layering:\n" + "\n".join(broken)


def test_the_check_sees_a_broken_import(tmp_path):
    """The checker itself: a space module importing the experiment (relatively) is reported."""
    fake = tmp_path / "nasx"
    (fake / "space").mkdir(parents=True)
    (fake / "space" / "ok.py").write_text("from . import labels\nimport torch\n")
    (fake / "space" / "bad.py").write_text("import os\nfrom ..experiment import NasExperiment\n")
    (fake / "hub").mkdir()
    (fake / "hub" / "bad.py").write_text("from nasx.strategy import DARTS\n")
    assert layering_violations(fake) == [
        "nasx/hub/bad.py:1: hub imports nasx.strategy (hub may import ['datasets', 'profiler', 'space'])",
        "nasx/space/bad.py:2: space imports nasx.experiment (space may import no other part)",
    ]
