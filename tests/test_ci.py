"""CI runs what the README says it runs: the default suite, then the slow tier, then the types."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT


def _make_commands(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if line.strip().startswith("make ")]


def test_ci_runs_the_default_suite_the_docs_the_slow_tier_then_the_type_check():
    assert _make_commands((REPO_ROOT / ".ci" / "run").read_text()) == [
        "make test",
        "make docs",
        "make test-slow",
        "make typecheck",
    ]


def test_the_slow_target_selects_the_slow_tests_and_skips_only_those_run_elsewhere():
    makefile = (REPO_ROOT / "Makefile").read_text()
    recipe = re.search(r"^test-slow:.*\n\t(.*)$", makefile, re.M)
    assert recipe and "-m slow" in recipe.group(1), "make test-slow must run pytest -m slow"
    deselected = re.findall(r"--deselect (\S+)", makefile)
    # each deselected test runs in `make test` or `make typecheck` instead
    test_and_typecheck = makefile[makefile.index("\ntest:") : makefile.index("\ntest-slow:")]
    test_and_typecheck += makefile[makefile.index("\ntypecheck:") :]
    for nodeid in deselected:
        assert nodeid.split("::")[0] in test_and_typecheck, nodeid


def test_the_readme_names_every_command_ci_runs():
    readme = (REPO_ROOT / "README.md").read_text()
    for command in _make_commands((REPO_ROOT / ".ci" / "run").read_text()):
        assert f"`{command}`" in readme, command
