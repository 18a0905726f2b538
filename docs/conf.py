"""Sphinx configuration of nasx's documentation site (built by ``make docs``).

Toolchain, and why:
- Sphinx + MyST-Parser: the pages are the Markdown files already under docs/ (and CHANGELOG.md),
  read as they are; Sphinx's cross-references let every page and docstring link API names, and
  ``-W`` with ``nitpicky`` turns a broken link or reference into a failed build.
- furo: a maintained, accessible theme (light/dark), with Sphinx's own search, which is a static
  index: it works offline and on any file server.
- MyST-NB for the tutorial gallery: the tutorials are jupytext py:percent scripts whose text cells
  are Markdown (``# %% [markdown]``). jupytext turns each into a notebook at build time, MyST-NB
  executes it in fast mode (NASX_FAST=1) and renders its Markdown, printed output and figures.
  sphinx-gallery would need the text blocks in reST; and the same notebook is the download.
- autodoc + autosummary + napoleon (the docstrings are Google style) for the API reference,
  generated from the ``__all__`` of every public module (docs/_ext/nasx_api.py).
- sphinx.ext.graphviz for the data-flow picture of the concepts page (graphviz's ``dot``).
The build host has no network except PyPI: no intersphinx, nothing is fetched at build time;
references to torch/Lightning/numpy types are therefore listed in ``nitpick_ignore_regex``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE / "_ext"), str(ROOT)]

# The tutorials run in fast mode. Their kernels start with an empty argv (an IPython startup file
# under a private IPYTHONDIR): they parse their command line like scripts run with no arguments.
os.environ["NASX_FAST"] = "1"
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
_ipython = HERE / "_build" / ".ipython"
(_ipython / "profile_default" / "startup").mkdir(parents=True, exist_ok=True)
(_ipython / "profile_default" / "startup" / "00-argv.py").write_text(
    "import sys\nsys.argv = sys.argv[:1]\n"
)
(_ipython / "profile_default" / "ipython_kernel_config.py").write_text(
    "# the kernel's own notices (it runs over local TCP) are not the tutorials' output\n"
    "c.IPKernelApp.log_level = 'ERROR'\n"
)
os.environ["IPYTHONDIR"] = str(_ipython)
# tqdm.auto (imported by Lightning) warns in a kernel without ipywidgets and falls back to the
# plain bar, which is what a static page can show anyway: the notice is noise on every page.
os.environ["PYTHONWARNINGS"] = "ignore:IProgress not found"

import logging  # noqa: E402

# nbclient logs "Executing notebook with kernel" for every tutorial at INFO: not news to a reader
# of the build's output (errors still show, and fail the build)
logging.getLogger("traitlets").setLevel(logging.WARNING)

import nasx  # noqa: E402

project = "nasx"
author = "the nasx authors"
copyright = "the nasx authors"  # noqa: A001 (Sphinx's name)
release = version = nasx.__version__

extensions = [
    "myst_nb",  # Markdown (MyST) pages and the executed tutorials
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.graphviz",
    "nasx_docs",  # docs/_ext: generated pages, gallery thumbnails, the docstring check
    "nasx_refs",  # docs/_ext: references by defining module or short name -> the public page
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = [
    "_build",
    "_ext",
    "gallery/README.md",
    "tutorials/_downloads",
    "benchmarks/_scripts",
    "**/.ipynb_checkpoints",
]
root_doc = "index"
html_theme = "furo"
html_title = f"nasx {release}"
html_static_path = ["_static"]
html_css_files = ["nasx.css"]
html_show_sourcelink = False
templates_path: list[str] = []

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links resolve
suppress_warnings: list[str] = []

# -- tutorials (MyST-NB) -----------------------------------------------------------------------
nb_execution_mode = "cache"  # a clean build executes everything; a rebuild only what changed
nb_execution_cache_path = str(HERE / "_build" / ".jupyter_cache")
nb_execution_timeout = 600  # per cell
nb_execution_raise_on_error = True  # a tutorial that fails fails the build
nb_execution_show_tb = True
nb_execution_in_temp = True  # tutorials write experiment folders: not into docs/
nb_merge_streams = True

# -- API reference (autodoc) -------------------------------------------------------------------
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_inherit_docstrings = False  # a method's docstring is its own, not torch's
autosummary_generate = False  # nasx_api.py writes the pages
python_maximum_signature_line_length = 88  # long signatures: one parameter per line
napoleon_google_docstring = True
napoleon_numpy_docstring = False
graphviz_output_format = "svg"

# Warnings are errors (-W); every Python reference must resolve (nitpicky). Without intersphinx
# (no network at build time), references to other projects' types cannot resolve: these are
# ignored, by package. A nasx name that does not resolve is still an error.
nitpicky = True
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(torch|pytorch_lightning|lightning|lightning_fabric|torchvision|torchmetrics)(\..*)?",
    ),
    (
        r"py:.*",
        r"(numpy|np|pandas|pd|matplotlib|graphviz|ray|onnx|onnxruntime|transformers)(\..*)?",
    ),
    (r"py:.*", r"(aiohttp|yaml|sqlite3|tensorboard|sklearn|PIL|scipy)(\..*)?"),
    # standard-library types whose documentation lives in Python's own docs (no intersphinx)
    (
        r"py:.*",
        r"(pathlib|collections\.abc|concurrent\.futures|multiprocessing|logging|enum|os)(\..*)?",
    ),
    (
        r"py:.*",
        r"(argparse|dataclasses|datetime|io|random|threading|types|typing_extensions|re)(\..*)?",
    ),
    (r"py:.*", r"(abc|contextlib|subprocess|socket|queue|asyncio|json|functools|warnings)(\..*)?"),
    (r"py:.*", r"(Path|Module|Tensor|Parameter|Dataset|DataLoader|Sequence|Mapping|Iterator)"),
    # torch.nn by its usual alias, in annotations kept as strings (``import torch.nn as nn``
    # under ``if TYPE_CHECKING:``, or a NamedTuple's fields)
    (r"py:.*", r"nn\..*"),
]
