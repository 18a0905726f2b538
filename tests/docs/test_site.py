"""The documentation site builds with zero warnings and works in a browser.

One module (so pytest-xdist keeps it on one worker, in order): the fixture runs ``make docs``'s
Sphinx command (incremental: executed tutorials are cached under docs/_build), then the tests
read the built HTML and drive Debian's headless Chromium over it, served on 127.0.0.1:

- the build has no warning (``-W``: broken references, public names without a docstring, a
  tutorial or code block that fails);
- every ``module.name`` of every public ``__all__`` has its anchor on the module's API page;
- every internal link and anchor of every page resolves;
- in the browser: the search finds ``ASHA``; the API entries of ``NasExperiment``, ``DARTS``,
  ``ASHA`` and ``LayerChoice`` show their signatures; every image of the gallery and of every
  tutorial page loads. Screenshots go to $NASX_SCREENSHOT_DIR when it is set.
"""

from __future__ import annotations

import asyncio
import functools
import html.parser
import http.server
import importlib
import inspect
import os
import pkgutil
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import nasx

from ..dashboard.cdp import Browser, chromium_path

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "docs" / "_build" / "html"
SCREENSHOT_DIR = Path(os.environ.get("NASX_SCREENSHOT_DIR", ""))

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
pytest.importorskip("sphinx", reason="the docs toolchain is in nasx[dev] (pip install -e '.[dev]')")


@pytest.fixture(scope="module")
def build() -> subprocess.CompletedProcess:
    shutil.rmtree(SITE, ignore_errors=True)  # as make docs: afresh (tutorial runs stay cached)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-b",
            "html",
            "-W",
            "--keep-going",
            "-q",
            "docs",
            str(SITE),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
    )


@pytest.fixture(scope="module")
def site(build) -> Path:
    if build.returncode != 0:
        pytest.fail(f"make docs failed (exit {build.returncode}):\n{build.stderr[-6000:]}")
    return SITE


def test_the_build_has_no_warning(build):
    warnings = [line for line in build.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert build.returncode == 0 and not warnings, "\n".join(warnings[:50]) or build.stderr[-3000:]


# -- the API reference covers every public name ------------------------------------------------


def _public_alls() -> dict[str, list[str]]:
    """Every public module of nasx (no ``_`` in its path) with an ``__all__``: its names."""
    modules = {"nasx": list(nasx.__all__)}
    for info in pkgutil.walk_packages(nasx.__path__, "nasx."):
        if any(part.startswith("_") for part in info.name.split(".")) or info.name == "nasx.cli":
            continue
        if not info.ispkg and info.name.count(".") > 1:
            continue  # a module inside a package: its package's __all__ is the public face
        module = importlib.import_module(info.name)
        if hasattr(module, "__all__"):
            modules[info.name] = list(module.__all__)
    return modules


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])


@functools.cache
def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(errors="replace"))
    return page


def test_every_public_name_has_an_api_anchor(site):
    alls = _public_alls()
    assert len(alls) >= 15 and sum(map(len, alls.values())) >= 300
    missing = []
    for module, names in alls.items():
        page = site / "api" / f"{module}.html"
        if not page.exists():
            missing.append(f"{module} (no page)")
            continue
        ids = _parse(page).ids
        for name in names:
            full = f"{module}.{name}"
            if inspect.ismodule(getattr(importlib.import_module(module), name)):
                if not (site / "api" / f"{full}.html").exists():  # a subpackage: its own page
                    missing.append(f"{full} (no page)")
            elif full not in ids:
                missing.append(full)
    assert not missing, f"{len(missing)} public names have no API entry: {missing[:30]}"


def test_internal_links_and_anchors_resolve(site):
    broken = []
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 40
    for page in pages:
        for href in _parse(page).links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(site)} -> {href}")
            elif parts.fragment and target.suffix == ".html":
                if unquote(parts.fragment) not in _parse(target).ids:
                    broken.append(f"{page.relative_to(site)} -> {href} (no such anchor)")
    assert not broken, f"{len(broken)} broken links:\n" + "\n".join(broken[:40])


def test_gallery_has_a_page_and_downloads_per_tutorial(site):
    for script in sorted((ROOT / "tutorials").glob("*.py")):
        page = site / "tutorials" / f"{script.stem}.html"
        assert page.exists(), f"tutorials/{script.name} has no gallery page"
        links = " ".join(_parse(page).links)
        assert f"{script.stem}.ipynb" in links and f"{script.stem}.py" in links, script.name
    index = _parse(site / "tutorials" / "index.html")
    assert len(index.images) == len(list((ROOT / "tutorials").glob("*.py")))


# -- in a browser -------------------------------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log in the test output
        pass


@pytest.fixture(scope="module")
def served(site):
    if chromium_path() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    pytest.importorskip("aiohttp", reason="the DevTools client uses aiohttp")
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
    ).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def _shot(browser: Browser, name: str) -> None:
    if str(SCREENSHOT_DIR) not in ("", "."):
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        await browser.screenshot(SCREENSHOT_DIR / f"docs_{name}.png")


SIGNATURES = {
    "nasx.experiment": "nasx.experiment.NasExperiment",
    "nasx.strategy": "nasx.strategy.DARTS",
    "nasx.experiment.schedulers": "nasx.experiment.schedulers.ASHA",
    "nasx.space": "nasx.space.LayerChoice",
}


def test_in_a_browser_search_signatures_and_images(served, site):
    tutorials = sorted(p.stem for p in (ROOT / "tutorials").glob("*.py"))
    results = asyncio.run(_browse(served, tutorials))
    assert any("ASHA" in hit for hit in results["search"]), results["search"][:10]
    for anchor, params in results["signatures"].items():
        assert params, f"{anchor}'s API entry shows no parameters in its signature"
    for page, images in results["images"].items():
        assert images["total"] > 0 or page != "tutorials/index", page
        assert not images["broken"], f"{page}: broken images {images['broken']}"


_IMAGES = """(() => { const all = [...document.images];
  return {total: all.length,
          broken: all.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)}; })()"""


async def _browse(url: str, tutorials: list[str]) -> dict:
    out: dict = {"signatures": {}, "images": {}}
    async with Browser() as b:
        await b.goto(f"{url}/index.html")
        await _shot(b, "index")
        await b.goto(f"{url}/search.html?q=ASHA")
        await b.wait_for("document.querySelectorAll('#search-results li').length > 0", 60)
        out["search"] = await b.eval(
            "[...document.querySelectorAll('#search-results li')].map(li => li.innerText)"
        )
        await _shot(b, "search_asha")
        for module, anchor in SIGNATURES.items():
            await b.goto(f"{url}/api/{module}.html#{anchor}")
            out["signatures"][anchor] = await b.eval(
                f"(() => {{ const dt = document.getElementById({anchor!r});"
                " return dt ? [...dt.querySelectorAll('.sig-param')].map(p => p.innerText) : []; })()"
            )
            await _shot(b, anchor.rsplit(".", 1)[1])
        for page in ["tutorials/index", *[f"tutorials/{t}" for t in tutorials]]:
            await b.goto(f"{url}/{page}.html")
            await b.wait_for("[...document.images].every(i => i.complete)", 30)
            out["images"][page] = await b.eval(_IMAGES)
            if page in ("tutorials/index", "tutorials/hello_nas"):
                await _shot(b, page.replace("/", "_"))
    return out
