"""Shared fixtures for strategy tests: a small space mixing every kind of choice."""

from __future__ import annotations

import pytest
import torch.nn as nn

from nasx.space import InputChoice, LayerChoice, ModelSpace, choice, search_space


class TinySpace(ModelSpace):
    """3 (act) x 2 (width) x 2 (input) = 12 archs; labels of three choice kinds."""

    def __init__(self):
        super().__init__()
        self.act = LayerChoice([nn.ReLU(), nn.Tanh(), nn.Identity()], label="act")
        self.fc = nn.Linear(4, choice("width", [8, 16]))
        self.skip = InputChoice(2, n_chosen=1, label="skip")


@pytest.fixture
def tiny_space():
    return search_space(TinySpace())


def fake_metric(arch: dict) -> float:
    """A deterministic metric with a unique best arch (act=2, width=16, skip=[1])."""
    return arch["act"] + arch["width"] / 16 + 0.5 * arch["skip"][0]
