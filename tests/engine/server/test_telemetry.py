"""Anomaly flags and histogram quantiles on an injected clock (no server)."""

from __future__ import annotations

import math

import pytest

from engine.metrics import AnomalyDetector
from engine.server.probe import parse_interval, quantile


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_slow_request_over_baseline_and_floor_is_flagged() -> None:
    clock = Clock()
    det = AnomalyDetector(window_s=60, clock=clock)
    for k in range(50):
        clock.t += 0.5
        assert det.observe("synthesize", 100 + (k % 10), str(k)) is None
    a = det.observe("synthesize", 250, "slow-1")  # > 1.8 x ~109 ms and > 200 ms
    assert a is not None and a.trace_id == "slow-1" and a.baseline_p99_ms < 110
    assert det.observe("synthesize", 190, "under-floor") is None  # 1.8x baseline but under 200 ms
    clock.t += 61  # the baseline window slides: too few samples left to judge
    assert det.observe("synthesize", 5000, "no-baseline") is None


def test_histogram_quantile_interpolates_like_promql() -> None:
    buckets = {0.1: 50.0, 0.2: 90.0, 0.5: 100.0, math.inf: 100.0}
    assert abs(quantile(buckets, 0.5) - 0.1) < 1e-9
    assert abs(quantile(buckets, 0.7) - 0.15) < 1e-9
    assert math.isnan(quantile({}, 0.5))


def test_interval_parsing() -> None:
    assert parse_interval("100ms") == 0.1 and parse_interval("2s") == 2.0 and parse_interval("0.5") == 0.5
    for bad in ("fast", "0ms", "-1s"):
        try:
            parse_interval(bad)
        except Exception as exc:
            assert "interval" in str(exc)
        else:
            raise AssertionError(bad)


def test_request_span_has_a_child_per_stage() -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from engine.core.types import Voice
    from engine.scheduler import Request, State
    from engine.server.tracing import Tracer

    exporter = InMemorySpanExporter()
    tracer = Tracer(SimpleSpanProcessor(exporter))
    r = Request("HERO", "Hold the line.", Voice(), deadline_s=11.0)
    r.t_enqueued, r.t_dispatched, r.t_synth_start, r.t_first_chunk, r.t_done = 10.0, 10.1, 10.1, 10.3, 10.4
    r.state, r.backend = State.DONE, "espeak"
    tracer.record(r)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"request", "queued", "synthesize", "first_chunk"}
    root = spans["request"]
    assert root.attributes["troupe.role"] == "HERO" and root.attributes["troupe.state"] == "ready"
    for name in ("queued", "synthesize", "first_chunk"):
        assert spans[name].parent is not None and spans[name].parent.span_id == root.context.span_id
    assert abs((root.end_time - root.start_time) / 1e9 - 0.4) < 1e-6
    assert abs((spans["queued"].end_time - spans["queued"].start_time) / 1e9 - 0.1) < 1e-6
    tracer.close()


@pytest.mark.slow
def test_live_probe_backs_off_and_stays_cheap_while_the_server_is_down(capsys) -> None:  # type: ignore[no-untyped-def]
    import socket
    import time

    from engine.server.probe import BACKOFF_MAX_S, backoff, live

    waits = [0.1]
    for _ in range(8):
        waits.append(backoff(waits[-1]))
    assert waits[1] > waits[0] and waits[-1] == BACKOFF_MAX_S
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    cpu0 = time.process_time()
    live(url, 0.1, None, duration_s=3.0)
    cpu_s = time.process_time() - cpu0
    out = capsys.readouterr().out
    assert out.count("cannot reach") == 1  # one message per outage, not ten a second
    assert cpu_s < 0.3 * 3.0  # generous: backing off, it mostly sleeps


def test_metrics_and_probe_show_the_heatmaps_urgency_and_work() -> None:
    """The window's heatmap, `/metrics` and the probe read one quantity: the scheduler's
    role urgency (and queued work), passed through the exposition format unchanged."""
    from types import SimpleNamespace

    from prometheus_client import generate_latest

    from engine.core.types import Voice
    from engine.scheduler import Backend, Request, Scheduler, SchedulerConfig
    from engine.server.probe import parse
    from engine.server.telemetry import Telemetry
    from engine.synthesis.espeak import EspeakSynthesizer

    clock = Clock()
    sched = Scheduler({"espeak": Backend(EspeakSynthesizer())}, SchedulerConfig(), clock)
    try:
        for k, (role, due) in enumerate((("HERO", 2.0), ("HERO", 20.0), ("FOIL", 0.5))):
            sched.submit(Request(role, f"Line {k} to voice.", Voice(), deadline_s=clock.t + due))
        telemetry = Telemetry(SimpleNamespace(scheduler=sched))  # type: ignore[arg-type]
        telemetry.tick()
        probed = parse(generate_latest(telemetry.registry).decode())
        urgency, work = sched.role_priorities(), sched.role_work()
        assert probed.priorities == urgency and probed.work == work
        assert 0.0 < urgency["HERO"] < urgency["FOIL"] <= 1.0 and work["HERO"] > 0.0
    finally:
        sched.close()


def test_anomaly_baseline_is_not_recomputed_for_every_sample(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from engine import metrics

    calls = []
    real = metrics.Rolling.percentile
    monkeypatch.setattr(metrics.Rolling, "percentile", lambda self, q: calls.append(q) or real(self, q))
    clock = Clock()
    det = AnomalyDetector(window_s=60, clock=clock)
    for k in range(2000):  # a busy server: 2,000 answers within a tenth of a second
        clock.t += 0.00005
        det.observe("synthesize", 100 + (k % 10))
    assert 0 < len(calls) < 200  # refreshed as the sample count grows by 5%, not per sample
    a = det.observe("synthesize", 250, "slow")
    assert a is not None and a.baseline_p99_ms < 110  # still flags against a current baseline
