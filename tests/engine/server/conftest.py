"""A real speech server (uvicorn) on an ephemeral 127.0.0.1 port, for the whole module."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from engine.server import SpeechService, SpeechSettings
from engine.server.http import create_app
from engine.server.limits import ServerLimits, uvicorn_config


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


TESTDATA = Path(__file__).resolve().parents[4] / "shared" / "testdata"


@pytest.fixture(scope="module")
def live_server() -> Iterator[LiveServer]:
    service = SpeechService(SpeechSettings(scripts_dir=TESTDATA, neural=False))
    server, thread, url = _start(service, None)
    yield LiveServer(url, service, None)
    server.should_exit = True
    thread.join(10)
    service.close()


@pytest.fixture
def token_server() -> Iterator[LiveServer]:
    service = SpeechService(SpeechSettings(neural=False))
    server, thread, url = _start(service, "s3cret")
    yield LiveServer(url, service, "s3cret")
    server.should_exit = True
    thread.join(10)
    service.close()
