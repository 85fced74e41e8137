"""Joining a Ray cluster: start a worker actor on every node, keep membership current, and
offer the cluster to the rest of Troupe as one `Synthesizer`.

`address` is what `ray start --head` printed (`HOST:6379`), or `auto`: the Ray cluster this
machine has joined if there is one, else a local one started here for this process.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
import threading
import time
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
    _raylet_errors_to_log()
    return True


def _raylet_errors_to_log() -> None:
    """Ray's driver prints the raylet's error messages itself (a worker's death: several
    lines of lease, worker and node ids); Troupe says what happened in its own words
    (`ClusterHead.lose`), so Ray's go to the log at debug level instead of the terminal."""
    try:
        import ray._private.worker as ray_worker
    except ImportError:  # another Ray layout: its messages stay as they are
        return
    original = ray_worker.print_to_stdstream
    if getattr(original, "troupe", False):
        return

    def route(data: dict[str, Any], ignore_prefix: bool) -> None:
        if data.get("pid") == "raylet":
            for line in data.get("lines", []):
                log.debug("ray: %s", line)
            return
        original(data, ignore_prefix)

    route.troupe = True  # type: ignore[attr-defined]
    ray_worker.print_to_stdstream = route


START_TIMEOUT_S = 120.0
"""How long a node has to start its worker (load its voices) before it is skipped."""
RETRY_SKIPPED_S = 60.0
"""A skipped node is tried again after this long (it may have come back)."""
_INCARNATIONS = itertools.count(1)
"""Each worker started in this process gets the next number: a replacement is a new worker
(its counters in /metrics start apart from the one it replaces)."""
MODEL_MEMORY_MB = {"espeak": 150, "natural": 900}
"""What a worker declares to Ray as its memory (espeak-ng alone; with Kokoro and Piper
loaded: the two sessions, a call's working memory and the take cache's index)."""


