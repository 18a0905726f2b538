"""Evaluators and a driver script for the Ray cluster tests (importable, so Ray workers load them)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from .helpers import width_metric


def node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


class NodeRecorder:
    """Writes ``<markers>/<width>-<act>`` holding the id of the node that ran the trial, sleeps
    ``seconds``; the arch ``hang`` (if given) writes its marker and then sleeps for an hour."""

    direction = "maximize"

    def __init__(self, markers: str | Path, seconds: float = 0.3, hang: dict | None = None):
        self.markers = str(markers)
        self.seconds = seconds
        self.hang = hang

    def evaluate(self, model, report=None, arch=None):
        Path(self.markers, f"{arch['width']}-{arch['act']}").write_text(node_id())
        time.sleep(3600 if arch == self.hang else self.seconds)
        return width_metric(model)


def assigned_resources(model) -> dict:
    """The metric, and 1.0 for each custom resource Ray assigned to the trial (its placement)."""
    import ray

    assigned = ray.get_runtime_context().get_assigned_resources()
    return {"default": width_metric(model), **{k: 1.0 for k in assigned if k.startswith("node_")}}


def slow_width_metric(model) -> float:
    time.sleep(1.0)
    return width_metric(model)


if __name__ == "__main__":
    # A driver the tests kill: python -m tests.experiment.ray_helpers ADDRESS WORKDIR
    import ray

    from nasx.experiment import NasExperiment
    from nasx.strategy import GridSearch

    from .helpers import SmallNet

    ray.init(
        address=sys.argv[1],
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}},
    )
    NasExperiment(
        SmallNet(),
        slow_width_metric,
        GridSearch(shuffle=False),
        workdir=sys.argv[2],
        max_concurrent_trials=2,
        execution="ray",
        progress=False,
    ).run()
