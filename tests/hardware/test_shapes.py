"""ShapeTrace: MACs equal nasx.profiler.count_macs, memo reuse, modules it must not memoise."""

from __future__ import annotations

import torch
import torch.nn as nn

from nasx.hardware.cost import build_on
from nasx.hardware.shapes import ShapeTrace, block_key, structure_key
from nasx.hub.mnasnet import MnasLayer, MnasNet
from nasx.profiler import count_macs
from nasx.space import search_space


def test_macs_equal_the_profiler_on_mnasnet_archs_with_one_shared_memo():
    space = MnasNet(num_classes=10)
    ss = search_space(space)
    trace = ShapeTrace()
    for seed in range(4):
        arch = ss.sample(seed=seed)
        expected = count_macs(build_on(space, arch, "cpu"), (3, 64, 64))
        assert trace.macs(build_on(space, arch, "meta"), (3, 64, 64)) == expected
        assert trace.macs(build_on(space, arch, "meta"), (3, 64, 64)) == expected  # from memo


def test_the_memo_answers_without_running_the_block():
    calls = []

    class Counted(nn.Linear):
        def forward(self, x):
            calls.append(1)
            return super().forward(x)

    trace = ShapeTrace()
    net = nn.Sequential(Counted(4, 4), nn.ReLU(), Counted(4, 4))
    assert trace.macs(net, (4,)) == 32 and len(calls) == 1  # the second Counted is the first's twin
    assert trace.macs(nn.Sequential(Counted(4, 4), nn.Linear(4, 2)), (4,)) == 24
    assert len(calls) == 1


def test_multi_input_modules_run_every_time_and_count():
    class Add(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, a, b):
            return self.fc(a) + b

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.add = Add()

        def forward(self, x):
            return self.add(x, x)

    trace = ShapeTrace()
    assert trace.macs(Net(), (3,)) == 9
    assert trace.macs(Net(), (3,)) == 9  # the outer Net is memoised, its MACs with it


def test_keys_see_structure_and_plain_attributes():
    a = MnasLayer(16, 16, 1, "mbconv", 6, 3, 0.0, "identity")
    b = MnasLayer(16, 16, 1, "mbconv", 6, 3, 0.0, "none")  # same modules, no residual
    c = MnasLayer(16, 16, 1, "mbconv", 6, 3, 0.0, "identity")
    assert structure_key(a) != structure_key(b)
    assert structure_key(a) == structure_key(c)
    assert block_key(a, (1, 16, 8, 8)) != block_key(a, (1, 16, 4, 4))
    assert torch.get_num_threads() >= 1
