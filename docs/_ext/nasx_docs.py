"""Sphinx extension of nasx's docs: the pages generated at build time, and the build's own checks.

- ``api/``: the API reference (nasx_api.py), from the ``__all__`` of every public module;
- ``benchmarks/``: one page per ``benchmarks/*.results.md``, with the script it belongs to;
- ``tutorials/``: every ``tutorials/*.py`` (jupytext py:percent) as a notebook that MyST-NB
  executes in fast mode, with download links (notebook and script), and the gallery page of cards
  whose thumbnails are each tutorial's first figure (else ``docs/gallery/<name>.png``);
- a warning (an error under ``-W``) for every public name whose object has no docstring.

Generated files are rewritten only when their text changes, so incremental builds stay cheap.
"""

from __future__ import annotations

import html
import inspect
import shutil
from pathlib import Path

import jupytext
import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

import nasx_api

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]

# The gallery's order: first steps, then search kinds, then applications. A tutorial not named
# here still gets its card, after these (alphabetically).
TUTORIAL_ORDER = [
    "quickstart", "hello_nas", "nni_hello_nas", "darts_space", "darts", "custom_oneshot",
    "multi_fidelity", "hardware_aware", "hub_tour", "language_model", "segmentation",
    "spinenet_detection",
]  # fmt: skip
# Tutorials whose text is not a py:percent Markdown heading: the title and summary of their page.
UNTITLED = {
    "nni_hello_nas": ("NNI's Hello NAS, ported by changing imports",
                      "NNI 3.0's own hello-NAS tutorial, run on nasx: only its imports (and the "
                      "data loading, which cannot download here) changed."),
    "darts_space": ("A small DARTS-like space",
                    "The DARTS-style cell space that the DARTS tutorial, tests and benchmark "
                    "search: NNI's labels, a few lines to declare."),
}  # fmt: skip
DEFAULT_THUMB = "searched_cells.png"  # docs/gallery/: a tutorial that draws nothing


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        shutil.copyfile(src, dst)


# -- benchmarks ---------------------------------------------------------------------------------


def write_benchmark_pages(srcdir: Path) -> None:
    out = srcdir / "benchmarks"
    out.mkdir(exist_ok=True)
    names = []
    for results in sorted((ROOT / "benchmarks").glob("*.results.md")):
        stem = results.name.removesuffix(".results.md")
        names.append(stem)
        text = results.read_text()
        title, _, body = text.partition("\n") if text.startswith("# ") else (f"# {stem}", "", text)
        scripts = [ROOT / "benchmarks" / f"{stem}{ext}" for ext in (".py", ".sh")]
        script = next((s for s in scripts if s.exists()), None)
        head = [title, ""]
        if script is not None:
            _copy(script, out / "_scripts" / script.name)
            head += [
                f"Script: {{download}}`benchmarks/{script.name} <_scripts/{script.name}>` "
                f"(in the repository: `python benchmarks/{script.name} --help`); "
                f"results file: `benchmarks/{results.name}`.",
                "",
            ]
        else:
            head += [f"Results file: `benchmarks/{results.name}` (no script of its own).", ""]
        _write(out / f"{stem}.md", "\n".join(head) + body)
    for picture in (ROOT / "benchmarks").glob("*.png"):  # pictures the results files show
        _copy(picture, out / picture.name)
    index = ["# Benchmarks", "", "What each benchmark measured, the command, the machine and the "
             "numbers: one page per results file in `benchmarks/`.", "",
             "```{toctree}", ":maxdepth: 1", "", *names, "```", ""]  # fmt: skip
    _write(out / "index.md", "\n".join(index))


# -- tutorials and the gallery -----------------------------------------------------------------


def _tutorials() -> list[Path]:
    found = {p.stem: p for p in sorted((ROOT / "tutorials").glob("*.py"))}
    order = [n for n in TUTORIAL_ORDER if n in found] + sorted(set(found) - set(TUTORIAL_ORDER))
    return [found[n] for n in order]


def _title_and_summary(notebook: nbformat.NotebookNode, stem: str) -> tuple[str, str, int]:
    """The first markdown heading, the paragraph after it, and the index of its cell."""
    for i, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.strip().splitlines()
        if lines and lines[0].startswith("# "):
            rest = "\n".join(lines[1:]).strip().split("\n\n")[0]
            return lines[0][2:].strip(), " ".join(rest.split()), i
    return stem, "", -1


def _plain(markdown: str, limit: int = 180) -> str:
    text = markdown.replace("**", "").replace("`", "").replace("*", "")
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + " …"


