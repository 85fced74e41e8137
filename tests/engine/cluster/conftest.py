"""One local Ray cluster for the whole test session: a head node and a second worker node
on this machine, one CPU each, started once and shut down at the end."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

HAVE_RAY = importlib.util.find_spec("ray") is not None
NO_RAY = "Ray is not installed (pip install -e '.[cluster]' installs it; .ci/run does)"


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    if not HAVE_RAY:
        pytest.skip(NO_RAY)
    import ray
    from ray.cluster_utils import Cluster

    from engine.cluster.connect import connect

    # NB: Ray binds this machine's own address (asked for 127.0.0.1, its client connects to
    # the node's address and never finds the head); the cluster is local all the same.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        connect(cluster.address)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
