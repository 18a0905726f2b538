"""nasx: neural architecture search for PyTorch, with NNI-style model spaces.

``import nasx`` is cheap: subpackages (and torch) load on first use of a name.

    >>> import nasx
    >>> nasx.__version__
    '0.1.0'
    >>> nasx.choice is nasx.space.choice
    True
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

#: The version of nasx (the package's metadata reads it from here).
__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it)

# A library logs, the application decides where it goes: without a handler of the user's own,
# nasx's records are dropped instead of reaching Python's last-resort stderr handler.
logging.getLogger("nasx").addHandler(logging.NullHandler())

# Public name -> module that defines it. Resolved lazily (PEP 562) to keep ``import nasx`` light.
_LAZY_NAMES = {
    "ModelSpace": "nasx.space",
    "LayerChoice": "nasx.space",
    "InputChoice": "nasx.space",
    "Repeat": "nasx.space",
    "Cell": "nasx.space",
    "Categorical": "nasx.space",
    "CategoricalMultiple": "nasx.space",
    "choice": "nasx.space",
    "model_context": "nasx.space",
    "search_space": "nasx.space",
    "ensure_frozen": "nasx.space",
    "label_scope": "nasx.space",
    "NasxError": "nasx._errors",  # the root of every nasx exception
    # NNI's top-level shortcuts (nni.uniform, ...) and nni.mutable's main names (issue 17)
    **dict.fromkeys(
        ["Numerical", "MutableExpression", "MutableList", "MutableDict", "frozen_context"]
        + ["uniform", "quniform", "loguniform", "qloguniform", "normal", "qnormal"],
        "nasx.space",
    ),
    "trace": "nasx.evaluator.tracing",  # NNI's nni.trace (nasx needs no tracing; kept for porting)
    # NNI's metric channel, bound to the trial being evaluated (nasx itself uses return values)
    "report_intermediate_result": "nasx.evaluator.nni_report",
    "report_final_result": "nasx.evaluator.nni_report",
}
_SUBPACKAGES = (
    "space",
    "strategy",
    "evaluator",
    "hub",
    "experiment",
    "datasets",
    "profiler",
    "trial",
)

__all__ = ["__version__", *_LAZY_NAMES, *_SUBPACKAGES]


# What type checkers and IDEs see: the names of _LAZY_NAMES and _SUBPACKAGES, imported eagerly
# by them only (tests/test_typing.py checks that the lists agree).
if TYPE_CHECKING:
    from nasx._errors import NasxError as NasxError
    from nasx.evaluator.nni_report import report_final_result as report_final_result
    from nasx.evaluator.nni_report import report_intermediate_result as report_intermediate_result
    from nasx.evaluator.tracing import trace as trace
    from nasx.space import Categorical as Categorical
    from nasx.space import CategoricalMultiple as CategoricalMultiple
    from nasx.space import Cell as Cell
    from nasx.space import InputChoice as InputChoice
    from nasx.space import LayerChoice as LayerChoice
    from nasx.space import ModelSpace as ModelSpace
    from nasx.space import MutableDict as MutableDict
    from nasx.space import MutableExpression as MutableExpression
    from nasx.space import MutableList as MutableList
    from nasx.space import Numerical as Numerical
    from nasx.space import Repeat as Repeat
    from nasx.space import choice as choice
    from nasx.space import ensure_frozen as ensure_frozen
    from nasx.space import frozen_context as frozen_context
    from nasx.space import label_scope as label_scope
    from nasx.space import loguniform as loguniform
    from nasx.space import model_context as model_context
    from nasx.space import normal as normal
    from nasx.space import qloguniform as qloguniform
    from nasx.space import qnormal as qnormal
    from nasx.space import quniform as quniform
    from nasx.space import search_space as search_space
    from nasx.space import uniform as uniform

    from . import datasets as datasets
    from . import evaluator as evaluator
    from . import experiment as experiment
    from . import hub as hub
    from . import profiler as profiler
    from . import space as space
    from . import strategy as strategy
    from . import trial as trial

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY_NAMES, globals(), submodules=_SUBPACKAGES)