def write_tutorial_pages(srcdir: Path) -> list[str]:
    out = srcdir / "tutorials"
    downloads = out / "_downloads"
    cards, stems = [], []
    for script in _tutorials():
        stem = script.stem
        stems.append(stem)
        notebook = jupytext.read(script, fmt="py:percent")
        _copy(script, downloads / script.name)
        _write(downloads / f"{stem}.ipynb", nbformat.writes(notebook))
        title, summary, at = _title_and_summary(notebook, stem)
        if at < 0:  # no Markdown heading: give the page one
            title, summary = UNTITLED.get(stem, (stem, ""))
            notebook.cells.insert(0, nbformat.v4.new_markdown_cell(f"# {title}\n\n{summary}"))
            at = 0
        links = nbformat.v4.new_markdown_cell(
            f"```{{admonition}} Download\n:class: nasx-download\n"
            f"{{download}}`{stem}.ipynb <_downloads/{stem}.ipynb>` (notebook) · "
            f"{{download}}`{stem}.py <_downloads/{stem}.py>` (script: "
            f"`python tutorials/{stem}.py --help`). Rendered here in fast mode (`NASX_FAST=1`).\n"
            "```"
        )
        notebook.cells.insert(at + 1, links)
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                           "language": "python"}  # fmt: skip
        _write(out / f"{stem}.ipynb", nbformat.writes(notebook))
        cards.append(
            f'<a class="nasx-card reference internal" href="{stem}.html">'
            f'<img src="../_static/thumbs/{stem}.png" alt="{html.escape(title)}">'
            f'<span class="nasx-card-title">{html.escape(title)}</span>'
            f'<span class="nasx-card-text">{html.escape(_plain(summary))}</span></a>'
        )
    index = [
        "# Tutorials", "",
        "Every script in `tutorials/`, executed in fast mode (`NASX_FAST=1`) when this site was "
        "built, with its printed output and its figures. Each page offers the notebook and the "
        "script; `python tutorials/<name>.py` runs the full version.", "",
        "```{raw} html", '<div class="nasx-gallery">', *cards, "</div>", "```", "",
        "```{toctree}", ":hidden:", "", *stems, "```", "",
    ]  # fmt: skip
    _write(out / "index.md", "\n".join(index))
    return stems


_FIRST_FIGURE: dict[str, str] = {}  # tutorial stem -> the image node's source path


def record_first_figure(app: Sphinx, doctree, docname: str) -> None:
    from docutils import nodes

    if not docname.startswith("tutorials/") or docname == "tutorials/index":
        return
    for image in doctree.findall(nodes.image):
        uri = image.get("candidates", {}).get("image/png") or image["uri"]
        if uri.endswith((".png", ".jpg", ".jpeg")):
            _FIRST_FIGURE[docname.split("/", 1)[1]] = uri
            return


def write_thumbnails(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    thumbs = Path(app.outdir) / "_static" / "thumbs"
    thumbs.mkdir(parents=True, exist_ok=True)
    gallery = ROOT / "docs" / "gallery"
    for script in _tutorials():
        stem = script.stem
        uri = _FIRST_FIGURE.get(stem)
        source = None
        if uri is not None and uri in app.builder.images:
            source = Path(app.outdir) / app.builder.imagedir / app.builder.images[uri]
        if source is None or not source.exists():
            own = gallery / f"{stem}.png"
            source = own if own.exists() else gallery / DEFAULT_THUMB
        shutil.copyfile(source, thumbs / f"{stem}.png")


# -- a public name without a docstring is an error -----------------------------------------------

_DOCUMENTED: set[str] = set()


def _own_doc(obj: object) -> str | None:
    if inspect.isclass(obj):
        return obj.__dict__.get("__doc__")
    return getattr(obj, "__doc__", None)


def check_docstring(app, what, name, obj, options, lines) -> None:
    if name not in _DOCUMENTED:
        return
    if what == "data":
        text = "\n".join(lines).strip()
        missing = not text or text == (inspect.getdoc(type(obj)) or "").strip()
    else:
        missing = not (_own_doc(obj) or "").strip()
    if missing:
        logger.warning(f"public name {name} has no docstring", type="nasx", subtype="docstring")


def generate(app: Sphinx) -> None:
    srcdir = Path(app.srcdir)
    nasx_api.write_pages(srcdir)
    _DOCUMENTED.update(nasx_api.documented_here())
    write_benchmark_pages(srcdir)
    write_tutorial_pages(srcdir)


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", generate)
    app.connect("autodoc-process-docstring", check_docstring)
    app.connect("doctree-resolved", record_first_figure)
    app.connect("build-finished", write_thumbnails)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
