"""Prometheus metrics of the speech server, and anomaly flags with trace ids in the log."""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from engine.metrics import AnomalyDetector, Rolling
from engine.scheduler import Request, RequestClass, Scheduler, State
from engine.scheduler.backend import Batch
from engine.server.cluster_metrics import ClusterGauges
from engine.server.tracing import make_tracer
from engine.synthesis.gpu import gpu_memory

log = logging.getLogger("troupe.server")
GPU_EVERY_S = 1.0
"""The allocator snapshot behind the fragmentation figure is too costly for every tick."""
LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.5,
                     5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0)  # fmt: skip
"""Up to the worst wait an unbounded (FIFO) queue produced under overload in the benchmarks;
with admission control a request waits at most its budget plus the give-up tolerance."""
WINDOWS_S = (10.0, 60.0)
"""Rolling windows of the latency quantiles (besides the lifetime histogram)."""
QUANTILES = (0.5, 0.95, 0.99)


class Served(Protocol):
    """What the metrics read of the speech service."""

    scheduler: Scheduler
    anomalies: AnomalyDetector
    cluster: Any
    """The Ray cluster's handle (its `head`), or None on one machine."""


class Telemetry:
    """Owns one registry; the engine thread updates it, `/metrics` reads it."""

    def __init__(self, service: Served) -> None:
        self.service = service
        self.registry = CollectorRegistry()
        r = self.registry
        self.latency = Histogram("troupe_request_latency_seconds", "Arrival to audio done",
                                 ["role", "request_class"], buckets=LATENCY_BUCKETS_S,
                                 registry=r)  # fmt: skip
        self.window = Gauge("troupe_request_latency_window_seconds",
                            "Latency quantiles of the requests done in the last window",
                            ["window", "quantile"], registry=r)  # fmt: skip
        self._recent = Rolling(max(WINDOWS_S), time.monotonic)
        self.queue_wait = Histogram("troupe_queue_wait_seconds", "Arrival to dispatch", ["role"],
                                    buckets=LATENCY_BUCKETS_S, registry=r)  # fmt: skip
        self.requests = Counter(
            "troupe_requests", "Requests that ended", ["role", "request_class", "state"], registry=r
        )
        self.engine_errors = Counter(
            "troupe_engine_errors", "Exceptions the engine loop survived", registry=r
        )
        self.refused = Counter("troupe_requests_refused", "Requests refused by admission control", registry=r)
        self.cancelled = Counter("troupe_requests_cancelled", "Requests withdrawn (client left)", registry=r)
        self._seen = {"refused": 0, "cancelled": 0}
        self.queue_depth = Gauge("troupe_queue_depth", "Requests waiting in the scheduler", registry=r)
        self.batch_size = Histogram("troupe_batch_size", "Requests per dispatched batch", ["backend"],
                                    buckets=(1, 2, 4, 8, 16, 32, 64), registry=r)  # fmt: skip
        self.rtf = Gauge("troupe_synthesis_real_time_ratio", "Seconds of compute per second of audio",
                         ["backend"], registry=r)  # fmt: skip
        self.pace = Gauge("troupe_backend_drain_pace_ratio",
                          "Wall time the backlogged queue takes to drain per second of the cost its "
                          "batches measure (1: no overhead beyond synthesis)",
                          ["backend"], registry=r)  # fmt: skip
        self.priority = Gauge("troupe_role_priority",
                              "Each role's urgency 0..1 from the scheduler's slack to its deadlines "
                              "(1: due now or late; see engine.scheduler.urgency)",
                              ["role"], registry=r)  # fmt: skip
        self.role_work = Gauge("troupe_role_queued_work_seconds", "Each role's queued synthesis time",
                               ["role"], registry=r)  # fmt: skip
        self.misses = Counter("troupe_deadline_misses", "Requests done after their deadline", registry=r)
        self.fallbacks = Counter(
            "troupe_fallbacks", "Lines voiced by the fallback backend", ["reason"], registry=r
        )
        self.anomalies = Counter("troupe_anomalies", "Requests slower than 1.8x the stage's p99", ["stage"],
                                 registry=r)  # fmt: skip
        self._fallback_seen = {"failure": 0, "deadline": 0}
        self.gpu_bytes = Gauge(
            "troupe_gpu_memory_bytes", "GPU memory where one is used", ["kind"], registry=r
        )
        self.gpu_fragmentation = Gauge("troupe_gpu_fragmentation_ratio",
                                       "1 - largest free block / free memory in segments",
                                       registry=r)  # fmt: skip
        self.gpu_utilisation = Gauge("troupe_gpu_utilisation_ratio", "GPU busy time", registry=r)
        self._gpu_at = -GPU_EVERY_S
        self.tracer = make_tracer()
        self.cluster = ClusterGauges(r) if getattr(service, "cluster", None) is not None else None

    def observe_request(self, req: Request) -> None:
        """A request ended (engine thread)."""
        if self.tracer is not None:
            self.tracer.record(req)
        klass = req.klass.name.lower()
        if req.state is State.DONE:
            self._recent.add(req.t_done - req.t_enqueued)
        self.requests.labels(req.role, klass, req.state.value).inc()
        if req.state is not State.DONE:
            return
        total_s = req.t_done - req.t_enqueued
        wait_s = req.t_dispatched - req.t_enqueued
        self.latency.labels(req.role, klass).observe(total_s)
        self.queue_wait.labels(req.role).observe(wait_s)
        if req.t_done > req.deadline_s:
            self.misses.inc()
        synth_s = req.t_done - req.t_dispatched
        for stage, ms in (("queue_wait", wait_s * 1000), ("synthesize", synth_s * 1000),
                          ("total", total_s * 1000)):  # fmt: skip
            a = self.service.anomalies.observe(stage, ms, str(req.id))
            if a is not None:
                self.anomalies.labels(stage).inc()
                log.warning("anomaly: trace %s stage %s took %.0f ms (baseline p99 %.0f ms, role %s)",
                            req.id, stage, ms, a.baseline_p99_ms, req.role)  # fmt: skip

    def forget_roles(self, roles: Sequence[str]) -> None:
        """Drop the series of roles that no longer exist (bounded /metrics)."""
        classes = [k.name.lower() for k in RequestClass]
        for role in roles:
            series = ((self.priority, [()]), (self.role_work, [()]), (self.queue_wait, [()]),
                      (self.latency, [(k,) for k in classes]),
                      (self.requests, [(k, st.value) for k in classes for st in State]))  # fmt: skip
            for metric, labels in series:
                for rest in labels:
                    with contextlib.suppress(KeyError):
                        metric.remove(role, *rest)

    def observe_batch(self, batch: Batch) -> None:
        self.batch_size.labels(batch.backend).observe(len(batch.requests))

    def tick(self) -> None:
        """Gauges that follow the scheduler (every engine tick)."""
        sched = self.service.scheduler
        self.queue_depth.set(sched.pending_count)
        for name, backend in sched.backends.items():
            self.rtf.labels(name).set(backend.measured_rtf)
            self.pace.labels(name).set(backend.pace)
        for role, p in sched.role_priorities().items():
            self.priority.labels(role).set(p)
        for role, w in sched.role_work().items():
            self.role_work.labels(role).set(w)
        stats = sched.stats
        for reason, count in (
            ("failure", stats.fallback_on_failure),
            ("deadline", stats.fallback_on_deadline),
        ):
            if count > self._fallback_seen[reason]:
                self.fallbacks.labels(reason).inc(count - self._fallback_seen[reason])
                self._fallback_seen[reason] = count
        for name, counter, count in (("refused", self.refused, stats.refused),
                                     ("cancelled", self.cancelled, stats.cancelled)):  # fmt: skip
            if count > self._seen[name]:
                counter.inc(count - self._seen[name])
                self._seen[name] = count
        if self.cluster is not None:
            self.cluster.update(self.service.cluster.head)
        now = time.monotonic()
        if now - self._gpu_at >= GPU_EVERY_S:
            self._gpu_at = now
            self._gpu_figures()

    def update_windows(self) -> None:
        """Latency quantiles over each rolling window (what the probe shows as 'now'); run
        at each scrape. NB: `timed` copies the deque in one step, so the engine thread may
        append meanwhile."""
        now = time.monotonic()
        samples = self._recent.timed()
        for window_s in WINDOWS_S:
            values = [v for t, v in samples if t >= now - window_s]
            qs = np.quantile(values, QUANTILES) if values else [math.nan] * len(QUANTILES)
            for q, v in zip(QUANTILES, qs, strict=True):
                self.window.labels(f"{window_s:g}s", f"{q:g}").set(float(v))

    def _gpu_figures(self) -> None:
        mem = gpu_memory()
        if mem is None:
            return
        for kind, value in (("allocated", mem.allocated_bytes), ("reserved", mem.reserved_bytes),
                            ("total", mem.total_bytes), ("free", mem.free_bytes),
                            ("largest_free_block", mem.largest_free_block_bytes)):  # fmt: skip
            self.gpu_bytes.labels(kind).set(value)
        self.gpu_fragmentation.set(mem.fragmentation)
        if mem.utilisation_pct is not None:
            self.gpu_utilisation.set(mem.utilisation_pct / 100)
