"""A real speech server (uvicorn) on an ephemeral 127.0.0.1 port, for the whole module
(the helpers are in live_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from live_server import TESTDATA, LiveServer, _start

from engine.server import SpeechService, SpeechSettings


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
