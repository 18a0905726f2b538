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
