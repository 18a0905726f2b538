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


# ----------------------------------------------------------------------------- import circles
# Modules that import each other (a circle, counted over every import statement: lazy ones inside
# functions and ``if TYPE_CHECKING:`` ones too) cannot be understood, tested or moved one at a
# time. The circles allowed to remain, each named by its modules ("nasx.space.*": any circle whose
# modules all live in nasx.space). A circle not listed fails; so does a listed one that is gone,
# so this list only shrinks.
ALLOWED_CIRCLES = {
    # The space knot: a choice registers its label in the build state, the state asks the space
    # classes how to build, and the space classes make choices (CONTRIBUTING.md, "Decisions").
    "nasx.space.*",
}
MAX_CIRCLES = 1  # issue 28 asked for at most 2; the space knot is the one left


def module_name(path: Path, root: Path = NASX) -> str:
    """'nasx.space.choice' for nasx/space/choice.py; 'nasx.space' for nasx/space/__init__.py."""
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = NASX) -> dict[str, set[str]]:
    """Module -> the modules under ``root`` it imports, from every import statement in its AST.

    Imports inside functions count. A package's ``__init__`` is left out: its re-exports are
    lazy (``nasx._lazy``), so ``from nasx.space import choice`` reaches the module ``choice`` and
    ``from nasx.space import ModelSpace`` reaches no module here.
    """
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    packages = {module_name(p, root) for p in root.rglob("__init__.py")}
    modules = set(paths) - packages
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for me in sorted(modules):
        package = me.split(".")[:-1]
        for node in ast.walk(ast.parse(paths[me].read_text(), str(paths[me]))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: climb from the module's package
                    up = package[: len(package) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                # ``from pkg import x`` imports the module pkg.x when there is one
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names
                ]
            else:
                continue
            graph[me].update(t for t in targets if t in modules and t != me)
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module, each sorted.

    Tarjan's algorithm, iterative (a deep import chain must not hit the recursion limit).
    """
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in sorted(graph):
        if start in order:
            continue
        work = [(start, iter(sorted(graph[start])))]
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in order:
                    order[nxt] = low[nxt] = len(order)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], order[nxt])
            else:  # every edge of node seen
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
    return sorted(circles)


def allowed_by(entry: str, circle: list[str]) -> bool:
    """Whether ``circle`` is the one ``entry`` of ALLOWED_CIRCLES names."""
    if entry.endswith(".*"):
        return all(m.startswith(entry[:-1]) for m in circle)
    return set(entry.split()) == set(circle)


def circle_problems(circles: list[list[str]], allowed: set[str] = ALLOWED_CIRCLES) -> list[str]:
    """One line per circle that is not allowed, and per allowed one that no longer exists."""
    problems = [
        f"import circle: {' <-> '.join(c)} (break it by moving code to a module both can "
        "import, or by passing a function in)"
        for c in circles
        if not any(allowed_by(entry, c) for entry in allowed)
    ]
    problems += [
        f"the allowed circle {entry!r} is gone: remove it from ALLOWED_CIRCLES"
        for entry in sorted(allowed)
        if not any(allowed_by(entry, c) for c in circles)
    ]
    return problems


def test_no_import_circles_but_the_allowed_ones():
    circles = import_circles(import_graph())
    problems = circle_problems(circles)
    assert not problems, "\n".join(problems)
    assert len(circles) <= MAX_CIRCLES, circles


def test_the_circle_check_sees_lazy_imports_and_skips_reexports(tmp_path):
    """The checker itself, on a fake tree: a circle closed by an import inside a function and a
    three-module one are found; a package re-export and a one-way import are not circles."""
    fake = tmp_path / "nasx"
    (fake / "evaluator").mkdir(parents=True)
    (fake / "evaluator" / "__init__.py").write_text("from .base import Evaluator\n")
    (fake / "evaluator" / "base.py").write_text(
        "def with_cost():\n    from .cost import Cost\n    return Cost\n"
    )
    (fake / "evaluator" / "cost.py").write_text("from nasx.evaluator.base import with_cost\n")
    (fake / "evaluator" / "plain.py").write_text("from nasx.evaluator import Evaluator\n")
    (fake / "a.py").write_text("from nasx import b\n")
    (fake / "b.py").write_text("import nasx.c\n")
    (fake / "c.py").write_text("if True:\n    from .a import x\nfrom .evaluator import plain\n")
    graph = import_graph(fake)
    assert graph["nasx.evaluator.plain"] == set()  # through the package: a re-export
    circles = import_circles(graph)
    assert circles == [
        ["nasx.a", "nasx.b", "nasx.c"],
        ["nasx.evaluator.base", "nasx.evaluator.cost"],
    ]
    assert circle_problems(circles, {"nasx.evaluator.*", "nasx.d nasx.e"}) == [
        "import circle: nasx.a <-> nasx.b <-> nasx.c (break it by moving code to a module both "
        "can import, or by passing a function in)",
        "the allowed circle 'nasx.d nasx.e' is gone: remove it from ALLOWED_CIRCLES",
    ]
