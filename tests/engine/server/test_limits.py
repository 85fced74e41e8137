"""The server holds against its clients: role cap and expiry, body limit on chunked bodies,
slow headers, a connection cap, the Host allow-list, strict types, the bearer scheme, one
error shape, and the metrics port behind the token on loopback."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from live_server import LiveServer, _start, free_port, serving

from engine.server import SpeechService, SpeechSettings
from engine.server.limits import ServerLimits, host_allow_list

ROOT = Path(__file__).resolve().parents[3]
SPEECH = "/v1/audio/speech"


@pytest.fixture(scope="module")
def guarded() -> Iterator[LiveServer]:
    """A loopback server as `serve` runs it: Host list, token, few roles, tight limits."""
    settings = SpeechSettings(neural=False, max_client_roles=3, client_role_idle_s=60)
    service = SpeechService(settings)
    limits = ServerLimits(max_body_bytes=4096, header_timeout_s=0.5, max_connections=8)
    server, thread, url = _start(service, "s3cret", limits, host_allow_list("127.0.0.1"))
    yield LiveServer(url, service, "s3cret")
    server.should_exit = True
    thread.join(10)
    service.close()


AUTH = {"Authorization": "Bearer s3cret"}


def _error(r: httpx.Response, status: int) -> dict[str, str]:
    assert r.status_code == status, (r.status_code, r.text)
    error: dict[str, str] = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


def test_client_roles_are_capped_and_dropped_when_idle(guarded: LiveServer) -> None:
    service, u = guarded.service, guarded.url
    now = [1000.0]
    service.client_roles.clock = lambda: now[0]
    for name in ("a1", "a2", "a3"):
        assert httpx.put(f"{u}/v1/roles/{name}", json={"weight": 2}, headers=AUTH).status_code == 200
    assert _error(httpx.put(f"{u}/v1/roles/a4", json={}, headers=AUTH), 429)["code"] == "too_many_roles"
    now[0] += 61  # a minute later, a1 is used; the others are idle past the limit
    r = httpx.get(f"{u}/tts", params={"role": "a1", "text": "Still here."}, headers=AUTH, timeout=30)
    assert r.status_code == 200
    assert sorted(service.expire_roles()) == ["A2", "A3"]
    roles = httpx.get(f"{u}/v1/roles", headers=AUTH).json()["roles"]
    assert "A1" in roles and "A2" not in roles and "A2" not in service.scheduler.weights
    metrics = httpx.get(f"{u}/metrics", headers=AUTH).text
    assert 'role="A2"' not in metrics and 'role="A1"' in metrics
    assert httpx.put(f"{u}/v1/roles/a4", json={}, headers=AUTH).status_code == 200  # room again


def test_oversize_bodies_are_refused_chunked_or_not(guarded: LiveServer) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(1024):  # 1 MiB, no Content-Length: only counting catches it
            yield b" " * 1024

    headers = {**AUTH, "content-type": "application/json"}
    r = httpx.post(f"{guarded.url}{SPEECH}", content=chunks(), headers=headers, timeout=30)
    assert _error(r, 413)["message"] == "request body over 4096 bytes"
    r = httpx.post(f"{guarded.url}{SPEECH}", content=b" " * 5000, headers=headers)
    _error(r, 413)
    small = iter([b'{"model": "tts-1", "input": "Fine.", "voice": "alloy",', b' "response_format": "wav"}'])
    r = httpx.post(f"{guarded.url}{SPEECH}", content=small, headers=headers, timeout=30)
    assert r.status_code == 200 and r.content[:4] == b"RIFF"


@pytest.mark.slow
def test_slow_headers_are_cut_off(guarded: LiveServer) -> None:
    port = int(guarded.url.rsplit(":", 1)[1])
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    for s in slow:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # ... and never the blank line
    for s in slow:
        s.settimeout(20)
        assert s.recv(1024) == b""  # the server closed it (a timeout would raise)
        s.close()
    assert httpx.get(f"{guarded.url}/healthz", headers=AUTH).status_code == 200


def test_connections_past_the_cap_are_closed_at_once() -> None:
    service = SpeechService(SpeechSettings(neural=False))
    limits = ServerLimits(header_timeout_s=600, max_connections=4, health_reserve=0, evict_idle=False)
    server, thread, url = _start(service, None, limits)
    port = int(url.rsplit(":", 1)[1])
    crowd = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
    try:
        for s in crowd[4:]:
            s.settimeout(20)
            assert s.recv(1024) == b""  # closed long before the header timeout
        for s in crowd[:4]:  # the first four are still open and served
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            s.settimeout(20)
            assert s.recv(1024).startswith(b"HTTP/1.1 200")
    finally:
        for s in crowd:
            s.close()
        server.should_exit = True
        thread.join(10)
        service.close()


def test_host_header_must_name_this_server_on_loopback(guarded: LiveServer) -> None:
    for host in ("evil.example", "evil.example:80", "127.0.0.1.evil.example"):
        r = httpx.get(f"{guarded.url}/healthz", headers={"Host": host})
        assert _error(r, 421)["code"] == "host_not_allowed"
    port = guarded.url.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "LOCALHOST"):
        assert httpx.get(f"{guarded.url}/healthz", headers={"Host": host}).status_code == 200


def test_bearer_scheme_is_case_insensitive_and_nothing_else_passes(guarded: LiveServer) -> None:
    u = f"{guarded.url}/v1/roles"
    for given in ("Bearer s3cret", "bearer s3cret", "BEARER  s3cret"):
        assert httpx.get(u, headers={"Authorization": given}).status_code == 200, given
    for given in ("Basic s3cret", "s3cret", "Bearer s3cre", "Bearer s3cret2", "Bearer"):
        assert _error(httpx.get(u, headers={"Authorization": given}), 401)["type"] == "authentication_error"


BAD_BODIES = [
    (SPEECH, b'{"model": "tts-1", "input": "Hi.", "voice": "alloy", "speed": true}', "speed"),
    (SPEECH, b'{"model": "tts-1", "input": "Hi.", "voice": "alloy", "speed": "2"}', "speed"),
    (SPEECH, b'{"model": "tts-1", "input": "Hi.", "voice": "alloy", "speed": NaN}', "speed"),
    (SPEECH, b'{"model": "tts-1", "input": "Hi.", "voice": "alloy", "speed": Infinity}', "speed"),
    (SPEECH, b'{"model": "tts-1", "input": "Hi.", "voice": "alloy", "speed": 1e999}', "speed"),
    (SPEECH, b'{"model": "tts-1", "input": "\\ud800", "voice": "alloy"}', "input"),
    (SPEECH, b'{"model": "tts-1", "input": "Hi.", "voice": "\\udfff"}', "voice"),
    (SPEECH, b'{"model": "tts-1", "input": 7, "voice": "alloy"}', "input"),
    ("/v1/roles/hero", b'{"weight": "2"}', "weight"),
    ("/v1/roles/hero", b'{"pitch": 50.5}', "pitch"),
    ("/v1/roles/hero", b'{"pan": false}', "pan"),
    ("/v1/script", b'{"path": "."}', "path"),
    ("/v1/script", b'{"path": "\\ud800.txt"}', "body"),  # a one-field body: FastAPI names the body
]


@pytest.mark.parametrize(("path", "body", "param"), BAD_BODIES)
def test_bad_values_are_a_400_naming_the_field(live_server: LiveServer, path: str, body: bytes,
                                               param: str) -> None:  # fmt: skip
    method = "PUT" if path.startswith("/v1/roles") else "POST"
    r = httpx.request(method, f"{live_server.url}{path}", content=body,
                      headers={"content-type": "application/json"}, timeout=30)  # fmt: skip
    error = _error(r, 400)
    assert error["type"] == "invalid_request_error" and param in (error["param"] or "") + error["message"]


def test_every_error_has_one_shape(live_server: LiveServer) -> None:
    u = live_server.url
    assert _error(httpx.get(f"{u}/no/such/path"), 404)["type"] == "not_found_error"
    _error(httpx.delete(f"{u}/v1/roles"), 405)
    _error(httpx.post(f"{u}{SPEECH}", json={"input": "Hi."}), 400)


def test_schema_lists_status_codes_and_audio_types(live_server: LiveServer) -> None:
    spec = httpx.get(f"{live_server.url}/openapi.json").json()
    speech = spec["paths"][SPEECH]["post"]["responses"]
    assert {"200", "400", "401", "413", "503"} <= set(speech)
    assert {"audio/mpeg", "audio/ogg", "audio/aac", "audio/flac", "audio/wav", "audio/pcm",
            "text/event-stream"} <= set(speech["200"]["content"])  # fmt: skip
    assert "ErrorBody" in str(speech["400"])
    assert {"200", "400", "404"} <= set(spec["paths"]["/tts"]["get"]["responses"])


def _listening(port: int) -> str:
    """The address a local TCP port listens on, from the kernel's table."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        addr, hexport = local.split(":")
        if int(hexport, 16) == port and state == "0A":
            return socket.inet_ntoa(bytes.fromhex(addr)[::-1])
    return ""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's socket table")
