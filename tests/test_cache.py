"""The one cache root: NASX_CACHE_DIR, else XDG_CACHE_HOME/nasx, else the platform's folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nasx import _cache
from nasx.datasets import cache_dir as data_cache_dir
from nasx.hub.pretrained import default_cache_dir as hub_cache_dir

HOME = Path.home()


@pytest.mark.parametrize(
    "env, os_name, expected_root",
    [
        ({}, "posix", HOME / ".cache/nasx"),
        ({"NASX_CACHE_DIR": "/srv/nasx"}, "posix", Path("/srv/nasx")),
        ({"NASX_CACHE_DIR": "~/nx"}, "posix", HOME / "nx"),  # ~ expanded
        ({"NASX_CACHE_DIR": ""}, "posix", HOME / ".cache/nasx"),  # empty counts as unset
        ({"XDG_CACHE_HOME": "/xdg"}, "posix", Path("/xdg/nasx")),
        ({"XDG_CACHE_HOME": "relative/dir"}, "posix", HOME / ".cache/nasx"),  # the spec: ignore
        ({"NASX_CACHE_DIR": "/srv/nasx", "XDG_CACHE_HOME": "/xdg"}, "posix", Path("/srv/nasx")),
        ({"LOCALAPPDATA": "/appdata/local"}, "nt", Path("/appdata/local/nasx")),
        ({"LOCALAPPDATA": "/appdata/local"}, "posix", HOME / ".cache/nasx"),  # Windows only
        ({"LOCALAPPDATA": "/appdata/local", "XDG_CACHE_HOME": "/xdg"}, "nt", Path("/xdg/nasx")),
        ({}, "nt", HOME / ".cache/nasx"),  # Windows without LOCALAPPDATA
    ],
)
def test_the_root_over_the_environment(monkeypatch, env, os_name, expected_root):
    for name in ("NASX_CACHE_DIR", "XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(_cache, "_on_windows", lambda: os_name == "nt")
    assert _cache.cache_root() == expected_root
    # every helper of nasx hands out a fixed folder under that one root
    assert hub_cache_dir() == expected_root / "hub"
    assert data_cache_dir() == expected_root / "data"
    assert _cache.cache_dir("compiled") == expected_root / "compiled"


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match=r"one of \['hub', 'data', 'compiled'\], got 'weights'"):
        _cache.cache_dir("weights")  # type: ignore[arg-type]


def test_the_root_is_read_on_every_call(monkeypatch, tmp_path):
    monkeypatch.setenv("NASX_CACHE_DIR", str(tmp_path / "a"))
    first = _cache.cache_root()
    monkeypatch.setenv("NASX_CACHE_DIR", str(tmp_path / "b"))
    assert (first.name, _cache.cache_root().name) == ("a", "b")
    assert os.environ["NASX_CACHE_DIR"].endswith("b")
