"""A Ray cluster for the Ray tests: a head and two worker nodes, each a separate set of processes
(``ray.cluster_utils.Cluster``), started once per test session and only when a test asks for it."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import pytest

# Small nodes: the suite runs on 2 cores. The head takes no trials (num_cpus=0), so trials spread
# over the two worker nodes, told apart by a custom resource each.
WORKER_NODES = (
    {"num_cpus": 1, "resources": {"node_a": 1}},
    {"num_cpus": 1, "resources": {"node_b": 1}},
)
OBJECT_STORE = 80 * 1024 * 1024


@dataclass
class RayCluster:
    cluster: Any  # ray.cluster_utils.Cluster
    address: str
    specs: dict[str, dict]  # node id -> the add_node arguments of that worker node

    def node_by_id(self, node_id: str):
        return next(n for n in self.cluster.worker_nodes if n.node_id == node_id)

    def add(self, spec: dict) -> None:
        node = self.cluster.add_node(**spec, object_store_memory=OBJECT_STORE)
        self.specs[node.node_id] = spec

    def kill(self, node) -> None:
        """Kill a worker node as a lost machine would go (no graceful shutdown)."""
        self.cluster.remove_node(node, allow_graceful=False)

    def restore(self) -> None:
        """Add a fresh node for each worker node killed, so every test finds both."""
        alive = {n.node_id for n in self.cluster.worker_nodes}
        for node_id in [k for k in self.specs if k not in alive]:
            self.add(self.specs.pop(node_id))
        self.cluster.wait_for_nodes()


@pytest.fixture(scope="session")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'nasx[ray]')")
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        connect=False,
        head_node_args={
            "num_cpus": 0,
            "include_dashboard": False,
            "object_store_memory": OBJECT_STORE,
            # A killed node is declared dead after 2 missed health checks 0.5 s apart (Ray's
            # defaults wait up to 15 s), so the node-kill test runs in seconds.
            "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 2},
        },
    )
    try:
        handle = RayCluster(cluster, cluster.address, {})
        for spec in WORKER_NODES:
            handle.add(spec)
        cluster.wait_for_nodes()
        # The workers import the tests' modules (evaluators are pickled by reference).
        paths = os.pathsep.join(p for p in sys.path if p)
        ray.init(
            address=cluster.address,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": paths}},
        )
        yield handle
    finally:
        ray.shutdown()
        cluster.shutdown()
