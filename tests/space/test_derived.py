"""derived(): module arguments computed from choices, frozen under model_context."""

import torch.nn as nn

from nasx.space import (
    Categorical,
    ModelSpace,
    MutableConv2d,
    derived,
    ensure_frozen,
    model_context,
    search_space,
)


def _times(c, e):
    return c * e


class Net(ModelSpace):
    def __init__(self):
        super().__init__()
        c = Categorical([4, 8], label="c")
        e = Categorical([1, 3], label="e")
        k = Categorical([3, 5], label="k")
        mid = derived(_times, c, e)
        self.expand = MutableConv2d(3, mid, k, padding=derived(lambda k: k // 2, k))
        self.project = nn.Conv2d(ensure_frozen(mid), 2, 1)


def test_inner_choices_are_the_layers_choices_and_the_spaces_labels():
    net = Net()
    assert sorted(search_space(net)) == ["c", "e", "k"]
    assert net.expand.out_channels == 4 and net.expand.padding == (1, 1)  # the defaults


def test_fixed_form_gets_plain_values():
    with model_context({"c": 8, "e": 3, "k": 5}):
        net = Net()
    assert type(net.expand) is nn.Conv2d
    assert net.expand.out_channels == 24 and net.expand.padding == (2, 2)
    assert net.project.in_channels == 24


def test_freeze_and_simplify_nest():
    c = Categorical([4, 8], label="c")
    twice = derived(_times, c, 2)
    nested = derived(lambda a, b: a + b, twice, c)
    assert nested.freeze({"c": 8}) == 24 and list(nested.simplify()) == ["c"]
    assert ensure_frozen((twice, 1), strict=False) == (8, 1)
