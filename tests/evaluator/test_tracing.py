"""trace and the traced DataLoader record how objects were made, and stay ordinary objects."""

from __future__ import annotations

import pickle

import pytest
import torch
from torch.utils.data import TensorDataset

import nasx
from nasx.evaluator.tracing import DataLoader, is_traced, trace


class Data:
    def __init__(self, root, train=True):
        self.root, self.train = root, train


def make(a, b=2):
    return {"sum": a + b}


def test_traced_class_builds_the_class_itself_and_records_the_call():
    d = trace(Data)("data", train=False)
    assert type(d) is Data and d.root == "data" and d.train is False
    assert (d.trace_symbol, d.trace_args, d.trace_kwargs) == (Data, ["data"], {"train": False})
    assert is_traced(d) and not is_traced(Data("x"))
    assert trace(Data) is trace(Data) and trace(trace(Data)) is trace(Data)
    back = pickle.loads(pickle.dumps(d))  # a plain Data: pickles by reference
    assert back.trace_kwargs == {"train": False}
    assert pickle.loads(pickle.dumps(trace(Data))) is trace(Data)


def test_traced_function_returns_its_value_and_records_when_it_can():
    out = trace(make)(1, b=3)
    assert out == {"sum": 4}  # a dict cannot carry attributes: returned as is
    assert trace(lambda: 5)() == 5
    with pytest.raises(TypeError, match="class or a function"):
        trace(3)


def test_top_level_trace_is_the_evaluator_one():
    assert nasx.trace is trace


def test_traced_dataloader_is_a_torch_dataloader_with_its_arguments():
    data = TensorDataset(torch.arange(10.0))
    loader = DataLoader(data, batch_size=4, shuffle=False)
    plain = torch.utils.data.DataLoader(data, batch_size=4, shuffle=False)
    assert isinstance(loader, torch.utils.data.DataLoader)
    assert [b[0].tolist() for b in loader] == [b[0].tolist() for b in plain]
    assert loader.trace_args == [data] and loader.trace_kwargs == {
        "batch_size": 4,
        "shuffle": False,
    }
    assert pickle.loads(pickle.dumps(loader)).trace_kwargs["batch_size"] == 4
