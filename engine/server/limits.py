"""What holds the server against its clients: the bearer token, the body limit (counted as
the body arrives, chunked or not), the Host allow-list, a header-read timeout, a body-read
deadline (a minimum rate), a cap on open connections and on one client address's share of
them, a reserve of connections that only answer `/healthz` and `/readyz`, a send timeout for a
client that stops taking its answer, and an optional
request-rate quota per client address (429 with Retry-After)."""

from __future__ import annotations

import asyncio
import ipaddress
import math
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from engine.core.errors import TroupeError
from engine.server.errors import BodyTooLarge, error

OPEN_PATHS = ("/healthz", "/readyz")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


@dataclass(frozen=True)
class ServerLimits:
    """How much a client may ask of the server; every field is a `serve` option."""

    max_body_bytes: int = 64 * 1024
    header_timeout_s: float = 10.0
    """A connection that has not sent a whole request head within this long is closed."""
    keep_alive_s: int = 5
    """An idle keep-alive connection is closed after this long."""
    max_connections: int = 512
    """Open connections beyond this (and the health reserve) are closed at once."""
    allowed_hosts: tuple[str, ...] = ()
    """Extra Host header names accepted when bound to loopback (DNS rebinding guard)."""
    body_timeout_s: float = 10.0
    """A request body must arrive within this long after its head, plus its length at
    `min_body_rate` (a client that trickles a body is cut off)."""
    min_body_rate: int = 16 * 1024
    """Bytes a second a body may take on top of `body_timeout_s`."""
    per_client_connections: int = 256
    """Open connections one client address may hold (half the cap by default: one address,
    an attacker or a crowd behind one proxy, never takes all of them)."""
    health_reserve: int = 16
    """Connections past the cap that still answer `/healthz` and `/readyz` (anything else
    there is a 503 with Retry-After), so a full server still says how it is."""
    client_rate: float = 0.0
    """Requests a second one client address may make on average (bursts of twice that);
    past it a 429 with Retry-After. 0: no quota."""
    evict_idle: bool = True
    """At the cap, a new connection closes the one that has waited longest without giving
    work (no request head, or a body still trickling), instead of being refused."""
    send_timeout_s: float = 30.0
    """A client that takes none of its answer for this long (the connection's write buffer
    stays full) is cut off, which withdraws the rest of its answer."""


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def host_allow_list(bind_host: str, extra: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The Host names a server bound to `bind_host` answers: on loopback, loopback names
    and `extra` only (a page on another site that rebinds its name to 127.0.0.1 is refused);
    elsewhere, any (the token guards it)."""
    if not is_loopback(bind_host):
        return None
    return frozenset(h.lower() for h in (*LOOPBACK_NAMES, bind_host, *extra))


class Guard:
    """Host, bearer token and body size, checked before any route runs. A plain ASGI
    middleware: its `receive` wrapper counts body bytes and passes every other message
    (`http.disconnect` above all) through untouched, so a route still sees its client leave."""

    def __init__(self, app: ASGIApp, token: str | None = None, max_body_bytes: int = 64 * 1024,
                 hosts: frozenset[str] | None = None, client_rate: float = 0.0) -> None:  # fmt: skip
        self.app = app
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.hosts = hosts
        self.quota = RateQuota(client_rate) if client_rate > 0 else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self._check(scope)
        if problem is None and self.quota is not None and scope["path"] not in OPEN_PATHS:
            wait_s = self.quota.take((scope.get("client") or ("", 0))[0])
            if wait_s > 0:
                problem = error(429, "too many requests from this address; retry after Retry-After seconds",
                                code="rate_limit_exceeded")  # fmt: skip
                problem.headers["Retry-After"] = str(max(1, math.ceil(wait_s)))
        if problem is not None:
            await problem(scope, receive, send)
            return
        await self.app(scope, self._counting(receive), send)

    def _counting(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body_bytes:
                    raise BodyTooLarge(self.max_body_bytes)
            return message

        return counted

    def _check(self, scope: Scope) -> Any:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.hosts is not None and _host_name(headers.get("host", "")) not in self.hosts:
            return error(421, "this server answers only to its own host name (Host header refused)",
                         code="host_not_allowed")  # fmt: skip
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body_bytes):
            return error(413, f"request body over {self.max_body_bytes} bytes", code="body_too_large")
        if self.token and scope["path"] not in OPEN_PATHS and not self._authorised(headers):
            response = error(401, "missing or wrong bearer token (Authorization: Bearer TOKEN)",
                             code="invalid_api_key")  # fmt: skip
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        return None

    def _authorised(self, headers: dict[str, str]) -> bool:
        scheme, _, given = headers.get("authorization", "").strip().partition(" ")
        expected = (self.token or "").encode()
        # NB: the comparison runs whatever the scheme, so its time says nothing about the token
        same = secrets.compare_digest(given.strip().encode("utf-8", "surrogateescape"), expected)
        return same and scheme.lower() == "bearer"


class RateQuota:
    """A token bucket per client address: `rate` requests a second on average, bursts of
    twice that. `take` answers 0 (go on) or the seconds until a request would be allowed.
    Used on the event loop only; addresses idle for a minute are forgotten."""

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, max(1.0, 2 * rate), clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._swept = clock()

    def take(self, client: str) -> float:
        now = self.clock()
        tokens, last = self._buckets.get(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        if tokens < 1.0:
            self._buckets[client] = (tokens, now)
            return (1.0 - tokens) / self.rate
        self._buckets[client] = (tokens - 1.0, now)
        if now - self._swept > 60:
            self._swept = now
            self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < 60}
        return 0.0


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, plus: a request head must arrive within the header
    timeout and its body by the body deadline (a slow client is cut off); one client
    address holds at most its share of the connections; connections past the cap answer
    only the health paths (the reserve), and past the reserve are closed at once."""

    header_timeout_s = 10.0
    body_timeout_s = 10.0
    min_body_rate = 16 * 1024
    max_connections = 512
    per_client_connections = 256
    health_reserve = 16
    evict_idle = True
    send_timeout_s = 30.0
    _head_timer: asyncio.TimerHandle | None = None
    _send_timer: asyncio.TimerHandle | None = None
    _head_cycle: object = None
    _body_timer: asyncio.TimerHandle | None = None
    _waiting_since = 0.0
    """Since when this connection has given the server no work (connected, or its last
    response finished, or its body started arriving)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._waiting_since = self.loop.time()
        total = len(self.connections)
        if self._over_share(total):
            transport.close()
            return
        if total > self.max_connections and self.evict_idle and self._evict():
            total -= 1
        if total > self.max_connections + self.health_reserve:
            transport.close()
            return
        if total > self.max_connections:
            self.app = _HealthOnly(self.app)  # this connection is the health reserve's
        self._arm()

    def _unproductive(self) -> bool:
        """Holding a connection without giving the server work: no request head yet (idle,
        or between requests), or a body still trickling in."""
        cycle = self.cycle
        return cycle is None or cycle.response_complete or bool(cycle.more_body)

    def _evict(self) -> bool:
        """At the cap: close the connection that has waited longest without giving work
        (a slow-body or idle-socket attack gives way to the client that just arrived; a
        request being voiced or answered is never touched). False if there is none."""
        now = self.loop.time()
        victims = [c for c in self.connections if c is not self and isinstance(c, GuardedH11)
                   and c._unproductive() and now - c._waiting_since > 0.5]  # fmt: skip
        if not victims:
            return False
        oldest = min(victims, key=lambda c: c._waiting_since)
        oldest.transport.close()
        self.connections.discard(oldest)  # counted out now; connection_lost follows
        return True

    def _over_share(self, total: int) -> bool:
        """This client address holds more than its share of the connections."""
        if not self.client or total <= self.per_client_connections:
            return False
        host = self.client[0]
        mine = sum(1 for c in self.connections if (getattr(c, "client", None) or ("",))[0] == host)
        return mine > self.per_client_connections

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timeout)
        self._head_cycle = self.cycle

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        if self.cycle is self._head_cycle:  # no new request head since the timer started
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not self._head_cycle:  # a request head arrived
            self._disarm()
        cycle = self.cycle
        if cycle is not None and cycle.more_body and not self.transport.is_closing():
            if self._body_timer is None:  # the body's deadline: from its head on
                length = next((v for k, v in self.headers if k == b"content-length"), b"0")
                size = int(length) if length.isdigit() else 0
                allowed = self.body_timeout_s + size / max(1, self.min_body_rate)
                self._body_timer = self.loop.call_later(allowed, self._body_timeout, cycle)
        elif self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_timeout(self, cycle: Any) -> None:
        self._body_timer = None
        if self.cycle is cycle and cycle.more_body:  # still trickling: the route sees a hang-up
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._waiting_since = self.loop.time()
        if not self.transport.is_closing():
            self._arm()  # the next request's head is due within the timeout too

    def pause_writing(self) -> None:
        """The client has stopped taking the answer (the write buffer is full): it has
        `send_timeout_s` to take some of it again."""
        super().pause_writing()
        if self._send_timer is None:
            self._send_timer = self.loop.call_later(self.send_timeout_s, self._send_timeout)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def _send_timeout(self) -> None:
        self._send_timer = None
        if not self.transport.is_closing():  # the route sees a hang-up and withdraws the rest
            self.transport.abort()  # NB: close() would wait for the full buffer to drain

    def connection_lost(self, exc: Exception | None) -> None:
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None
        self._disarm()
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        super().connection_lost(exc)


class _HealthOnly:
    """The app as a connection in the health reserve sees it: the health paths answered,
    anything else a 503 with Retry-After."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        response = error(503, "the server's connections are all in use; retry after Retry-After seconds",
                         code="overloaded")  # fmt: skip
        response.headers["Retry-After"] = "1"
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


