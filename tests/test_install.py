"""``pip install nasx`` without extras: the installed package runs the README's multi-trial search.

The check, without a fresh venv (a real ``pip install .`` downloads torch and takes minutes):
``pip install --no-deps --target`` installs nasx (built from a copy of this tree) into a temporary
folder, then a subprocess run from elsewhere imports that copy, with every optional package
blocked (``None`` in ``sys.modules`` and no distribution metadata: importing them fails, and
version checks find nothing, as if they were not installed), and runs
the README's example (space, multi-trial search, rebuild).

How it differs from a real ``pip install .`` in a fresh venv: the required dependencies are the
ones already in this venv (their minimum versions and pip's resolution are not exercised), and
the optional packages are hidden from imports, not absent from the disk.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nasx._optional import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# Every optional package (the extras' and the dev-only ones): none may be needed.
BLOCKED = sorted({m for modules in EXTRAS.values() for m in modules} | {"aiohttp"})

RUNNER = textwrap.dedent(
    """
    import importlib.metadata as md, json, sys

    BLOCKED = set(json.loads(sys.argv[1]))
    # None in sys.modules: importing raises ModuleNotFoundError and importlib.util.find_spec
    # answers None, as for a package that is not installed.
    for name in BLOCKED:
        sys.modules[name] = None
    # ... and no distribution metadata either (Lightning and torchmetrics ask for versions).
    HIDDEN = {"sklearn": "scikit-learn"}.get
    DISTS = {HIDDEN(m, m) for m in BLOCKED}
    from_name = md.Distribution.from_name.__func__

    def hidden_from_name(cls, name):
        if name.lower().replace("_", "-") in DISTS:
            raise md.PackageNotFoundError(name)
        return from_name(cls, name)

    md.Distribution.from_name = classmethod(hidden_from_name)
    import nasx
    assert not nasx.__file__.startswith(sys.argv[2]), nasx.__file__  # the installed copy
    namespace = {"__name__": "readme"}
    for code in json.loads(sys.argv[3]):
        exec(code, namespace)
    print("RESULT", json.dumps({"best_arch": namespace["best_arch"], "nasx": nasx.__file__,
                                "loaded": sorted(m for m in BLOCKED if sys.modules.get(m) is not None)}))
    """
)


def readme_blocks() -> list[str]:
    from tests.test_readme import python_blocks

    return [code for _, code in python_blocks(README.read_text())]


@pytest.mark.slow  # builds and installs nasx (~7 s), then a fresh interpreter runs a search
def test_nasx_without_extras_runs_the_readmes_multi_trial_block(tmp_path):
    source = tmp_path / "source"  # built from a copy: the build leaves nothing in this tree
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "nasx", source / "nasx", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    assert (target / "nasx" / "py.typed").is_file()
    assert (target / "nasx" / "dashboard" / "static").is_dir()
    blocks = readme_blocks()
    assert "NasExperiment" in "".join(blocks) and "exp.run()" in "".join(blocks)
    workdir = tmp_path / "run"
    workdir.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(BLOCKED), str(ROOT), json.dumps(blocks)],
        cwd=workdir,
        env={"PATH": "", "PYTHONPATH": str(target), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert result["nasx"].startswith(str(target))
    assert isinstance(result["best_arch"], dict) and result["best_arch"]
    assert result["loaded"] == []
