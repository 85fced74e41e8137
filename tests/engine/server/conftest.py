"""A real speech server (uvicorn) on an ephemeral 127.0.0.1 port, for the whole module
(the helpers are in live_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from live_server import TESTDATA, LiveServer, serving

from engine.server import SpeechService, SpeechSettings


@pytest.fixture(scope="module")
def live_server() -> Iterator[LiveServer]:
    with serving(SpeechService(SpeechSettings(scripts_dir=TESTDATA, neural=False))) as live:
        yield live


@pytest.fixture
def token_server() -> Iterator[LiveServer]:
    with serving(SpeechService(SpeechSettings(neural=False)), "s3cret") as live:
        yield live
