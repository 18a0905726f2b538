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

import dataclasses
import html
import inspect
import shutil
import sys
from pathlib import Path

import jupytext
import nasx_api
import nbformat
from sphinx.application import Sphinx
from sphinx.errors import PycodeError
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging

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


def _rest_headings(text: str) -> str:
    """reST's underlined headings as Markdown ones (NNI's tutorial text is sphinx-gallery reST).

    Example:
        >>> _rest_headings("Hello\\n=====\\nText\\n\\nPart\\n----\\n")
        '## Hello\\nText\\n\\n### Part\\n'
    """
    levels = {"=": "## ", "-": "### ", "^": "#### "}
    lines, out = text.splitlines(keepends=True), []
    for i, line in enumerate(lines):
        under = line.strip()
        if i and under and len(set(under)) == 1 and under[0] in levels and out and out[-1].strip():
            out[-1] = levels[under[0]] + out[-1]
            continue
        out.append(line)
    return "".join(out)


def _docstring_to_markdown(notebook: nbformat.NotebookNode, title: str | None = None) -> None:
    """A script's module docstring (the first code cell's only statement) becomes Markdown.

    It is written for someone reading the script (reST's ``double`` backticks); on the page it is
    the introduction, not code whose value the notebook echoes. With no ``# `` heading anywhere,
    its first sentence becomes the page's title.
    """
    import ast

    for i, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        try:
            body = ast.parse(cell.source).body
        except SyntaxError:
            return
        if len(body) != 1 or not isinstance(body[0], ast.Expr):
            return
        value = body[0].value
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            return
        text = inspect.cleandoc(value.value).replace("``", "`")
        if title is not None:  # a page titled here (UNTITLED): its docstring is its introduction
            notebook.cells[i] = nbformat.v4.new_markdown_cell(
                f"# {title}\n\n{_rest_headings(text)}"
            )
            return
        has_title = any(
            c.cell_type == "markdown" and c.source.lstrip().startswith("# ") for c in notebook.cells
        )
        if has_title:  # the notebook's own text introduces it: the docstring was for the script
            del notebook.cells[i]
            return
        first, _, rest = text.partition("\n\n")
        first = " ".join(first.split())
        first = first.removeprefix("Tutorial: ")
        # "Title: what it does. More." -> the title, then the rest as the introduction
        sentence, dot, more = first.partition(". ")
        title, _, what = sentence.partition(": ")
        title = title[:1].upper() + title[1:].rstrip(".")
        what = what[:1].upper() + what[1:].rstrip(".") + "." if what else ""
        intro = "\n\n".join(part for part in (what, more if dot else "", rest) if part)
        notebook.cells[i] = nbformat.v4.new_markdown_cell(f"# {title}\n\n{intro}".strip())
        return


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
        _docstring_to_markdown(notebook, UNTITLED.get(stem, (None,))[0])
        _copy(script, downloads / script.name)
        _write(downloads / f"{stem}.ipynb", nbformat.writes(notebook))
        title, summary, at = _title_and_summary(notebook, stem)
        if stem in UNTITLED:
            title, summary = UNTITLED[stem]
        if at < 0:  # still no heading (a plain module): the page gets one
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


def _assignment_doc(name: str, obj: object) -> list[str] | None:
    """The doc comment (``#:`` above, or a string below) of the assignment that made ``obj``.

    A constant is documented at its public home (``nasx.hub.MNASNET_A1``) but assigned, with its
    doc comment, in the module that defines it (``nasx/hub/mnasnet.py``), while autodoc reads
    comments in the home module's source only. This looks in every loaded nasx module that holds
    the same object under the same name: the home first, then the modules under it.
    """
    home, _, attr = name.rpartition(".")
    holders = [m for m in sys.modules if m == "nasx" or m.startswith("nasx.")]
    # the home first, then the modules under it, then the rest; by name within each
    for module_name in sorted(holders, key=lambda m: (m != home, not m.startswith(home + "."), m)):
        if getattr(sys.modules[module_name], attr, None) is not obj:
            continue
        try:
            analyzer = ModuleAnalyzer.for_module(module_name)
            analyzer.analyze()
        except PycodeError:
            continue
        comment = analyzer.attr_docs.get(("", attr))
        if comment:
            return list(comment)
    return None


def data_docstring(app, what, name, obj, options, lines) -> None:
    """A public constant's doc comment, wherever it is assigned, in place of its value's class
    docstring (``dict``'s, ``tuple``'s...)."""
    if what == "data" and name.startswith("nasx"):
        found = _assignment_doc(name, obj)
        if found is not None:
            lines[:] = found


def factory_defaults(app, what, name, obj, options, signature, return_annotation):
    """A dataclass field with a ``default_factory`` shows as ``= <factory>``, which is not Python:
    Sphinx then parses the signature by splitting it at every comma (``dict[str, int]`` and
    ``Literal['a', 'b']`` break into unknown names). Show the factory's call instead."""
    if not signature or "<factory>" not in signature or not dataclasses.is_dataclass(obj):
        return None
    for field in dataclasses.fields(obj):
        if field.default_factory is not dataclasses.MISSING:
            factory = getattr(field.default_factory, "__qualname__", "")
            call = f"{factory}()" if factory.isidentifier() else "..."
            signature = signature.replace("<factory>", call, 1)
    return signature, return_annotation


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
    app.connect("autodoc-process-docstring", data_docstring, priority=400)  # before the check
    app.connect("autodoc-process-signature", factory_defaults)
    app.connect("autodoc-process-docstring", check_docstring)
    app.connect("doctree-resolved", record_first_figure)
    app.connect("build-finished", write_thumbnails)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
