"""Spaces and evaluators shared by the experiment tests (importable, so workers can load them)."""

from __future__ import annotations

import os
import signal
import time

import torch.nn as nn

from nasx.space import LayerChoice, ModelSpace, choice


class SmallNet(ModelSpace):
    """2 (act) x 3 (width) = 6 archs; a 4 -> width -> 1 MLP."""

    def __init__(self, in_features: int = 4):
        super().__init__()
        width = choice("width", [2, 4, 8])
        self.fc1 = nn.Linear(in_features, width)
        self.act = LayerChoice([nn.ReLU(), nn.Tanh()], label="act")
        self.fc2 = nn.Linear(width, 1)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def reference_metric(arch: dict) -> float:
    """What :func:`width_metric` returns, computed from the arch alone."""
    return arch["width"] + 0.5 * arch["act"]


def width_metric(model) -> float:
    """Reads the built model: width from fc1, act from the module type (ReLU -> 0, Tanh -> 1)."""
    return model.fc1.out_features + 0.5 * isinstance(model.act, nn.Tanh)


class FailOnTanh:
    """An evaluator (evaluate(model, report)) that raises for Tanh models and reports intermediates."""

    direction = "maximize"

    def evaluate(self, model, report=None):
        if isinstance(model.act, nn.Tanh):
            raise RuntimeError("tanh is not supported by this evaluator")
        for epoch in range(3):
            report(float(epoch))
        return {
            "default": width_metric(model),
            "params": float(sum(p.numel() for p in model.parameters())),
        }


class Returns:
    """An evaluator returning a fixed (bad) value."""

    def __init__(self, value):
        self.value = value

    def evaluate(self, model, report=None):
        return self.value


def crash_on_width_4(model) -> float:
    """Kills its own process (a hard crash, as a segfault would) for width 4."""
    print(f"evaluating width {model.fc1.out_features}", flush=True)
    if model.fc1.out_features == 4:
        os.kill(os.getpid(), signal.SIGKILL)
    return width_metric(model)


def slow_metric(model) -> float:
    time.sleep(float(os.environ.get("NASX_TEST_SLEEP", "0.2")))
    return width_metric(model)


def hang_on_width_8(model) -> float:
    """Never returns for width 8 (a stuck trial)."""
    if model.fc1.out_features == 8:
        time.sleep(3600)
    return width_metric(model)


class SlowToUnpickle:
    """A quick evaluator whose unpickling in a worker takes ``seconds`` (a slow worker start-up)."""

    direction = "maximize"

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __setstate__(self, state):
        time.sleep(state["seconds"])
        self.__dict__.update(state)

    def evaluate(self, model, report=None):
        return width_metric(model)


class ProcessDeath(BaseException):
    """Stands in for the death of the experiment's process (escapes like a SIGKILL would)."""


def dies_on_width_4(model) -> float:
    """Takes the whole (sequential) experiment down for width 4, in-process and fast."""
    if model.fc1.out_features == 4:
        raise ProcessDeath("the process died")
    return width_metric(model)
