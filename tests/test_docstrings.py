"""Every docstring example in every nasx module runs and prints what it claims.

One walk over the package, so a new module is covered without editing a list.
"""

import doctest
import importlib
import pkgutil

import pytest

import nasx

MODULES = ["nasx"] + sorted(m.name for m in pkgutil.walk_packages(nasx.__path__, prefix="nasx."))
# Modules whose examples are the documentation users copy from: they must have some.
MUST_HAVE_EXAMPLES = {
    "nasx.hub",
    "nasx.hub.ops",
    "nasx.hub.nds",
    "nasx.hub.genotypes",
    "nasx.hub.searched_archs",
    "nasx.hub.nasbench201",
    "nasx.hub.mnasnet",
    "nasx.hub.proxylessnas",
    "nasx.hub.mobilenetv3",
    "nasx.hub.mobile_blocks",
    "nasx.hub.spinenet",
    "nasx.hub.pretrained",
    "nasx.profiler",
}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
    if name in MUST_HAVE_EXAMPLES:
        assert result.attempted > 0, f"{name} has no docstring examples"
