"""/metrics for a server voicing on a cluster: per-worker gauges and the ring's imbalance,
read from the head's versioned snapshots (a scrape never waits on the cluster)."""

from __future__ import annotations

from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

from engine.cluster.snapshots import ClusterSnapshot, SnapshotBoard


class HasBoard(Protocol):
    board: SnapshotBoard


class ClusterGauges:
    """Gauges that follow the cluster head's latest snapshot."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def per_worker(name: str, doc: str) -> Gauge:
            return Gauge(f"troupe_cluster_worker_{name}", doc, ["worker"], registry=registry)

        def overall(name: str, doc: str) -> Gauge:
            return Gauge(f"troupe_cluster_{name}", doc, registry=registry)

        self.up = per_worker("up", "1 while the worker is on the ring")
        self.load = per_worker("load_lines", "Lines sent to the worker, not yet back")
        self.roles = per_worker("roles", "Roles the worker voices")
        self.weight = per_worker("weight", "The worker's weight on the ring (its capacity, as rebalanced)")
        self.batches = per_worker("batches", "Batches the worker voiced")
        self.failures = per_worker("failures", "Batches lost or failed on the worker")
        self.imbalance = overall("imbalance", "Load imbalance over the ring (0 balanced .. 1)")
        self.resent = overall("resent_lines", "Lines re-sent after a worker was lost")
        self.duplicates = overall("duplicates_dropped", "Late copies of lines dropped")
        self.version = overall("snapshot_version", "Version of the cluster state shown")
        self.lost = Counter("troupe_cluster_workers_lost", "Workers lost (died, or silent past the "
                            "heartbeat TTL); each worker started is a new id", registry=registry)  # fmt: skip
        self._seen = 0
        self._lost = 0

    def update(self, head: HasBoard) -> ClusterSnapshot | None:
        """Show the latest snapshot if it is newer than the one shown (missed versions are
        skipped: each snapshot is whole)."""
        snap = head.board.newer_than(self._seen)
        if snap is None:
            return None
        self._seen = snap.version
        for w in snap.workers:
            self.up.labels(w.worker_id).set(1.0 if w.alive else 0.0)
            self.load.labels(w.worker_id).set(w.load_lines)
            self.roles.labels(w.worker_id).set(w.roles_held)
            self.weight.labels(w.worker_id).set(w.weight)
            self.batches.labels(w.worker_id).set(w.batches)
            self.failures.labels(w.worker_id).set(w.failures)
        self.imbalance.set(snap.imbalance)
        self.resent.set(snap.resent_lines)
        self.duplicates.set(snap.duplicates_dropped)
        self.version.set(snap.version)
        if snap.workers_lost > self._lost:
            self.lost.inc(snap.workers_lost - self._lost)
            self._lost = snap.workers_lost
        return snap
