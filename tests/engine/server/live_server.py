"""A real speech server (uvicorn) on an ephemeral 127.0.0.1 port (imported by name: a
`conftest` module name is shared by every test folder)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from engine.server import SpeechService
from engine.server.http import create_app
from engine.server.limits import ServerLimits, uvicorn_config


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a `main.py serve` process)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveServer:
    url: str
    service: SpeechService
    token: str | None


def _start(service: SpeechService, token: str | None, limits: ServerLimits | None = None,
           hosts: frozenset[str] | None = None) -> tuple[uvicorn.Server, threading.Thread, str]:  # fmt: skip
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    limits = limits or ServerLimits()
    app = create_app(service, token, limits, hosts)
    config = uvicorn_config(app, "127.0.0.1", port, limits, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def serving(service: SpeechService, token: str | None = None,
            limits: ServerLimits | None = None) -> Iterator[LiveServer]:  # fmt: skip
    """`service` behind a real uvicorn for the block; the server stops and the service
    closes after it."""
    server, thread, url = _start(service, token, limits)
    try:
        yield LiveServer(url, service, token)
    finally:
        server.should_exit = True
        thread.join(10)
        service.close()


TESTDATA = Path(__file__).resolve().parents[2] / "data" / "samples"
