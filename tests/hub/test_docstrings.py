"""Run the docstring examples of every hub module (and the profiler), so they stay runnable."""
import doctest
import importlib
import inspect

import pytest

MODULES = ["nasx.hub", "nasx.hub.ops", "nasx.hub.nds", "nasx.hub.genotypes", "nasx.hub.searched_archs",
           "nasx.hub.nasbench201", "nasx.hub.mnasnet", "nasx.hub.spinenet", "nasx.hub.pretrained", "nasx.profiler"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("cls_name, first_param", [
    ("DARTS", "width"), ("NASNet", "width"), ("ENAS", "width"), ("AmoebaNet", "width"), ("PNAS", "width"),
    ("NDS", "op_candidates"), ("NasBench201", "stem_out_channels"), ("MnasNet", "num_classes"),
    ("SpineNet", "scaling"),
])
def test_space_constructors_show_real_signatures_and_docs(cls_name, first_param):
    cls = getattr(importlib.import_module("nasx.hub"), cls_name)
    assert list(inspect.signature(cls).parameters)[0] == first_param  # not (*args, **kwargs)
    assert "Example" in cls.__doc__ and len(cls.__doc__) > 200
