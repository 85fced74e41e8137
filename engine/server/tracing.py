"""Optional OpenTelemetry spans, one per request with a child per stage (queued, dispatched,
synthesized, first chunk), built from the request's own timestamps. Active only when the
opentelemetry SDK and OTLP exporter are installed and OTEL_EXPORTER_OTLP_ENDPOINT is set
(or a test passes its own span processor)."""

from __future__ import annotations

import importlib.util
import os
import time
from typing import Any

from engine.scheduler import Request


class Tracer:
    def __init__(self, processor: Any = None) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        self.provider = TracerProvider(resource=Resource.create({"service.name": "troupe"}))
        if processor is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            processor = BatchSpanProcessor(OTLPSpanExporter())
        self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("troupe.scheduler")
        # monotonic request stamps -> wall-clock nanoseconds, fixed once
        self._offset_ns = time.time_ns() - time.monotonic_ns()

    def _ns(self, t_s: float) -> int:
        return int(t_s * 1e9) + self._offset_ns

    def record(self, r: Request) -> None:
        from opentelemetry import trace

        if not r.t_enqueued:
            return
        end = r.t_done or r.t_dispatched or r.t_enqueued
        attrs: dict[str, str | int | bool] = {
            "troupe.role": r.role, "troupe.class": r.klass.name.lower(), "troupe.request_id": r.id,
            "troupe.backend": r.backend, "troupe.state": r.state.value, "troupe.fallback": r.fallback,
        }  # fmt: skip
        root = self.tracer.start_span("request", start_time=self._ns(r.t_enqueued), attributes=attrs)
        ctx = trace.set_span_in_context(root)
        stages = [("queued", r.t_enqueued, r.t_dispatched), ("synthesize", r.t_synth_start, r.t_done),
                  ("first_chunk", r.t_synth_start, r.t_first_chunk)]  # fmt: skip
        for name, t0, t1 in stages:
            if t0 and t1 and t1 >= t0:
                self.tracer.start_span(name, context=ctx, start_time=self._ns(t0)).end(end_time=self._ns(t1))
        if r.error:
            root.set_attribute("troupe.error", r.error)
        root.end(end_time=self._ns(end))

    def close(self) -> None:
        self.provider.shutdown()


def make_tracer() -> Tracer | None:
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return None
    try:
        needed = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
        if any(importlib.util.find_spec(m) is None for m in needed):
            return None
    except ModuleNotFoundError:  # a parent package is missing
        return None
    return Tracer()
