"""Packaging: one version, the type marker, the license, and a library's logging manners."""

from __future__ import annotations

import logging
from importlib import metadata
from pathlib import Path

import pytest

import nasx

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_written_once():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert metadata.version("nasx") == nasx.__version__  # what pip installed reads the same


def test_type_information_and_license_ship():
    assert (Path(nasx.__file__).parent / "py.typed").is_file()
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert (ROOT / "CHANGELOG.md").read_text().startswith("# Changelog")


def test_nasx_logs_reach_no_stderr_without_a_handler_of_the_users():
    handlers = logging.getLogger("nasx").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


OPTIONAL_DISTS = {"sklearn": "scikit-learn"}  # import name -> distribution name, where they differ


def _names(requirements: list[str]) -> set[str]:
    import re

    return {re.split(r"[<>=!~ \[;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_extras_match_what_the_code_imports():
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    from nasx._optional import EXTRAS

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    required = _names(project["dependencies"])
    for extra, modules in EXTRAS.items():
        dists = {OPTIONAL_DISTS.get(m, m) for m in modules}
        assert _names(extras[extra]) == dists, extra
        assert not dists & required, f"{extra}: optional packages must not be required"
        if extra != "ray":  # everything but Ray is installed for the tests
            assert dists <= _names(extras["dev"]), extra


def test_optional_packages_are_imported_only_through_optional_import():
    import ast

    from nasx._optional import EXTRAS

    optional = {m for modules in EXTRAS.values() for m in modules}
    direct = []
    for path in sorted((ROOT / "nasx").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            direct += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {n}"
                for n in names
                if n.split(".")[0] in optional
            ]
    assert not direct, "use nasx._optional.optional_import (it names the extra):\n" + "\n".join(
        direct
    )


def test_a_missing_optional_package_names_its_extra(monkeypatch):
    import sys

    from nasx._optional import MissingExtraError, optional_import

    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(MissingExtraError, match=r'^TrialTable.* needs pandas, .*"nasx\[pandas\]"$'):
        from nasx.experiment import TrialTable

        TrialTable([]).to_pandas()
    with pytest.raises(ValueError, match="unknown extra 'plots'"):
        optional_import("matplotlib", "plots", "x")


# Where printing is the job: the command line, `python -m nasx.datasets`, `python -m
# nasx.evaluator.nasbench201_release` (its main() only), the progress display and `nasx serve`'s
# startup lines. Everything else logs to the "nasx" logger.
MAY_PRINT = {
    "nasx/cli.py",
    "nasx/datasets/__main__.py",
    "nasx/evaluator/nasbench201_release.py",
    "nasx/experiment/display/progress.py",
    "nasx/dashboard/server.py",
}


def test_library_code_does_not_print():
    import ast

    prints = []
    for path in sorted((ROOT / "nasx").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in MAY_PRINT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
            ):
                prints.append(f"{rel}:{node.lineno}")
    assert not prints, "log to logging.getLogger('nasx...') instead of printing:\n" + "\n".join(
        prints
    )


def test_nasx_version_prints_the_one_version(capsys):
    from nasx.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"nasx {nasx.__version__}"
