"""OpenAI conformance of the speech server on a real uvicorn: each documented error's status,
`param`, `code` and headers; the whole speed range 0.25-4.0 by duration and by ear (ASR);
voices given as an object; usage counted in SSE; the OpenAPI schema lists what is sent;
every voice `GET /v1/voices` lists can speak."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from live_server import LiveServer, serving

from engine.asr import asr_available, normalise, shared_transcriber, wer
from engine.server import SpeechService, SpeechSettings

LINE = "The harbour lights burned low over the quiet water tonight."


def _speech(s: LiveServer, **body: object) -> httpx.Response:
    return httpx.post(f"{s.url}/v1/audio/speech", json=body, timeout=120)


def _error(r: httpx.Response) -> dict[str, object]:
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
    return dict(body["error"])


@pytest.mark.parametrize(
    ("body", "status", "param", "code"),
    [
        ({"input": "hi", "voice": "alloy"}, 400, "model", "missing_required_parameter"),
        ({"model": "tts-1", "voice": "alloy"}, 400, "input", "missing_required_parameter"),
        ({"model": "tts-1", "input": "hi"}, 400, "voice", "missing_required_parameter"),
        ({"model": "tts-9", "input": "hi", "voice": "alloy"}, 404, "model", "model_not_found"),
        ({"model": "tts-1", "input": "hi", "voice": "klingon"}, 400, "voice", "invalid_value"),
        ({"model": "tts-1", "input": "hi", "voice": "alloy", "speed": 4.5}, 400, "speed", "invalid_value"),
        ({"model": "tts-1", "input": "hi", "voice": "alloy", "speed": "2"}, 400, "speed", "invalid_value"),
        ({"model": "tts-1", "input": "", "voice": "alloy"}, 400, "input", "invalid_value"),
        ({"model": "tts-1", "input": "hi", "voice": {"name": "x"}}, 400, "voice", "invalid_value"),
        ({"model": "tts-1", "input": "hi", "voice": "alloy", "response_format": "m4a"}, 400,
         "response_format", "invalid_value"),
    ],
)  # fmt: skip
def test_each_error_names_its_param_and_code(
    live_server: LiveServer, body: dict[str, object], status: int, param: str, code: str
) -> None:
    r = _speech(live_server, **body)
    assert r.status_code == status, r.text
    e = _error(r)
    assert (e["param"], e["code"]) == (param, code), e
    assert e["type"] == ("not_found_error" if status == 404 else "invalid_request_error")


def test_a_body_that_is_not_json_has_no_param(live_server: LiveServer) -> None:
    r = httpx.post(f"{live_server.url}/v1/audio/speech", content=b'{"model": "tts-1", "inp',
                   headers={"content-type": "application/json"})  # fmt: skip
    assert r.status_code == 400
    e = _error(r)
    assert e["param"] is None and "could not parse the JSON body" in str(e["message"])


@pytest.mark.parametrize("fmt", ["wav", "flac", "mp3", "opus"])
@pytest.mark.parametrize("stream", [False, True])
def test_answers_are_24_khz_as_openai_or_as_asked(live_server: LiveServer, fmt: str, stream: bool) -> None:
    import io

    import soundfile as sf

    for rate in (None, 48_000, 16_000):
        extra = {"sample_rate": rate} if rate else {}
        r = _speech(live_server, model="tts-1", input="Good evening.", voice="alloy", response_format=fmt,
                    stream=stream, **extra)  # fmt: skip
        assert r.status_code == 200, r.text
        info = sf.info(io.BytesIO(r.content))
        assert info.samplerate == (rate or 24_000) and info.channels == 1, (fmt, stream, rate, info)
        assert r.headers["X-Sample-Rate"] == str(rate or 24_000)
        if not stream or fmt == "flac":
            assert 0.4 < info.duration < 3.0, (fmt, info.duration)  # the length is in the header
    r = _speech(
        live_server, model="tts-1", input="Hi.", voice="alloy", response_format="opus", sample_rate=44_100
    )
    assert r.status_code == 400 and _error(r)["param"] == "sample_rate"


def test_a_voice_object_is_a_voice(live_server: LiveServer) -> None:
    r = _speech(
        live_server, model="tts-1", input="Hello there.", voice={"id": "alloy"}, response_format="wav"
    )
    assert r.status_code == 200 and r.content[:4] == b"RIFF"


def test_a_long_script_name_is_a_400_not_a_500(live_server: LiveServer) -> None:
    r = httpx.post(f"{live_server.url}/v1/script", json={"path": "a" * 300 + ".fountain"})
    assert r.status_code == 400 and "not a usable file path" in str(_error(r)["message"])


def test_the_schema_lists_the_statuses_sent(live_server: LiveServer) -> None:
    spec = httpx.get(f"{live_server.url}/openapi.json").json()
    responses = spec["paths"]["/v1/audio/speech"]["post"]["responses"]
    assert "422" not in responses and "400" in responses
    assert not any(
        "422" in op.get("responses", {}) for path in spec["paths"].values() for op in path.values()
    )


def test_sse_usage_is_counted(live_server: LiveServer) -> None:
    r = _speech(
        live_server, model="tts-1", input=LINE, voice="alloy", stream_format="sse", response_format="pcm"
    )
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    audio = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    usage = events[-1]["usage"]
    assert events[-1]["type"] == "speech.audio.done"
    assert usage["input_characters"] == len(LINE)
    assert usage["output_seconds"] == pytest.approx(len(audio) / 48_000, abs=0.002)
    assert (
        usage["input_tokens"] > 0 and usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    )


def _pcm(s: LiveServer, speed: float, voice: str = "en-us") -> np.ndarray:
    r = _speech(s, model="tts-1", input=LINE, voice=voice, speed=speed, response_format="pcm", stream=False)
    assert r.status_code == 200, r.text
    return np.frombuffer(r.content, "<i2").astype(np.float32) / 32768


def _spoken_s(audio: np.ndarray) -> float:
    """From the first to the last sample above -40 dBFS (leading and trailing silence out)."""
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    return float(loud[-1] - loud[0]) / 24_000 if loud.size else 0.0


def _lengths_follow_speed(s: LiveServer, voice: str) -> dict[float, np.ndarray]:
    base = _spoken_s(_pcm(s, 1.0, voice))
    out = {}
    for speed in (0.25, 0.5, 2.0, 4.0):
        out[speed] = _pcm(s, speed, voice)
        ratio = _spoken_s(out[speed]) * speed / base
        assert 0.8 < ratio < 1.25, (voice, speed, ratio)
    return out


@pytest.mark.slow
def test_the_whole_openai_speed_range_on_espeak(live_server: LiveServer) -> None:
    """0.25 and 4.0 lie past espeak-ng's rate range at 175 wpm (0.46-2.57): its rate makes
    it slower, a time-stretch faster and past the range; each speed's spoken length is
    1/speed of speed 1's (within 20%)."""
    _lengths_follow_speed(live_server, "en-us")


