"""The construction state: one record per thread / task, restored after every block."""

from __future__ import annotations

import threading

import torch.nn as nn

from nasx.space import LayerChoice, ModelSpace, choice, model_context, search_space
from nasx.space.base import space_record
from nasx.space.state import BuildState, building, current


class Net(ModelSpace):
    def __init__(self, width_labels=("w",)):
        super().__init__()
        self.fc = nn.Linear(2, choice(width_labels[0], [4, 8]))
        self.act = LayerChoice([nn.ReLU(), nn.Tanh()])  # auto label: 1


def test_two_threads_building_different_archs_do_not_see_each_other():
    barrier = threading.Barrier(2)
    results = {}

    def build(name, arch):
        with model_context(arch):
            barrier.wait()  # both threads are inside their own model_context now
            results[name] = Net()
            results[name + "_arch"] = dict(current().arch)

    threads = [
        threading.Thread(target=build, args=("a", {"w": 4, "1": 0})),
        threading.Thread(target=build, args=("b", {"w": 8, "1": 1})),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["a"].fc.out_features == 4 and isinstance(results["a"].act, nn.ReLU)
    assert results["b"].fc.out_features == 8 and isinstance(results["b"].act, nn.Tanh)
    assert results["a_arch"] == {"w": 4, "1": 0}
    assert current() == BuildState(counters=current().counters)  # the root, untouched


def test_every_top_level_construction_numbers_labels_afresh_and_records_its_args():
    assert list(search_space(Net())) == list(search_space(Net())) == ["w", "1"]
    space = Net(width_labels=("width",))
    record = space_record(space)
    assert record.args == () and record.kwargs == {"width_labels": ("width",), "label_prefix": None}
    assert [c.label for c in space_record(space).value_choices] == ["width"]
    assert current().seen_labels is None and current().value_choices is None


def test_building_restores_the_previous_state_even_on_error():
    before = current()
    try:
        with building(arch={"x": 1}):
            raise RuntimeError
    except RuntimeError:
        pass
    assert current() is before
