"""The speech server against clients that leave, overload and shutdown, on a real uvicorn."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from live_server import LiveServer, free_port, serving

from engine.scheduler import Backend
from engine.server import SpeechService, SpeechSettings
from engine.synthesis.base import Mono, SynthRequest
from engine.synthesis.espeak import EspeakSynthesizer

SENTENCES = " ".join(f"This is sentence number {k} of a very long speech." for k in range(40))
ROOT = Path(__file__).resolve().parents[3]


def _wait_for(predicate, timeout_s: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


class PacedEspeak(EspeakSynthesizer):
    """The embedded voice at a neural model's pace (60 ms a line), so that a client can
    leave while its request is still being voiced."""

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        time.sleep(0.06 * len(batch))
        return super().synthesize(batch)


@pytest.fixture(scope="module")
def slow_server() -> Iterator[LiveServer]:
    service = SpeechService(SpeechSettings(neural=False))
    old = service.scheduler.backends["espeak"]
    service.scheduler.backends["espeak"] = Backend(PacedEspeak())
    old.close()
    with serving(service) as live:
        yield live


def _cast_hero(url: str) -> None:
    assert httpx.put(f"{url}/v1/roles/hero", json={}, timeout=10).status_code == 200


def _idle(service: SpeechService) -> bool:
    s = service.scheduler
    return s.idle


@pytest.mark.slow
def test_a_client_dropping_a_stream_withdraws_it_and_the_engine_goes_on(slow_server: LiveServer) -> None:
    service = slow_server.service
    _cast_hero(slow_server.url)
    before = service.scheduler.stats.dispatched
    with httpx.Client(timeout=30) as client, client.stream("GET", f"{slow_server.url}/tts",
                       params={"role": "hero", "text": SENTENCES, "stream": 1}) as resp:  # fmt: skip
        assert resp.status_code == 200
        next(resp.iter_raw())  # the first chunk arrived; then the client hangs up
    assert _wait_for(lambda: _idle(service))
    voiced = service.scheduler.stats.dispatched - before
    assert voiced < 40 // 2, f"{voiced} of 40 chunks were voiced for a client that left"
    assert service.scheduler.stats.cancelled > 0
    # the engine loop survived: a new request is served and health says so
    r = httpx.get(f"{slow_server.url}/tts", params={"role": "hero", "text": "Still here."}, timeout=30)
    assert r.status_code == 200 and r.content[:4] == b"RIFF"
    health = httpx.get(f"{slow_server.url}/healthz", timeout=5)
    assert health.status_code == 200 and service.healthy and service.engine_errors == 0


@pytest.mark.slow
def test_a_client_timing_out_on_a_whole_file_withdraws_its_work(slow_server: LiveServer) -> None:
    service = slow_server.service
    _cast_hero(slow_server.url)
    assert _wait_for(lambda: _idle(service))
    before = service.scheduler.stats.dispatched
    with pytest.raises(httpx.TimeoutException):
        httpx.get(f"{slow_server.url}/tts", params={"role": "hero", "text": SENTENCES}, timeout=0.5)
    assert _wait_for(lambda: _idle(service))
    voiced = service.scheduler.stats.dispatched - before
    assert voiced < 40 // 2, f"{voiced} of 40 chunks were voiced for a client that left"
    assert httpx.get(f"{slow_server.url}/readyz", timeout=5).status_code == 200


@pytest.fixture
def tight_server() -> Iterator[LiveServer]:
    """A server whose clients wait at most ~0.6 s: overload shows at once."""
    service = SpeechService(SpeechSettings(neural=False, budget_s=0.3, give_up_s=0.3))
    with serving(service) as live:
        yield live


@pytest.mark.slow
def test_overload_is_refused_fast_with_retry_after_and_the_rest_is_served(tight_server: LiveServer) -> None:
    text = "A line of speech long enough to take a little while to voice, every time."
    _cast_hero(tight_server.url)

    def call(k: int) -> httpx.Response:
        return httpx.get(f"{tight_server.url}/tts", params={"role": "hero", "text": text}, timeout=60)

    with concurrent.futures.ThreadPoolExecutor(40) as pool:
        answers = list(pool.map(call, range(80)))
    codes = [a.status_code for a in answers]
    assert set(codes) <= {200, 503}, codes
    assert codes.count(200) > 0 and codes.count(503) > 0
    for a in answers:
        if a.status_code == 503:
            assert int(a.headers["retry-after"]) >= 1
            assert "too busy" in a.json()["error"]["message"]
    stats = tight_server.service.scheduler.stats
    assert stats.refused + stats.shed == codes.count(503)
    assert httpx.get(f"{tight_server.url}/healthz", timeout=5).status_code == 200
    # ready says no while it refuses (a balancer sends work elsewhere), yes a second later
    assert tight_server.service.refused_at > time.monotonic() - 120  # the refusals were noted
    tight_server.service.refused_at = time.monotonic()
    assert httpx.get(f"{tight_server.url}/readyz", timeout=5).status_code == 503
    assert _wait_for(lambda: httpx.get(f"{tight_server.url}/readyz", timeout=5).status_code == 200, 10)


@pytest.mark.slow
def test_sigterm_stops_the_server_within_five_seconds_with_clients_waiting() -> None:
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, str(ROOT / "main.py"), "serve", "--port", str(port), "--metrics-port", "0"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        assert _wait_for(lambda: _answers(url), 60), "server did not start"
        _cast_hero(url)
        pool = concurrent.futures.ThreadPoolExecutor(8)
        waiting = [pool.submit(_long_stream, url) for _ in range(8)]
        time.sleep(0.5)  # the requests are queued and streaming
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        assert time.monotonic() - t0 <= 5.0
        for w in waiting:
            w.exception(timeout=10)  # each ended one way or another; none hangs
        pool.shutdown()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()  # type: ignore[union-attr]


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _long_stream(url: str) -> None:
    try:
        with httpx.stream("GET", f"{url}/tts", params={"role": "hero", "text": SENTENCES, "stream": 1},
                          timeout=30) as resp:  # fmt: skip
            for _ in resp.iter_raw():
                pass
    except httpx.HTTPError:
        pass
