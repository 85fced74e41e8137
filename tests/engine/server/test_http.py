"""Every endpoint of the speech server, against the real server over HTTP."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf
from live_server import LiveServer
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[3]


def _cast(s: LiveServer, role: str, **voice: object) -> None:
    r = httpx.put(f"{s.url}/v1/roles/{role}", json=voice)
    assert r.status_code == 200, r.text


def test_tts_returns_wav_flac_and_pcm(live_server: LiveServer) -> None:
    _cast(live_server, "hero", voice_id="en-gb", weight=5)
    for fmt in ("wav", "flac"):
        r = httpx.get(f"{live_server.url}/tts", params={"role": "hero", "text": "Stand your ground.",
                                                        "format": fmt}, timeout=30)  # fmt: skip
        assert r.status_code == 200 and r.headers["content-type"] == f"audio/{fmt}"
        audio, rate = sf.read(io.BytesIO(r.content))
        assert rate == 48_000 and 0.5 < len(audio) / rate < 5 and np.abs(audio).max() > 0.05
    r = httpx.get(f"{live_server.url}/tts", params={"role": "hero", "text": "Hold.", "format": "pcm"})
    pcm = np.frombuffer(r.content, "<i2")
    assert r.status_code == 200 and pcm.size > 4800 and np.abs(pcm).max() > 1000


def test_streaming_sends_each_sentence_as_it_is_made(live_server: LiveServer) -> None:
    _cast(live_server, "narrator")
    text = "The night was long. The harbour lights burned low. Nobody came home."
    with httpx.stream("GET", f"{live_server.url}/tts", params={"role": "narrator", "text": text,
                                                              "stream": 1}, timeout=30) as r:  # fmt: skip
        assert r.status_code == 200 and r.headers["x-sample-rate"] == "48000"
        pieces = [p for p in r.iter_raw() if p]
    whole = np.frombuffer(b"".join(pieces), "<i2")
    single = httpx.get(f"{live_server.url}/tts", params={"role": "narrator", "text": text, "format": "pcm"})
    assert len(pieces) >= 2  # chunked transfer: more than one piece came
    assert abs(whole.size - np.frombuffer(single.content, "<i2").size) < 48_000 * 0.5


def test_openai_speech_request_shape(live_server: LiveServer) -> None:
    body = {"model": "tts-1", "input": "Good evening, this is the last broadcast.", "voice": "en-us",
            "response_format": "wav", "speed": 1.25}  # fmt: skip
    r = httpx.post(f"{live_server.url}/v1/audio/speech", json=body, timeout=30)
    assert r.status_code == 200 and r.headers["content-type"] == "audio/wav"
    fast = sf.read(io.BytesIO(r.content))[0]
    slow = sf.read(io.BytesIO(httpx.post(f"{live_server.url}/v1/audio/speech",
                                         json={**body, "speed": 0.75}, timeout=30).content))[0]  # fmt: skip
    assert len(fast) < len(slow)  # speed is honoured
    voices = httpx.get(f"{live_server.url}/v1/voices").json()
    assert "en-us" in voices["voices"] and "EN-US" not in voices["roles"]  # a voice adds no role
    assert httpx.get(f"{live_server.url}/v1/audio/voices").json() == voices


def test_roles_load_script_and_patch_live(live_server: LiveServer, testdata: Path) -> None:
    r = httpx.post(f"{live_server.url}/v1/script", json={"path": str(testdata / "radio_play.txt")})
    assert r.status_code == 200, r.text
    roles = r.json()["roles"]
    listed = httpx.get(f"{live_server.url}/v1/roles").json()["roles"]
    assert set(roles) <= set(listed)
    role = roles[0]
    r = httpx.patch(f"{live_server.url}/v1/roles/{role}", json={"weight": 9.5, "pitch": 70})
    assert r.status_code == 200 and r.json()["voice"]["weight"] == 9.5
    assert live_server.service.scheduler.weights[role] == 9.5


@pytest.mark.slow
def test_bad_input_is_a_4xx_with_a_json_body(live_server: LiveServer, testdata: Path) -> None:
    u = live_server.url
    cases = [
        httpx.get(f"{u}/tts", params={"role": "nobody", "text": "hi"}),
        httpx.get(f"{u}/tts", params={"role": "hero", "text": ""}),
        httpx.get(f"{u}/tts", params={"role": "hero", "text": "x" * 5000}),
        httpx.get(f"{u}/tts", params={"role": "hero", "text": "hi", "format": "m4a"}),
        httpx.get(f"{u}/tts", params={"role": "hero", "text": "hi", "speed": "fast"}),
        httpx.post(f"{u}/v1/audio/speech", json={"input": "hi"}),
        httpx.post(
            f"{u}/v1/audio/speech", content=b"{not json", headers={"content-type": "application/json"}
        ),
        httpx.post(f"{u}/v1/audio/speech", json={"input": "hi", "voice": "x", "speed": 9}),
        httpx.patch(f"{u}/v1/roles/NOBODY", json={"weight": 2}),
        httpx.patch(f"{u}/v1/roles/HERO", json={"weight": -1}),
        httpx.patch(f"{u}/v1/roles/HERO", json={"voice_id": "klingon"}),
        httpx.patch(f"{u}/v1/roles/HERO", json={"colour": "red"}),
        httpx.post(f"{u}/v1/script", json={"path": str(testdata / "bad_encoding.fountain")}),
        httpx.post(f"{u}/v1/script", json={"path": "no_such_script.fountain"}),
        httpx.post(f"{u}/v1/script", json={"path": "/etc/passwd"}),
        httpx.post(f"{u}/v1/script", json={"path": "../../main/README.md"}),
        httpx.post(
            f"{u}/v1/audio/speech", content=b"x" * 100_000, headers={"content-type": "application/json"}
        ),
    ]
    for r in cases:
        assert 400 <= r.status_code < 500, (r.request.url, r.status_code, r.text)
        error = r.json()["error"]  # OpenAI's one error shape, validation included
        assert set(error) == {"message", "type", "param", "code"} and error["message"], r.text
    assert cases[0].status_code == 404 and "unknown role" in cases[0].json()["error"]["message"]
    assert "bad_encoding.fountain" in cases[12].json()["error"]["message"]
    assert "outside the server's scripts folder" in cases[14].json()["error"]["message"]


def test_metrics_parse_and_carry_role_priority(live_server: LiveServer) -> None:
    _cast(live_server, "hero")
    httpx.get(
        f"{live_server.url}/tts", params={"role": "hero", "text": "Counting for the metrics."}, timeout=30
    )
    text = httpx.get(f"{live_server.url}/metrics").text
    names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    assert {"troupe_role_priority", "troupe_queue_depth", "troupe_request_latency_seconds_bucket",
            "troupe_batch_size_count", "troupe_synthesis_real_time_ratio", "troupe_requests_total",
            "troupe_engine_errors_total", "troupe_requests_refused_total"} <= names  # fmt: skip
    assert not any("klass" in line for line in text.splitlines())  # one naming convention
    roles = {s.labels["role"] for f in text_string_to_metric_families(text) for s in f.samples
             if s.name == "troupe_role_priority"}  # fmt: skip
    assert "HERO" in roles


@pytest.mark.slow
def test_probe_once_json_against_the_server(live_server: LiveServer) -> None:
    _cast(live_server, "hero")
    httpx.get(f"{live_server.url}/tts", params={"role": "hero", "text": "Probe me."}, timeout=30)
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "probe", "--mode=once", "--json", "--interval=100ms",
         "--url", live_server.url], capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert "HERO" in data["priorities"] and data["requests_total"] >= 1 and data["p50_ms"] > 0


def test_bearer_token_guards_everything_but_health(token_server: LiveServer) -> None:
    u = token_server.url
    assert httpx.get(f"{u}/healthz").status_code == 200
    assert httpx.get(f"{u}/v1/roles").status_code == 401
    assert httpx.get(f"{u}/v1/roles", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(f"{u}/v1/roles", headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_openai_sdk_client_works_unchanged(live_server: LiveServer) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=f"{live_server.url}/v1", api_key="not-needed-on-loopback", max_retries=0)
    resp = client.audio.speech.create(model="tts-1", voice="en-us", input="Hello from the SDK.",
                                      response_format="wav")  # fmt: skip
    audio, rate = sf.read(io.BytesIO(resp.content))
    assert rate == 24_000 and len(audio) > 0.3 * rate and np.abs(audio).max() > 0.05  # as OpenAI's
