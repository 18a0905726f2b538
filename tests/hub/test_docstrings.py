"""Run the docstring examples of every hub module (and the profiler), so they stay runnable."""
import doctest
import importlib

import pytest

MODULES = ["nasx.hub", "nasx.hub.ops", "nasx.hub.nds", "nasx.hub.genotypes", "nasx.hub.searched_archs",
           "nasx.hub.nasbench201", "nasx.hub.mnasnet", "nasx.hub.spinenet", "nasx.hub.pretrained", "nasx.profiler"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
