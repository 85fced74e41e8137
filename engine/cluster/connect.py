"""Joining a Ray cluster: start a worker actor on every node, keep membership current, and
offer the cluster to the rest of Troupe as one `Synthesizer`.

`address` is what `ray start --head` printed (`HOST:6379`), or `auto`: the Ray cluster this
machine has joined if there is one, else a local one started here for this process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from engine.cluster.head import HEARTBEAT_TTL_S, ClusterHead
from engine.cluster.worker import SynthWorker
from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo

log = logging.getLogger("troupe.cluster")
NAMESPACE = "troupe"
HEARTBEAT_S = 2.0
"""How often the head pings workers, looks for new nodes and takes a rebalancing step."""
_SOURCE = str(Path(__file__).resolve().parents[2])


def connect(address: str, num_cpus: int | None = None) -> bool:
    """Join the Ray cluster at `address` (or `auto`); True if this call started Ray here."""
    if ray.is_initialized():
        return False
    # Workers import Troupe from the same folder as the head where it exists there too
    # (a source checkout); elsewhere from their own installed copy.
    env = {
        "env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (_SOURCE, os.environ.get("PYTHONPATH")) if p)}
    }
    try:
        ray.init(
            address=None if address == "auto" else address,
            namespace=NAMESPACE,
            num_cpus=num_cpus if address == "auto" else None,
            runtime_env=env,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise SynthesisError(f"cannot join the Ray cluster at {address}: {exc}") from exc
    return True


class RayCluster:
    """Worker actors on the nodes of a Ray cluster, under one `ClusterHead`."""

    def __init__(
        self,
        head: ClusterHead | None = None,
        processes: int = 1,
        workers_per_node: int = 1,
        neural: bool = False,
        heartbeat_s: float | None = HEARTBEAT_S,
        simulated: dict[str, float] | None = None,
    ) -> None:
        """`processes`: espeak-ng processes per worker (its capacity); `heartbeat_s` None:
        membership and rebalancing only when `refresh` is called (tests)."""
        self.head = head or ClusterHead()
        self.processes = processes
        self.workers_per_node = workers_per_node
        self.neural = neural
        self.simulated = simulated
        self._actor: Any = ray.remote(SynthWorker)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.refresh()
        if not self.head.workers:
            raise SynthesisError("the Ray cluster has no node that can run a Troupe worker")
        if heartbeat_s is not None:
            self._thread = threading.Thread(target=self._beat, args=(heartbeat_s,), name="troupe-cluster",
                                            daemon=True)  # fmt: skip
            self._thread.start()

    def refresh(self) -> list[str]:
        """Start workers on nodes that joined; the ids of the workers started."""
        started = []
        have = Counter(w.node for w in self.head.workers.values() if not w.dead)
        nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
        for node in nodes:
            if not node.get("Alive"):
                continue
            node_id = str(node["NodeID"])
            for k in range(have.get(node_id, 0), self.workers_per_node):
                started.append(self._start(node_id, str(node.get("NodeManagerAddress", "")), k))
        return started

    def _start(self, node_id: str, host: str, k: int) -> str:
        worker_id = f"{host}/{node_id[:8]}/{k}"
        handle: Any = self._actor.options(
            num_cpus=0,  # NB: capacity is ours to weigh; a worker must start on a node with 1 CPU
            max_concurrency=4,  # a heartbeat is answered while a batch voices
            max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(worker_id, self.processes, self.neural, self.simulated)
        info: dict[str, Any] = ray.get(handle.info.remote())
        self.head.add_worker(worker_id, handle, float(info["capacity"]), node_id, int(info["pid"]))
        log.info("cluster: worker %s joined (pid %s on %s)", worker_id, info["pid"], info["host"])
        return worker_id

    def _beat(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                self.refresh()
                self.head.heartbeat()
                self.head.rebalance()
            except Exception:  # the next beat tries again; voicing goes on meanwhile
                log.exception("cluster heartbeat failed")

    def close(self) -> None:
        """Stop the heartbeat and end the worker actors (Ray itself is the caller's)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(HEARTBEAT_TTL_S)
        for w in self.head.workers.values():
            with contextlib.suppress(Exception):
                ray.kill(w.handle)


class ClusterSynthesizer:
    """The cluster as one `Synthesizer`: what a render, a show or the server voices through."""

    sample_rate_hz = SAMPLE_RATE_HZ

    def __init__(self, cluster: RayCluster, name: str = "espeak", started_ray: bool = False) -> None:
        self.cluster = cluster
        self.head = cluster.head
        self.name = name
        self.started_ray = started_ray
        self.max_batch = max(1, len(self.head.workers)) * 2
        self._voices: list[VoiceInfo] | None = None

    def voices(self) -> list[VoiceInfo]:
        if self._voices is None:
            w = next(w for w in self.head.workers.values() if w.alive)
            self._voices = [v for v in ray.get(w.handle.voices.remote()) if v.backend == self.name]
        return self._voices

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        return self.head.voice(batch)

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        yield from self.synthesize([request])

    def close(self) -> None:
        self.cluster.close()
        if self.started_ray:
            ray.shutdown()


def open_cluster(address: str, processes: int = 1, workers_per_node: int = 1, neural: bool = False,
                 num_cpus: int | None = None) -> ClusterSynthesizer:  # fmt: skip
    """Join (or start, for `auto`) a Ray cluster and start Troupe workers on its nodes."""
    started = connect(address, num_cpus)
    try:
        cluster = RayCluster(processes=processes, workers_per_node=workers_per_node, neural=neural)
    except BaseException:
        if started:
            ray.shutdown()
        raise
    return ClusterSynthesizer(cluster, started_ray=started)
