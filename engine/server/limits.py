"""What holds the server against its clients: the bearer token, the body limit (counted as
the body arrives, chunked or not), the Host allow-list, a header-read timeout and a cap on
open connections."""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import socket
import threading
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
    max_connections: int = 256
    """Open connections beyond this are closed at once (uvicorn's `limit_concurrency`
    answers 503 to requests beyond it as well)."""
    allowed_hosts: tuple[str, ...] = ()
    """Extra Host header names accepted when bound to loopback (DNS rebinding guard)."""


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
                 hosts: frozenset[str] | None = None) -> None:  # fmt: skip
        self.app = app
        self.token = token
        self.max_body_bytes = max_body_bytes
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self._check(scope)
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


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, plus: a request head must arrive within the header
    timeout (a slow-headers client is cut off), and connections past the cap are closed."""

    header_timeout_s = 10.0
    max_connections = 256
    _head_timer: asyncio.TimerHandle | None = None
    _head_cycle: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.close()
            return
        self._arm()

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

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request's head is due within the timeout too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def uvicorn_config(app: ASGIApp, host: str, port: int, limits: ServerLimits, **extra: Any) -> uvicorn.Config:
    """uvicorn's settings for a server that holds against slow, many or greedy clients."""
    protocol = type("Guarded", (GuardedH11,), {"header_timeout_s": limits.header_timeout_s,
                                                "max_connections": limits.max_connections})  # fmt: skip
    return uvicorn.Config(app, host=host, port=port, http=protocol, timeout_keep_alive=limits.keep_alive_s,
                          limit_concurrency=limits.max_connections + 64,
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