class RayCluster:
    """Worker actors on the nodes of a Ray cluster, under one `ClusterHead`."""

    def __init__(
        self,
        head: ClusterHead | None = None,
        processes: int | None = None,
        workers_per_node: int = 1,
        neural: bool = False,
        heartbeat_s: float | None = HEARTBEAT_S,
        simulated: dict[str, float] | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        """`processes`: espeak-ng processes per worker (its capacity; None: the node's CPUs
        shared by its workers); `neural`: workers voice Kokoro (and the voice library) and
        Piper too; `heartbeat_s` None: membership and rebalancing only when `refresh` is
        called (tests)."""
        self.head = head or ClusterHead()
        self.processes = processes
        self.workers_per_node = workers_per_node
        self.neural = neural
        self.simulated = simulated
        self.start_timeout_s = start_timeout_s
        self.skipped: dict[str, tuple[float, str]] = {}
        """Nodes that did not start a worker: node id -> (when, why); tried again later."""
        self._actor: Any = ray.remote(SynthWorker)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._starting: dict[Any, tuple[str, Any, str, float, str]] = {}
        """Workers launched and not yet answering: info ref -> (id, handle, node, since, what
        it asked Ray for)."""
        self.refresh(wait_s=start_timeout_s)
        if not self.head.workers:
            why = "; ".join(w for _, w in self.skipped.values())
            raise SynthesisError(
                "the Ray cluster has no node that can run a Troupe worker" + (f" ({why})" if why else "")
            )
        if heartbeat_s is not None:
            self._thread = threading.Thread(target=self._beat, args=(heartbeat_s,), name="troupe-cluster",
                                            daemon=True)  # fmt: skip
            self._thread.start()

    def refresh(self, wait_s: float = 0.0) -> list[str]:
        """Start workers on nodes that joined, and take in those that have started; the ids
        of the workers that joined. Waits up to `wait_s` (the first start: the start timeout;
        the heartbeat: not at all, a start goes on across beats). A node whose worker cannot
        be scheduled, fails to load its voices or has not answered within the start timeout
        is skipped with a warning, and tried again `RETRY_SKIPPED_S` later."""
        have = Counter(w.node for w in self.head.workers.values() if not w.dead)
        have.update(node for _, _, node, _, _ in self._starting.values())
        nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
        now = time.monotonic()
        for node in nodes:
            node_id = str(node["NodeID"])
            if not node.get("Alive") or now - self.skipped.get(node_id, (-math.inf, ""))[0] < RETRY_SKIPPED_S:
                continue
            if float(node.get("Resources", {}).get("CPU", 0.0)) <= 0:
                continue  # a node that offers Ray no CPU (`ray start --num-cpus 0`, a head kept for drivers)
            host = str(node.get("NodeManagerAddress", ""))
            for _ in range(have.get(node_id, 0), self.workers_per_node):
                worker_id = f"{host}/{node_id[:8]}/{next(_INCARNATIONS)}"
                handle, asked = self._launch(node_id, node.get("Resources", {}), worker_id)
                self._starting[handle.info.remote()] = (worker_id, handle, node_id, now, asked)
        limit = time.monotonic() + wait_s
        while self._starting and not self._stop.is_set():  # NB: in slices, so that close is not kept waiting
            pending = list(self._starting)
            slice_s = max(0.0, min(1.0, limit - time.monotonic()))
            ready, _ = ray.wait(pending, num_returns=len(pending), timeout=slice_s)
            if len(ready) == len(pending) or time.monotonic() >= limit:
                break
        return self._take_started()

    def _take_started(self) -> list[str]:
        if not self._starting:
            return []
        ready, _ = ray.wait(list(self._starting), num_returns=len(self._starting), timeout=0)
        started = []
        for ref in ready:
            worker_id, handle, node_id, _, _ = self._starting.pop(ref)
            try:
                info: dict[str, Any] = ray.get(ref)
            except Exception as exc:  # unschedulable (a dead node still listed), or its voices failed to load
                self._skip(node_id, handle, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                continue
            if self._stop.is_set():  # closing: a worker that answers now is not kept
                with contextlib.suppress(Exception):
                    ray.kill(handle)
                continue
            self.head.add_worker(worker_id, handle, float(info["capacity"]), node_id, int(info["pid"]),
                                 backends=dict(info["backends"]))  # fmt: skip
            log.info("cluster: worker %s joined (pid %s on %s)", worker_id, info["pid"], info["host"])
            self.skipped.pop(node_id, None)
            started.append(worker_id)
        now = time.monotonic()
        for ref, (_, handle, node_id, since, asked) in list(self._starting.items()):
            if now - since >= self.start_timeout_s:
                del self._starting[ref]
                why = f"no worker started in {self.start_timeout_s:.0f} s (it asks Ray for {asked}"
                self._skip(node_id, handle, why + ": held by other Ray work, or the node is gone?)")
        return started

    def _launch(self, node_id: str, resources: dict[str, float], worker_id: str) -> tuple[Any, str]:
        """A worker actor on `node_id`, declaring its share of the node's CPUs (its espeak-ng
        processes: its capacity), its model's memory and the node's GPU where there is one;
        with what it asked for, in words."""
        cpus = float(resources.get("CPU", 1.0)) / self.workers_per_node
        processes = self.processes or max(1, int(cpus))
        gpus = float(resources.get("GPU", 0.0)) / self.workers_per_node if self.neural else 0.0
        memory = MODEL_MEMORY_MB["natural" if self.neural else "espeak"] * 2**20
        options: dict[str, Any] = {
            "num_cpus": min(cpus, float(processes)),
            "memory": memory,
            "max_concurrency": 4,  # a heartbeat is answered while a batch voices
            "max_restarts": 0,
            "scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False),
        }
        if gpus > 0:
            options["num_gpus"] = gpus
        gpu = f", {gpus:g} GPU" if gpus else ""
        asked = f"{options['num_cpus']:g} CPU, {memory >> 20} MB{gpu}"
        return self._actor.options(**options).remote(worker_id, processes, self.neural, self.simulated), asked

    def _skip(self, node_id: str, handle: Any, why: str) -> None:
        self.skipped[node_id] = (time.monotonic(), why)
        log.warning("troupe cluster: node %s skipped: %s (tried again in %.0f s)", node_id[:8], why,
                    RETRY_SKIPPED_S)  # fmt: skip
        with contextlib.suppress(Exception):
            ray.kill(handle)

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
        handles = [*self.head.handles(), *(h for _, h, _, _, _ in self._starting.values())]
        for handle in handles:
            with contextlib.suppress(Exception):
                ray.kill(handle)


class ClusterSynthesizer:
    """One backend's voices on the cluster as a `Synthesizer` (what a render's router, a
    show's or the server's scheduler voices through); the views of one cluster share its head,
    and the one that `owns` it closes it."""

    def __init__(self, cluster: RayCluster, name: str = "espeak", started_ray: bool = False,
                 owns: bool = True) -> None:  # fmt: skip
        self.cluster = cluster
        self.head = cluster.head
        self.name = name
        self.started_ray = started_ray
        self.owns = owns
        rates = [w.backends.get(name) for w in self.head.workers.values() if w.alive and w.backends]
        self.sample_rate_hz = next((r for r in rates if r), SAMPLE_RATE_HZ)
        """The backend's own rate, as the workers voice it (the head's router resamples)."""
        self.max_batch = max(1, len(self.head.workers)) * 2
        self._voices: list[VoiceInfo] | None = None

    def voices(self) -> list[VoiceInfo]:
        """This backend's voices, as a worker that voices it lists them (none: no such worker
        now; asked again next time)."""
        if not self._voices:
            workers = list(self.head.workers.values())
            have = [w for w in workers if w.alive and (not w.backends or self.name in w.backends)]
            if not have:
                return []
            self._voices = [v for v in ray.get(have[0].handle.voices.remote()) if v.backend == self.name]
        return self._voices

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        return self.head.voice(batch)

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        yield from self.synthesize([request])

    def close(self) -> None:
        if not self.owns:
            return
        self.cluster.close()
        if self.started_ray:
            ray.shutdown()


def cluster_synthesizers(cluster: RayCluster, started_ray: bool = False) -> dict[str, ClusterSynthesizer]:
    """Backend name -> its voices on the cluster, for every backend some worker voices
    (espeak-ng, which owns the cluster, first)."""
    names = {"espeak"} | {b for w in cluster.head.workers.values() for b in w.backends}
    return {
        name: ClusterSynthesizer(cluster, name, started_ray, owns=name == "espeak")
        for name in sorted(names, key=lambda n: n != "espeak")
    }


def open_cluster(
    address: str,
    processes: int | None = None,
    workers_per_node: int = 1,
    neural: bool = True,
    num_cpus: int | None = None,
) -> dict[str, ClusterSynthesizer]:
    """Join (or start, for `auto`) a Ray cluster and start Troupe workers on its nodes (with
    the natural voices unless `neural` is false): each backend's voices there, by name."""
    started = connect(address, num_cpus)
    try:
        cluster = RayCluster(processes=processes, workers_per_node=workers_per_node, neural=neural)
    except BaseException:
        if started:
            ray.shutdown()
        raise
    return cluster_synthesizers(cluster, started_ray=started)
