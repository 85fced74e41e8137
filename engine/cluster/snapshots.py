"""Versioned snapshots of the head's cluster state, for watchers (probe, window, /metrics).

The head is the one writer; each publish makes a new immutable snapshot with the next
version. A watcher keeps the last version it saw and asks for anything newer: if it missed
versions it simply gets the latest (the state is whole in every snapshot, so there is
nothing to merge).
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WorkerView:
    """One worker as the head last saw it."""

    worker_id: str
    alive: bool
    capacity: float
    weight: float
    """Its weight on the ring now (the rebalancer moves it away from the capacity)."""
    load_lines: int
    """Lines sent to it and not yet back."""
    roles_held: int
    batches: int
    lines: int
    failures: int
    """Batches lost with it (death) or failed on it."""
    node: str = ""
    pid: int = 0


@dataclass(frozen=True)
class ClusterSnapshot:
    """The whole cluster state at one version."""

    version: int
    t_s: float
    workers: tuple[WorkerView, ...] = ()
    imbalance: float = 0.0
    roles: dict[str, str] = field(default_factory=dict)
    """Role -> the worker voicing it now."""
    moving: tuple[str, ...] = ()
    """Roles double-routed while their new worker loads the voice."""
    lines_done: int = 0
    resent_lines: int = 0
    duplicates_dropped: int = 0
    workers_lost: int = 0


class SnapshotBoard:
    """The latest snapshot, replaced whole under a lock; watchers poll or wait for newer."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._latest = ClusterSnapshot(0, 0.0)

    def publish(self, make: ClusterSnapshot) -> ClusterSnapshot:
        """Store `make` with the next version (whatever version it carried)."""
        with self._cond:
            snap = dataclasses.replace(make, version=self._latest.version + 1)
            self._latest = snap
            self._cond.notify_all()
        return snap

    def latest(self) -> ClusterSnapshot:
        return self._latest  # NB: one reference read; snapshots are immutable

    def newer_than(self, version: int, timeout_s: float = 0.0) -> ClusterSnapshot | None:
        """The latest snapshot if its version is above `version` (waiting up to `timeout_s`)."""
        with self._cond:
            self._cond.wait_for(lambda: self._latest.version > version, timeout_s)
            return self._latest if self._latest.version > version else None