@pytest.fixture(scope="module")
def natural_server() -> Iterator[LiveServer]:
    # the default install's natural voices, with time to voice them on a busy test machine
    # (a line past its deadline would be voiced by the espeak-ng stand-in instead)
    with serving(SpeechService(SpeechSettings(budget_s=60, give_up_s=600))) as live:
        yield live


@pytest.mark.slow
def test_the_whole_openai_speed_range_on_the_natural_voice(natural_server: LiveServer) -> None:
    """Kokoro (the default cast's voice) at 0.25, 0.5, 2 and 4: the length follows the speed
    and, with the recogniser installed, the words are heard up to 2x (4x: most of them)."""
    voiced = _lengths_follow_speed(natural_server, "kokoro:ada")
    if asr_available() is not None:
        return
    texts = {s: shared_transcriber().transcribe(a, 24_000).text for s, a in voiced.items()}
    heard = {s: wer(normalise(LINE), normalise(t)) for s, t in texts.items()}
    assert max(heard[0.25], heard[0.5], heard[2.0]) <= 0.35, (heard, texts)


@pytest.mark.slow
def test_every_listed_voice_speaks(natural_server: LiveServer) -> None:
    listed = httpx.get(f"{natural_server.url}/v1/voices").json()["voices"]
    natural = [v for v in listed if ":" in v]
    assert any(v.startswith("piper:") for v in natural) and any(v.startswith("kokoro:") for v in natural)
    pick = [next(v for v in natural if v.startswith(b + ":")) for b in ("piper", "kokoro")] + [listed[-1]]
    for voice in pick:
        r = _speech(natural_server, model="tts-1", input="Good evening.", voice=voice, response_format="pcm",
                    stream=False)  # fmt: skip
        assert r.status_code == 200 and len(r.content) > 24_000, (voice, r.status_code, r.text[:200])
        put = httpx.put(f"{natural_server.url}/v1/roles/narrator", json={"voice_id": voice})
        assert put.status_code == 200, (voice, put.text)
