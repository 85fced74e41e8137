"""The line check on request: `X-Troupe-Check: 1` gets the voiced line's WER in a header."""

from __future__ import annotations

import httpx
import pytest
from live_server import LiveServer

from engine.asr import asr_available

WHY_NOT = asr_available()


def test_no_check_unless_asked(live_server: LiveServer) -> None:
    httpx.put(f"{live_server.url}/v1/roles/caller", json={"voice_id": "en-us"})
    r = httpx.get(f"{live_server.url}/tts", params={"role": "caller", "text": "Hello."}, timeout=30)
    assert r.status_code == 200 and "x-troupe-check" not in r.headers and "x-troupe-wer" not in r.headers


@pytest.mark.slow
@pytest.mark.skipif(WHY_NOT is not None, reason=f"no speech recognition: {WHY_NOT}")
def test_check_header_scores_the_line(live_server: LiveServer) -> None:
    httpx.put(f"{live_server.url}/v1/roles/caller", json={"voice_id": "en-us"})
    ask = {"X-Troupe-Check": "1"}
    text = "She closed the door and sat down by the window."
    r = httpx.get(f"{live_server.url}/tts", params={"role": "caller", "text": text}, headers=ask, timeout=60)
    assert r.status_code == 200 and r.headers["x-troupe-check"] == "ok", r.headers
    assert float(r.headers["x-troupe-wer"]) <= 0.2
    body = {"model": "tts-1", "input": "Call the doctor and tell him to come now.", "voice": "en-us",
            "response_format": "wav", "stream": False}  # fmt: skip
    r = httpx.post(f"{live_server.url}/v1/audio/speech", json=body, headers=ask, timeout=60)
    assert r.status_code == 200 and float(r.headers["x-troupe-wer"]) <= 0.2
    streamed = httpx.post(f"{live_server.url}/v1/audio/speech", json={**body, "stream": True}, headers=ask,
                          timeout=60)  # fmt: skip
    assert streamed.status_code == 200 and "x-troupe-check" not in streamed.headers  # whole answers only
