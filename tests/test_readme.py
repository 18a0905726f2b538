"""README.md and the how-to guides it links run as written.

Every ```python block of README.md runs top to bottom in one namespace; so do the blocks of each
guide page in GUIDES (one namespace per page). The README stays a README: at most 200 lines, no
dated timings (those live in benchmarks/*.results.md), and every relative link resolves.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# guide pages with runnable blocks -> what their blocks print, as their comments say: each
# claim must be on the page and its text after the last ": " in the output
GUIDES = {
    "docs/get_started.md": ["['op', 'width']"],  # the first search's best arch, its labels
    "docs/concepts.md": [
        "the search space's labels: ['act', 'width']",
        "32 GELU",  # the rebuilt model's conv width and activation
    ],
    "docs/constraints.md": [
        "76 of 96 archs satisfy the constraints (exact, by enumeration)",  # count_valid()
    ],
    "docs/one_shot.md": [],
    "docs/hub.md": [],
    "docs/hardware_aware.md": [
        "3887038 311579072",  # arch_cost(MnasNet(), MNASNET_A1, ...): params, MACs
        "soft MnasNet reward: 0.7438",  # the comment; the output is the number
    ],
    "docs/seeing_a_search.md": [],
    "docs/porting_from_nni.md": [],
}


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of each fenced ```python block.

    Example:
        >>> python_blocks("x\\n```python\\na = 1\\n```\\n```bash\\nls\\n```\\n")
        [(3, 'a = 1\\n')]
    """
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        blocks.append((text[: match.start()].count("\n") + 2, match.group(1)))
    return blocks


def run_blocks(path: Path) -> dict:
    """Run a page's python blocks top to bottom in one namespace; fail naming the block."""
    namespace: dict = {"__name__": "readme"}
    name = path.relative_to(ROOT)
    for line, code in python_blocks(path.read_text()):
        try:
            exec(compile(code, f"{name}:{line}", "exec"), namespace)
        except Exception as e:  # name the block, keep the traceback
            pytest.fail(f"{name} block at line {line} failed: {type(e).__name__}: {e}")
    return namespace


def test_readme_has_one_example_of_space_search_rebuild():
    (block,) = [code for _, code in python_blocks(README.read_text())]
    for step in ("ModelSpace", "NasExperiment", "exp.run()", "model_context"):
        assert step in block, step


def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # experiments write nasx_experiments/ under the cwd
    namespace = run_blocks(README)
    assert "torch.Size([2, 10])" in capsys.readouterr().out  # the rebuilt model's output
    assert isinstance(namespace["best_arch"], dict) and set(namespace["best_arch"]) == {
        "width",
        "op",
    }


def test_readme_is_short_and_undated():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    for dated in (
        r"\b20\d\d-\d\d-\d\d\b",
        r"\bUTC\b",
        r"load average",
        r"\bidle\b",
        r"\d+ min \d+ s",
    ):
        assert not re.search(dated, text), f"README.md has {dated!r}: it belongs in a results file"


def test_readme_links_resolve():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert local
    for link in local:
        assert (ROOT / link).is_file(), f"README.md links {link}, which is not a file"
    for page in GUIDES:  # every guide page with blocks is in the feature table
        assert page in local, page


@pytest.mark.parametrize("page", GUIDES)
def test_guide_page_blocks_run_in_order(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = run_blocks(ROOT / page)
    out = capsys.readouterr().out
    text = (ROOT / page).read_text()
    for claim in GUIDES[page]:
        assert claim in text, f"{page} no longer says {claim!r}"
        assert claim.rpartition(": ")[2] in out, f"{page} says {claim!r}; the blocks printed\n{out}"
    if page == "docs/one_shot.md":
        assert "normal/op_2_0" in namespace["probs"]  # DARTS probabilities by NNI's labels
    if page == "docs/porting_from_nni.md":
        assert out.splitlines()[-1] == "64"  # the frozen arch's conv: ch = 32, times 2
    if page == "docs/seeing_a_search.md":
        assert (tmp_path / "history.png").stat().st_size > 0


def test_readme_install_names_the_current_version():
    import nasx

    text = README.read_text()
    assert f"dist/nasx-{nasx.__version__}-py3-none-any.whl" in text
    assert f"# nasx {nasx.__version__}" in text  # what `nasx --version` prints
    assert "pip install nasx" not in text  # never published on PyPI


# pages of the site itself, not how-to guides
SITE_PAGES = {"index.md", "get_started.md", "concepts.md", "changelog.md"}


@pytest.mark.parametrize(
    "page", sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name not in SITE_PAGES)
)
def test_docs_page_links_are_files(page):
    """Relative links of a how-to page name files (other pages, images): Sphinx refuses folders.

    The site's own pages (index, get started, concepts, changelog) link into the built site.
    """
    path = ROOT / "docs" / page
    for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
        if "://" not in link and not link.startswith("mailto:"):
            assert (path.parent / link).is_file(), f"docs/{page} links {link}, which is not a file"


# pages whose blocks are run by a test of their own, and pages of sketches that cannot run here
RUN_ELSEWHERE = {
    "multi_fidelity.md": "tests/test_docs_multi_fidelity.py",
    "hyperparameters.md": "tests/test_docs_hyperparameters.py",
    "trained_models.md": "tests/experiment/test_weights.py",
}
SKETCHES = {
    "language_models.md": "needs a text corpus, a trained parent and a Hugging Face checkpoint",
    "scaling.md": "needs a Ray cluster or several GPUs",
    "search_quality.md": "needs the NAS-Bench-201 table (benchmarks/nb201_search.py runs it)",
}


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "docs").glob("*.md")))
def test_every_docs_code_block_is_run_or_a_named_sketch(page):
    """Each page's python blocks compile; a page whose blocks no test runs says why here."""
    blocks = python_blocks((ROOT / "docs" / page).read_text())
    for line, code in blocks:
        compile(code, f"docs/{page}:{line}", "exec")
    if not blocks:
        return
    if page in RUN_ELSEWHERE:
        assert (ROOT / RUN_ELSEWHERE[page]).read_text().count(f"docs/{page}"), page
    else:
        assert f"docs/{page}" in GUIDES or page in SKETCHES, (
            f"docs/{page} has python blocks that no test runs: add it to GUIDES"
        )


def test_the_concepts_page_defines_every_word_and_draws_the_data_flow():
    text = (ROOT / "docs" / "concepts.md").read_text()
    words = "space choice label arch model evaluator metric strategy trial experiment budget"
    for word in [*words.split(), "scheduler", "rung", "search space"]:
        assert re.search(rf"^\*\*{word}\*\*", text, re.M), (
            f"docs/concepts.md does not define {word}"
        )
    assert "```{graphviz}" in text and "digraph" in text
