"""Typed for users: the public names reach a user's type checker with their real types.

The package ``__init__`` files hand names on lazily (PEP 562); an ``if TYPE_CHECKING:`` block in
each lists the same names for type checkers and IDEs. The first test keeps the two lists from
drifting apart; the second runs mypy on a user's script and checks, name by name, that no ``Any``
comes out of nasx's signatures.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

NASX = Path(__file__).resolve().parents[1] / "nasx"
LAZY_PACKAGES = sorted(
    p for p in NASX.rglob("__init__.py") if "_LAZY_NAMES" in p.read_text(encoding="utf-8")
)


def _type_checking_imports(tree: ast.Module) -> dict[str, str]:
    """Name -> module for every ``from M import N as N`` under a top-level ``if TYPE_CHECKING:``."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.unparse(stmt)
                for alias in stmt.names:
                    # ``as`` the same name: an explicit re-export for mypy's no_implicit_reexport
                    assert alias.asname == alias.name, ast.unparse(stmt)
                    module = "." * stmt.level + (stmt.module or "")
                    found[alias.name] = module
    return found


@pytest.mark.parametrize(
    "init", LAZY_PACKAGES, ids=lambda p: str(p.parent.relative_to(NASX.parent))
)
def test_type_checking_imports_list_exactly_the_lazy_names(init):
    package = ".".join(init.parent.relative_to(NASX.parent).parts)
    module = importlib.import_module(package)
    expected = dict(module._LAZY_NAMES)
    expected.update({name: "." for name in getattr(module, "_SUBPACKAGES", ())})
    assert _type_checking_imports(ast.parse(init.read_text(encoding="utf-8"))) == expected


def test_every_lazy_name_resolves():
    for init in LAZY_PACKAGES:
        module = importlib.import_module(".".join(init.parent.relative_to(NASX.parent).parts))
        for name in module._LAZY_NAMES:
            assert getattr(module, name) is not None


# A user's script. ``assert_type`` fails mypy when a type differs; ``disallow-any-expr`` fails it
# when any expression is ``Any`` (an unannotated or ``Any``-returning nasx signature). Only this
# file gets the strict flags, so mypy reuses the cache of ``make typecheck`` for everything else.
USER_SCRIPT = """\
# mypy: disallow-any-expr, disallow-untyped-defs, disallow-untyped-calls, warn-return-any
from __future__ import annotations

import torch
import torch.nn as nn
from typing_extensions import assert_type

import nasx
from nasx.evaluator import Classification
from nasx.experiment import NasExperiment
from nasx.hub import load_searched_model
from nasx.space import LayerChoice, ModelSpace, SearchSpace, model_context, search_space
from nasx.evaluator import FunctionalEvaluator
from nasx.experiment import TrialTable, load_trials
from nasx.profiler import count_macs, count_parameters
from nasx.strategy import DARTS, TPE, Random, RandomOneShot, RegularizedEvolution
from nasx.trial import Trial


class Net(ModelSpace):
    def __init__(self) -> None:
        super().__init__()
        width = nasx.choice("width", [8, 16])
        assert_type(width, int)
        self.conv = nasx.LayerChoice([nn.Conv2d(3, width, 3), nn.Conv2d(3, width, 5)], label="op")
        assert_type(self.conv, LayerChoice)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.conv(x)
        return out


space = search_space(Net())
assert_type(space, SearchSpace)
strategy = TPE(seed=0)
assert_type(strategy, TPE)
assert_type(nasx.strategy.TPE(), TPE)
assert_type(RandomOneShot(), RandomOneShot)
assert_type(DARTS(), DARTS)
evaluator = Classification(max_epochs=1)
assert_type(evaluator, Classification)
exp = NasExperiment(Net(), evaluator, strategy, max_trials=2)
assert_type(exp, NasExperiment)
assert_type(exp.run(), None)
assert_type(exp.export_top_models(formatter="instance"), list[nn.Module])
assert_type(exp.export_top_models(2, "instance")[0], nn.Module)
assert_type(load_searched_model("darts-v2", pretrained=False), nn.Module)
hub_space = nasx.hub.DARTS(width=4, num_cells=3)
assert_type(count_macs(hub_space, (3, 16, 16)), int)
assert_type(count_parameters(hub_space), int)
evolution = NasExperiment(hub_space, FunctionalEvaluator(count_parameters), RegularizedEvolution())
assert_type(evolution.trials()[0].metric, float | None)
assert_type(evolution.trial_table(), TrialTable)
assert_type(load_trials("workdir")[0], Trial)
assert_type(Random(seed=0), Random)
"""

# Archs are ``{label: value}`` with values of any type a choice may hold (ints, strings, lists of
# ints): their ``Any`` is the honest type, so this part runs without ``disallow-any-expr``.
ARCH_SCRIPT = """\
# mypy: disallow-untyped-defs, disallow-untyped-calls
from collections.abc import Mapping
from typing import Any

from typing_extensions import assert_type

from nasx.space import model_context
from user_script import Net, exp, space

assert_type(space.sample(seed=0), dict[str, Any])
assert_type(exp.export_top_models(1), list[dict[str, Any]])
with model_context({"width": 8, "op": 0}) as arch:
    assert_type(arch, Mapping[str, Any])
    assert_type(Net(), Net)
"""


@pytest.mark.slow  # mypy reads torch's stubs: ~35 s cold, a few seconds with a warm cache
def test_a_users_mypy_sees_real_types_and_no_any(tmp_path):
    api = pytest.importorskip("mypy.api", reason="mypy is in the dev extras")
    (tmp_path / "user_script.py").write_text(USER_SCRIPT, encoding="utf-8")
    (tmp_path / "arch_script.py").write_text(ARCH_SCRIPT, encoding="utf-8")
    root = NASX.parent
    stdout, stderr, status = api.run(
        [
            "--config-file",
            str(root / "pyproject.toml"),
            "--cache-dir",
            str(root / ".mypy_cache"),
            "--no-error-summary",
            "--show-error-codes",
            str(tmp_path / "user_script.py"),
            str(tmp_path / "arch_script.py"),
        ]
    )
    assert status == 0, stdout + stderr
