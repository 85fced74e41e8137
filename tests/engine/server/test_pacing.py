"""A streamed answer is voiced as its client takes it: a client that stops reading holds a
sentence or two on the server, not its whole answer, and is cut off after the send
timeout, which withdraws the rest."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

import httpx
import numpy as np
import pytest
from live_server import LiveServer, free_port, serving

from engine.core.errors import Overloaded
from engine.server.limits import ServerLimits
from engine.server.pacing import Paced
from engine.server.speech import SpeechService, SpeechSettings
from engine.synthesis.base import Mono

ROOT = Path(__file__).resolve().parents[3]
SENTENCE = "The lamp room smelled of paraffin and salt, and the glass was cold under her hand. "
LONG = (SENTENCE * 60)[:4096].rsplit(" ", 1)[0] + "."  # OpenAI's limit, about 50 sentences


class _Queue:
    """Pending chunks that record when they were queued and with what deadline."""

    def __init__(self, n: int, refuse_from: int | None = None) -> None:
        self.queued: list[tuple[int, float]] = []
        self.futures: list[Future[Mono]] = []
        self.refuse_from = refuse_from
        self.pending = [self._one(k) for k in range(n)]

    def _one(self, k: int):  # type: ignore[no-untyped-def]
        def queue(deadline_s: float) -> Future[Mono]:
            if self.refuse_from is not None and k >= self.refuse_from:
                raise Overloaded("too busy", retry_after_s=1.0)
            self.queued.append((k, deadline_s))
            f: Future[Mono] = Future()
            self.futures.append(f)
            return f

        return queue


def test_taking_a_chunk_queues_the_next_ones_within_ahead() -> None:
    q = _Queue(5)
    now = [100.0]
    paced = Paced(q.pending, lambda: now[0], budget_s=2.0, ahead=2)
    paced.start()
    assert q.queued == [(0, 102.0), (1, 104.0)]  # the first two: due 1 and 2 budgets from now
    first = paced.take()
    assert first is q.futures[0] and len(q.queued) == 2
    now[0] = 110.0
    assert paced.take() is q.futures[1]
    assert q.queued[-1] == (2, 114.0)  # taking chunk 1 queues chunk 2, due 2 budgets from then
    paced.cancel()
    assert q.futures[2].cancelled()  # queued and not taken: withdrawn
    assert not q.futures[1].cancelled()  # the stream holds the one it took (and cancels it itself)
    assert paced.take() is None and len(q.queued) == 3  # nothing more is queued after cancel


def test_ahead_zero_queues_everything_at_once_and_a_refusal_withdraws_the_start() -> None:
    q = _Queue(4)
    paced = Paced(q.pending, lambda: 0.0, budget_s=1.0, ahead=0)
    paced.start()
    assert q.queued == [(0, 1.0), (1, 2.0), (2, 3.0), (3, 4.0)]
    refused = _Queue(4, refuse_from=1)
    with pytest.raises(Overloaded):
        Paced(refused.pending, lambda: 0.0, budget_s=1.0, ahead=3).start()
    assert refused.futures[0].cancelled()  # all or nothing: the chunk queued first leaves again


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    service = SpeechService(SpeechSettings(neural=False))
    service.add_role("HERO", voice_id="en-us")
    with serving(service, limits=ServerLimits(send_timeout_s=2.0)) as live:
        yield live


@pytest.fixture
def live(server: LiveServer) -> str:
    return server.url


def _streamed(url: str, text: str) -> bytes:
    with httpx.stream("GET", f"{url}/tts", params={"role": "hero", "text": text, "stream": "1"},
                      timeout=60) as r:  # fmt: skip
        assert r.status_code == 200
        return b"".join(r.iter_bytes())


def test_a_paced_stream_sends_what_queuing_everything_at_once_sends(server: LiveServer) -> None:
    text = SENTENCE * 6
    paced = _streamed(server.url, text)
    settings = server.service.settings
    server.service.settings = replace(settings, stream_ahead=0)
    try:
        at_once = _streamed(server.url, text)
    finally:
        server.service.settings = settings
    a, b = np.frombuffer(paced, np.int16), np.frombuffer(at_once, np.int16)
    # NB: the same speech; not sample for sample: espeak-ng's trailing silence differs by a few
    # milliseconds when sentences are voiced in one batch (at once) or one by one (paced)
    assert len(a) > 48_000 * 20 and abs(len(a) - len(b)) < 0.005 * len(b)
    loud = lambda x: np.sqrt(np.mean(x.astype(np.float64) ** 2))  # noqa: E731
    assert loud(a) == pytest.approx(loud(b), rel=0.02)


def _stalled(url: str, body: dict[str, object]) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    data = json.dumps(body).encode()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, int(port)))
    s.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(data), data))  # fmt: skip
    return s


def _read_all(s: socket.socket, wait_s: float) -> tuple[int, bool]:
    s.settimeout(wait_s)
    got = 0
    try:
        while chunk := s.recv(1 << 16):
            got += len(chunk)
    except TimeoutError:
        return got, False
    except ConnectionResetError:
        pass
    return got, True


@pytest.mark.slow
def test_a_reader_that_stops_is_cut_off_and_its_answer_withdrawn(live: str) -> None:
    body = {"model": "tts-1", "voice": "hero", "input": LONG, "response_format": "pcm"}
    with httpx.stream("POST", f"{live}/v1/audio/speech", json=body, timeout=120) as r:
        whole = sum(len(c) for c in r.iter_bytes())
    s = _stalled(live, body)
    time.sleep(5)  # the send timeout is 2 s
    got, closed = _read_all(s, 5.0)
    s.close()
    assert closed, "the stalled reader was not cut off"
    assert got < whole / 2  # it was sent a few sentences, not its answer
    health = httpx.get(f"{live}/readyz", timeout=5).json()
    assert health["queue_depth"] == 0  # nothing of its answer is still queued


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


@pytest.mark.slow
def test_thirty_stalled_clients_cost_the_server_under_50_mb() -> None:
    port = free_port()
    env = {**os.environ, "TROUPE_TAKE_CACHE": "off"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    clients: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            time.sleep(0.3)
        body = {"model": "tts-1", "voice": "en-us", "input": LONG}  # mp3, OpenAI's default
        with httpx.stream("POST", f"{url}/v1/audio/speech", json=body, timeout=120) as r:
            assert r.status_code == 200
            for _ in r.iter_bytes():
                pass
        time.sleep(1)
        base = _rss_mb(proc.pid)
        clients = [_stalled(url, body) for _ in range(30)]
        peak = base
        end = time.monotonic() + 12
        while time.monotonic() < end:
            peak = max(peak, _rss_mb(proc.pid))
            time.sleep(0.25)
        assert peak - base <= 50, f"30 stalled clients grew the server by {peak - base:.0f} MB"
    finally:
        for s in clients:
            s.close()
        proc.terminate()
        proc.wait(10)
