"""Hub space classes show their real constructor signatures and documented examples.

(The examples themselves run in tests/test_docstrings.py.)
"""

import importlib
import inspect

import pytest


@pytest.mark.parametrize(
    "cls_name, first_param",
    [
        ("DARTS", "width"),
        ("NASNet", "width"),
        ("ENAS", "width"),
        ("AmoebaNet", "width"),
        ("PNAS", "width"),
        ("NDS", "op_candidates"),
        ("NasBench201", "stem_out_channels"),
        ("MnasNet", "num_classes"),
        ("SpineNet", "scaling"),
    ],
)
def test_space_constructors_show_real_signatures_and_docs(cls_name, first_param):
    cls = getattr(importlib.import_module("nasx.hub"), cls_name)
    assert list(inspect.signature(cls).parameters)[0] == first_param  # not (*args, **kwargs)
    assert "Example" in cls.__doc__ and len(cls.__doc__) > 200