def uvicorn_config(app: ASGIApp, host: str, port: int, limits: ServerLimits, **extra: Any) -> uvicorn.Config:
    """uvicorn's settings for a server that holds against slow, many or greedy clients."""
    protocol = type("Guarded", (GuardedH11,), {
        "header_timeout_s": limits.header_timeout_s, "body_timeout_s": limits.body_timeout_s,
        "min_body_rate": limits.min_body_rate, "max_connections": limits.max_connections,
        "per_client_connections": limits.per_client_connections, "health_reserve": limits.health_reserve,
        "evict_idle": limits.evict_idle, "send_timeout_s": limits.send_timeout_s,
    })  # fmt: skip
    return uvicorn.Config(app, host=host, port=port, http=protocol, timeout_keep_alive=limits.keep_alive_s,
                          limit_concurrency=limits.max_connections + limits.health_reserve + 64,
                          h11_max_incomplete_event_size=16 * 1024, **extra)  # fmt: skip


def serve_in_thread(app: ASGIApp, host: str, port: int, limits: ServerLimits) -> uvicorn.Server:
    """A second server (the metrics port) in a thread of its own. The port is bound here, so
    one that cannot be bound is a clear error at start, not a thread that quietly ends."""
    try:
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:
        raise TroupeError(
            f"port {host}:{port}: {exc.strerror or exc} (--metrics-port 0: no metrics port)"
        ) from None
    server = uvicorn.Server(uvicorn_config(app, host, port, limits, log_level="warning", lifespan="off"))
    threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="troupe-metrics", daemon=True
    ).start()
    return server