def test_metrics_port_binds_loopback_and_wants_the_token() -> None:
    port, metrics = free_port(), free_port()
    cmd = [sys.executable, str(ROOT / "main.py"), "serve", "--host", "0.0.0.0", "--port", str(port),
           "--token", "T0k", "--metrics-port", str(metrics)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        end = time.monotonic() + 60
        while not (_listening(port) and _listening(metrics)):
            assert proc.poll() is None and time.monotonic() < end, "server did not start"
            time.sleep(0.05)
        assert _listening(port) == "0.0.0.0" and _listening(metrics) == "127.0.0.1"
        url = f"http://127.0.0.1:{metrics}/metrics"
        assert httpx.get(url, timeout=10).status_code == 401
        r = httpx.get(url, headers={"Authorization": "Bearer T0k"}, timeout=10)
        assert r.status_code == 200 and "troupe_queue_depth" in r.text
        assert httpx.get(f"http://127.0.0.1:{metrics}/foo", headers={"Authorization": "Bearer T0k"},
                         timeout=10).status_code == 404  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stderr.close()  # type: ignore[union-attr]
    open_metrics = [sys.executable, str(ROOT / "main.py"), "serve", "--metrics-host", "0.0.0.0"]
    env = {k: v for k, v in os.environ.items() if k != "TROUPE_TOKEN"}
    refused = subprocess.run(open_metrics, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "binding 0.0.0.0 (beyond loopback) needs --token" in refused.stderr


@contextlib.contextmanager
def _server(limits: ServerLimits) -> Iterator[tuple[str, int]]:
    with serving(SpeechService(SpeechSettings(neural=False)), limits=limits) as live:
        yield live.url, int(live.url.rsplit(":", 1)[1])


def _ask(sock: socket.socket, path: str) -> bytes:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    sock.settimeout(20)
    return sock.recv(4096)


@pytest.mark.slow
def test_a_trickled_body_is_cut_off_at_its_deadline() -> None:
    """The slow-body attack: a promised 60,000-byte body sent a byte at a time."""
    with _server(ServerLimits(body_timeout_s=0.5, min_body_rate=1 << 20)) as (url, port):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 60000\r\n\r\n{")  # fmt: skip
        t0 = time.monotonic()
        s.settimeout(20)
        try:
            while s.recv(4096):
                pass
        except ConnectionResetError:
            pass
        assert time.monotonic() - t0 < 5  # 0.5 s + 60 KB at 1 MiB/s, not the 20 s wait
        s.close()
        assert httpx.get(f"{url}/healthz").status_code == 200


@pytest.mark.slow
def test_a_full_server_still_answers_health_from_its_reserve() -> None:
    limits = ServerLimits(
        header_timeout_s=600, max_connections=3, health_reserve=2, per_client_connections=100
    )
    with _server(limits) as (_url, port):
        crowd = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            time.sleep(0.2)
            reserve = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
            time.sleep(0.2)
            past = socket.create_connection(("127.0.0.1", port))
            past.settimeout(20)
            assert past.recv(1024) == b""  # past the reserve: closed at once
            assert _ask(reserve[0], "/healthz").startswith(b"HTTP/1.1 200")
            assert _ask(reserve[0], "/readyz").startswith(b"HTTP/1.1 ")
            answer = _ask(reserve[1], "/v1/roles")
            assert answer.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in answer.lower()
            for c in (*reserve, past):
                c.close()
        finally:
            for c in crowd:
                c.close()


@pytest.mark.slow
def test_one_address_holds_only_its_share() -> None:
    limits = ServerLimits(header_timeout_s=600, max_connections=8, per_client_connections=3, evict_idle=False)
    with _server(limits) as (_url, port):
        mine = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            time.sleep(0.2)
            fourth = socket.create_connection(("127.0.0.1", port))
            fourth.settimeout(20)
            assert fourth.recv(1024) == b""
            other = socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.2", 0))
            assert _ask(other, "/healthz").startswith(b"HTTP/1.1 200")  # another address gets in
            assert _ask(mine[0], "/healthz").startswith(b"HTTP/1.1 200")
            fourth.close()
            other.close()
        finally:
            for c in mine:
                c.close()


@pytest.mark.slow
def test_a_request_rate_quota_answers_429_with_retry_after() -> None:
    with _server(ServerLimits(client_rate=2.0)) as (url, _port), httpx.Client() as client:
        codes = [client.get(f"{url}/v1/roles").status_code for _ in range(8)]
        assert codes[:4] == [200] * 4 and 429 in codes  # a burst of twice the rate, then the quota
        r = client.get(f"{url}/v1/roles")
        if r.status_code == 429:
            assert int(r.headers["Retry-After"]) >= 1 and r.json()["error"]["code"] == "rate_limit_exceeded"
        assert all(client.get(f"{url}/healthz").status_code == 200 for _ in range(10))  # never limited


@pytest.mark.slow
def test_at_the_cap_a_new_client_evicts_the_longest_idle_connection() -> None:
    """Idle sockets hold every connection; a client that arrives is served, the socket
    that waited longest without sending a request is the one closed."""
    limits = ServerLimits(header_timeout_s=600, max_connections=4, health_reserve=0)
    with _server(limits) as (url, port):
        idle = [
            socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.2", 0)) for _ in range(4)
        ]
        try:
            time.sleep(1.0)  # all four have waited past the eviction age
            r = httpx.get(f"{url}/v1/roles", timeout=20)  # a new connection, a real request
            assert r.status_code == 200
            closed = 0
            for c in idle:  # one idle socket made room (the oldest, in the server's order)
                c.settimeout(0.5)
                with contextlib.suppress(TimeoutError):
                    closed += c.recv(1024) == b""
            assert closed == 1
        finally:
            for c in idle:
                c.close()
