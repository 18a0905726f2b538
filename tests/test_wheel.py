"""The wheel users install: ``python -m build`` makes an sdist and a wheel of nasx, the wheel
holds the package and its data and nothing else, and installed (not editable) into a fresh venv
with the extras the README names it runs the README's example, ``nasx --help`` and
``nasx --version``.

The build runs on a copy of the tree (it leaves nothing here) with ``--no-isolation``, so it
uses this venv's setuptools and needs no network. The fresh venv has no packages of its own;
torch and the other dependencies come from this venv's site-packages through a folder of links
(every entry but nasx's own: its editable finder and metadata stay out), named in a ``.pth``
file. pip then resolves nasx's requirements against them with ``--no-index``, as it would on a
machine that has torch already, and installs the wheel itself for real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import nasx

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in")
# the package data the code reads at run time (pyproject's package-data)
DATA = {
    "nasx/py.typed",
    "nasx/dashboard/static/app.js",
    "nasx/dashboard/static/index.html",
    "nasx/dashboard/static/style.css",
    "nasx/hub/weights/darts-v2-cifar10.pt",
}

pytestmark = pytest.mark.slow  # a build (~5 s) and, for the install test, a venv and a search


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel, built from a copy of this tree."""
    work = tmp_path_factory.mktemp("build")
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "nasx", source / "nasx", ignore=shutil.ignore_patterns("__pycache__"))
    out = work / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return out


def _only(folder: Path, pattern: str) -> Path:
    (path,) = folder.glob(pattern)
    return path


def test_the_wheel_holds_the_package_and_its_data_and_nothing_else(dist):
    wheel = _only(dist, f"nasx-{nasx.__version__}-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    info = f"nasx-{nasx.__version__}.dist-info/"
    package = {n for n in names if not n.startswith(info)}
    modules = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "nasx").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert {n for n in package if n.endswith(".py")} == modules  # every module, only modules
    assert {n for n in package if not n.endswith(".py")} == DATA
    assert {n.removeprefix(info) for n in names if n.startswith(info)} >= {
        "METADATA",
        "entry_points.txt",
        "licenses/LICENSE",
    }
    assert "nasx = nasx.cli:main" in zipfile.ZipFile(wheel).read(info + "entry_points.txt").decode()


def test_the_sdist_holds_the_sources_and_no_tests(dist):
    sdist = _only(dist, f"nasx-{nasx.__version__}.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert set(SOURCES) <= names and DATA <= names
    assert not {n for n in names if n.split("/")[0] in ("tests", "benchmarks", "tutorials")}


EXAMPLE = """
import sys, nasx
assert nasx.__file__.startswith(sys.prefix), nasx.__file__  # the wheel's copy, not the tree's
"""


def test_the_wheel_installs_in_a_fresh_venv_and_runs_the_readme_example(dist, tmp_path):
    from tests.test_readme import README, python_blocks

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # the dependencies, without reinstalling torch: links to this venv's packages, less nasx's
    deps = tmp_path / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if not entry.name.lower().startswith(("nasx", "__editable__", "_nasx")):
            os.symlink(entry, deps / entry.name)
    (site / "deps.pth").write_text(f"{deps}\n")
    wheel = _only(dist, "nasx-*.whl")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    done = subprocess.run(
        [
            *pip,
            "install",
            "--no-index",
            "--find-links",
            str(dist),
            f"nasx[plot,dashboard]=={nasx.__version__}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (site / "nasx" / "py.typed").is_file() and wheel.name in done.stdout + done.stderr
    assert not list(site.glob("__editable__*"))  # a real install, not an editable one

    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "OMP_NUM_THREADS": "1", "HOME": str(tmp_path)}
    run = tmp_path / "run"  # outside the repository: nothing of the tree is importable
    run.mkdir()

    def nasx_command(*args: str) -> str:
        done = subprocess.run(
            [str(venv / "bin" / "nasx"), *args], cwd=run, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    assert nasx_command("--version").strip() == f"nasx {nasx.__version__}"
    assert "serve" in nasx_command("--help")

    code = EXAMPLE + "".join(code for _, code in python_blocks(README.read_text()))
    done = subprocess.run(
        [str(python), "-c", code], cwd=run, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "torch.Size([2, 10])" in done.stdout
    assert "succeeded" in nasx_command("show", "nasx_experiments/run1")
