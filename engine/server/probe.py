"""`main.py probe`: read a running server's `/metrics` and show each role's priority, the
queue, latency percentiles, throughput and anomalies (once as JSON, or live with rich)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from engine.core.errors import TroupeError

BACKOFF_MAX_S = 5.0
"""While the server does not answer, the live probe retries at most this far apart."""


@dataclass
class ProbeSnapshot:
    priorities: dict[str, float] = field(default_factory=dict)
    """Each role's urgency 0..1 (`troupe_role_priority`: the scheduler's slack, see
    `engine.scheduler.urgency`), the quantity the window's heatmap shows."""
    work: dict[str, float] = field(default_factory=dict)
    """Each role's queued synthesis time (s)."""
    queue_depth: float = 0.0
    requests_total: float = 0.0
    p50_ms: float = float("nan")
    """Over the last 10 s (requests done in that window)."""
    p95_ms: float = float("nan")
    p99_ms: float = float("nan")
    p95_60s_ms: float = float("nan")
    """Over the last 60 s."""
    p95_lifetime_ms: float = float("nan")
    """Since the server started (from the histogram)."""
    throughput_rps: float = float("nan")
    deadline_misses: float = 0.0
    refused: float = 0.0
    anomalies: float = 0.0
    engine_errors: float = 0.0
    t: float = 0.0


def fetch(url: str, token: str | None = None, timeout_s: float = 5.0) -> ProbeSnapshot:
    """One reading of `<url>/metrics`."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        resp = httpx.get(url.rstrip("/") + "/metrics", headers=headers, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise TroupeError(f"cannot reach {url}: {exc}") from exc
    if resp.status_code != 200:
        raise TroupeError(f"{url}/metrics answered {resp.status_code}: {resp.text[:200]}")
    return parse(resp.text)


def parse(text: str) -> ProbeSnapshot:
    snap = ProbeSnapshot(t=time.monotonic())
    buckets: dict[float, float] = {}
    windows: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "troupe_role_priority":
                snap.priorities[s.labels["role"]] = s.value
            elif s.name == "troupe_role_queued_work_seconds":
                snap.work[s.labels["role"]] = s.value
            elif s.name == "troupe_request_latency_window_seconds":
                windows[(s.labels["window"], s.labels["quantile"])] = s.value * 1000
            elif s.name == "troupe_requests_refused_total":
                snap.refused = s.value
            elif s.name == "troupe_engine_errors_total":
                snap.engine_errors = s.value
            elif s.name == "troupe_queue_depth":
                snap.queue_depth = s.value
            elif s.name == "troupe_requests_total":
                snap.requests_total += s.value
            elif s.name == "troupe_deadline_misses_total":
                snap.deadline_misses = s.value
            elif s.name == "troupe_anomalies_total":
                snap.anomalies += s.value
            elif s.name == "troupe_request_latency_seconds_bucket":
                le = float(s.labels["le"])
                buckets[le] = buckets.get(le, 0.0) + s.value
    nan = float("nan")
    snap.p50_ms, snap.p95_ms, snap.p99_ms = (windows.get(("10s", q), nan) for q in ("0.5", "0.95", "0.99"))
    snap.p95_60s_ms = windows.get(("60s", "0.95"), nan)
    snap.p95_lifetime_ms = quantile(buckets, 0.95) * 1000
    return snap


def quantile(buckets: dict[float, float], q: float) -> float:
    """A quantile from cumulative histogram buckets (linear inside a bucket, as PromQL does)."""
    edges = sorted(buckets)
    if not edges or buckets[edges[-1]] <= 0:
        return float("nan")
    rank = q * buckets[edges[-1]]
    lo_edge, lo_count = 0.0, 0.0
    for edge in edges:
        count = buckets[edge]
        if count >= rank:
            if math.isinf(edge):
                return lo_edge
            span = count - lo_count
            return lo_edge + (edge - lo_edge) * ((rank - lo_count) / span if span else 0.0)
        lo_edge, lo_count = edge, count
    return lo_edge


def with_rate(prev: ProbeSnapshot, cur: ProbeSnapshot) -> ProbeSnapshot:
    dt = cur.t - prev.t
    if dt > 0:
        cur.throughput_rps = (cur.requests_total - prev.requests_total) / dt
    return cur


def once(url: str, interval_s: float, token: str | None) -> dict[str, Any]:
    first = fetch(url, token)
    time.sleep(interval_s)
    snap = with_rate(first, fetch(url, token))
    out = asdict(snap)
    out.pop("t")
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def live(url: str, interval_s: float, token: str | None, duration_s: float = 0.0) -> None:
    from rich.console import Group
    from rich.live import Live
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    def view(s: ProbeSnapshot) -> Group:
        table = Table(title=f"Troupe at {url}", expand=True)
        table.add_column("role")
        table.add_column("urgency", justify="right")
        table.add_column("queued work", justify="right")
        table.add_column("", ratio=3)
        for role, p in sorted(s.priorities.items(), key=lambda kv: -kv[1]):
            table.add_row(role, f"{p:.2f}", f"{s.work.get(role, 0.0):.1f} s",
                          ProgressBar(total=1.0, completed=p))  # fmt: skip
        figures = Table.grid(padding=(0, 3))
        figures.add_row(f"queue {s.queue_depth:.0f}", f"p50 {s.p50_ms:.0f} ms (10 s)",
                        f"p95 {s.p95_ms:.0f} ms (10 s) {s.p95_60s_ms:.0f} ms (60 s)",
                        f"{s.throughput_rps:.1f} req/s", f"misses {s.deadline_misses:.0f}",
                        f"refused {s.refused:.0f}", f"anomalies {s.anomalies:.0f}")  # fmt: skip
        return Group(table, figures)

    end = time.monotonic() + duration_s if duration_s else math.inf
    prev: ProbeSnapshot | None = None
    wait_s, down = interval_s, False
    with Live(view(ProbeSnapshot()), auto_refresh=False) as screen:  # drawn only on a reading
        while time.monotonic() < end:
            try:
                cur = fetch(url, token, timeout_s=max(1.0, interval_s))
            except TroupeError as exc:
                if not down:  # said once per outage, not once per attempt
                    screen.console.print(f"[red]{exc}; retrying, backing off up to {BACKOFF_MAX_S:g} s")
                down, wait_s = True, backoff(wait_s)
                time.sleep(min(wait_s, max(0.0, end - time.monotonic())))
                continue
            if down:
                screen.console.print(f"[green]{url} answers again")
            down, wait_s = False, interval_s
            cur = with_rate(prev, cur) if prev is not None else cur
            screen.update(view(cur), refresh=True)
            prev = cur
            time.sleep(interval_s)


def backoff(wait_s: float) -> float:
    """The next wait while the server does not answer: doubling, up to `BACKOFF_MAX_S`."""
    return min(BACKOFF_MAX_S, max(wait_s * 2, 0.2))


def parse_interval(text: str) -> float:
    """'100ms', '0.5s' or '2' (seconds) -> seconds."""
    t = text.strip().lower()
    try:
        value = float(t[:-2]) / 1000 if t.endswith("ms") else float(t.rstrip("s"))
    except ValueError:
        raise TroupeError(f"interval {text!r}: expected e.g. 100ms, 0.5s or 2") from None
    if not 0.01 <= value <= 3600:
        raise TroupeError(f"interval {text!r}: expected 10 ms to 1 hour")
    return value


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True)
