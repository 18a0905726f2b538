"""Every tutorial answers ``--help`` (issue 43): exit 0 at once, before any data or training, with
a usage line, a description that starts with the tutorial's title, the environment variables it
reads and, for those that read data, where the data comes from and how to get it.

The scripts are also notebooks (jupytext py:percent) that the docs build runs with an empty
argv, and that a Jupyter kernel runs with arguments of its own (``-f kernel.json``, some
``--f=...``): each parses with ``parse_known_args`` and ``allow_abbrev=False``, checked below.
Their help is answered before the imports that take seconds, so all of them run at once in
parallel subprocesses in about a second.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "tutorials").glob("*.py"))
# what reads data from outside the repository (nasx.datasets' folders, the Debian path, a cache)
DATA_READERS = ("cifar10(", "fashion_mnist(", "demo_images(", "training_and_validation_objects(")
_ENV = re.compile(
    r"environ(?:\.get)?\s*[\(\[]\s*['\"]([A-Z_]+)['\"]|['\"]([A-Z_]+)['\"]\s+in\s+\w*\.?environ"
)


def _words(text: str) -> str:
    return " ".join(text.split())


def title(script: Path) -> str:
    """The first Markdown heading (``# # Title``); without one, what the docs make the title
    from: the docstring's first line, less a ``Tutorial:`` prefix, up to a ``:``, ``(`` or ``.``."""
    source = script.read_text(encoding="utf-8")
    heading = re.search(r"^# # (.+)$", source, re.M)
    if heading:
        return heading.group(1).strip()
    doc = ast.get_docstring(ast.parse(source)) or ""
    first = doc.strip().splitlines()[0].removeprefix("Tutorial: ")
    return re.split(r": |\(|\.(?:\s|$)", first)[0].strip()


@pytest.fixture(scope="module")
def helps(tmp_path_factory) -> dict[str, tuple[int, str, str]]:
    """``python tutorials/<name>.py --help`` of every tutorial, run in parallel: exit code,
    stdout and stderr by name."""
    cwd = tmp_path_factory.mktemp("help")  # a tutorial that wrote anything would write here
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("NASX_FAST", None)
    running = {
        script.stem: subprocess.Popen(
            [sys.executable, str(script), "--help"],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for script in TUTORIALS
    }
    done = {}
    try:
        for name, process in running.items():
            out, err = process.communicate(timeout=120)  # a tutorial that trains: far longer
            done[name] = (process.returncode, out, err)
    finally:
        for process in running.values():
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert not list(cwd.iterdir()), "--help wrote files"
    return done


def test_the_tutorials_are_found():
    assert len(TUTORIALS) >= 10 and "hello_nas" in {t.stem for t in TUTORIALS}


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_every_tutorial_answers_help(helps, script):
    code, out, err = helps[script.stem]
    assert code == 0 and err == "", err[-3000:]
    assert out.startswith(f"usage: {script.name} [-h]"), out[:500]
    description = _words(out.split("\n\n")[1])
    assert description.lower().startswith(_words(title(script)).lower()), (
        description,
        title(script),
    )
    source = script.read_text(encoding="utf-8")
    for found in _ENV.findall(source):
        name = found[0] or found[1]
        assert name in out, f"{script.name} reads ${name}: its --help must say what it does"
    if any(reader in source for reader in DATA_READERS):
        data = _words(out.split("\ndata:")[-1]) if "\ndata:" in out else ""
        assert data, f"{script.name} reads data: its --help needs a 'data:' paragraph"
        # where it comes from, and how to get it or what stands in for it
        assert re.search(r"NASX_DATA_DIR|shared/data|/usr/share", data), data
        assert re.search(r"download|stand in|digits|random images", data), data


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_every_tutorial_leaves_a_notebook_kernels_arguments_alone(script):
    """A kernel's argv (``-f kernel.json``, ``--f=...``) is not the script's: parsing must keep
    the unknown ones (``parse_known_args``) and not read ``--f`` as an abbreviation of
    ``--fast`` (``allow_abbrev=False``)."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    named = {getattr(c.func, "attr", getattr(c.func, "id", None)) for c in calls}
    assert "parse_known_args" in named and "parse_args" not in named
    parsers = [c for c in calls if getattr(c.func, "attr", None) == "ArgumentParser"]
    assert parsers and all(
        any(k.arg == "allow_abbrev" and k.value.value is False for k in c.keywords) for c in parsers
    )
