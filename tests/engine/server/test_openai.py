"""The `openai` SDK, unchanged, against a real server: every format, streamed and not,
server-sent events, the speed range, OpenAI's voice names, the model list."""

from __future__ import annotations

import base64
import io
import json
import shutil
import subprocess

import numpy as np
import openai
import pytest
import soundfile as sf
from live_server import LiveServer
from pydantic import ValidationError

from engine.export import available_formats
from engine.server.audio_out import RESPONSE_FORMATS
from engine.server.openai_api import SpeechBody
from engine.server.roles import DEFAULT_ALIASES

TWO_SENTENCES = "The harbour lights burned low. Nobody came home that night."


@pytest.fixture(scope="module")
def client(live_server: LiveServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{live_server.url}/v1", api_key="unused-on-loopback", max_retries=0,
                         timeout=60)  # fmt: skip


def decode(data: bytes, fmt: str) -> tuple[np.ndarray, int]:
    """Samples and rate of an answer, by a reader other than the encoder's own."""
    if fmt == "pcm":
        return np.frombuffer(data, "<i2").astype(np.float32) / 32768, 24_000
    if fmt in ("aac", "flac"):  # libsndfile reads no ADTS; a reader that does
        ffmpeg = shutil.which("ffmpeg")
        if ffmpeg is None:
            pytest.skip("no ffmpeg to decode with")
        cmd = [ffmpeg, "-v", "error", "-i", "-", "-ac", "1", "-f", "f32le", "-ar", "48000", "-"]
        out = subprocess.run(cmd, input=data, capture_output=True, check=True, timeout=60).stdout
        return np.frombuffer(out, "<f4"), 48_000
    audio, rate = sf.read(io.BytesIO(data), dtype="float32")
    return audio, rate


@pytest.mark.slow
@pytest.mark.parametrize("fmt", RESPONSE_FORMATS)
def test_every_response_format_whole_and_streamed(client: openai.OpenAI, fmt: str) -> None:
    if fmt not in available_formats():
        with pytest.raises(openai.BadRequestError, match="this server writes"):
            client.audio.speech.create(model="tts-1", voice="alloy", input="Hi.", response_format=fmt)  # type: ignore[arg-type]
        return
    whole = client.audio.speech.create(model="tts-1", voice="alloy", input=TWO_SENTENCES, response_format=fmt)  # type: ignore[arg-type]
    audio, rate = decode(whole.content, fmt)
    assert 1.5 < len(audio) / rate < 10 and np.abs(audio).max() > 0.05, (fmt, len(audio), rate)
    with client.audio.speech.with_streaming_response.create(
        model="tts-1",
        voice="alloy",
        input=TWO_SENTENCES,
        response_format=fmt,  # type: ignore[arg-type]
    ) as resp:
        pieces = [p for p in resp.iter_bytes() if p]
        chunked = resp.headers.get("transfer-encoding") == "chunked"
    streamed, rate2 = decode(b"".join(pieces), fmt)
    assert abs(len(streamed) / rate2 - len(audio) / rate) < 0.2
    if fmt != "flac":  # FLAC comes whole (see the route's docstring)
        assert chunked


def test_pcm_is_24_khz_16_bit_mono_and_says_so(live_server: LiveServer, client: openai.OpenAI) -> None:
    import httpx

    body = {"model": "tts-1", "voice": "nova", "input": TWO_SENTENCES}
    pcm = httpx.post(
        f"{live_server.url}/v1/audio/speech", json={**body, "response_format": "pcm"}, timeout=60
    )
    wav = httpx.post(
        f"{live_server.url}/v1/audio/speech", json={**body, "response_format": "wav"}, timeout=60
    )
    assert pcm.headers["content-type"] == "audio/pcm" and pcm.headers["x-sample-rate"] == "24000"
    assert pcm.headers["x-channels"] == "1" and pcm.headers["x-sample-format"] == "s16le"
    audio, rate = sf.read(io.BytesIO(wav.content))
    assert abs(len(pcm.content) / 2 / 24_000 - len(audio) / rate) < 0.01  # same speech, half the rate


def test_stream_false_sends_the_whole_file_with_its_length(live_server: LiveServer) -> None:
    import httpx

    body = {
        "model": "tts-1",
        "voice": "fable",
        "input": TWO_SENTENCES,
        "response_format": "wav",
        "stream": False,
    }
    r = httpx.post(f"{live_server.url}/v1/audio/speech", json=body, timeout=60)
    assert int(r.headers["content-length"]) == len(r.content)
    assert int.from_bytes(r.content[76:80], "little") == len(r.content) - 80  # the data size, not 'unknown'
    audio, rate = sf.read(io.BytesIO(r.content))
    assert len(audio) / rate > 1.5


def test_default_format_is_mp3(client: openai.OpenAI) -> None:
    with client.audio.speech.with_streaming_response.create(model="tts-1", voice="echo", input="Hello.") as r:
        assert r.headers["content-type"] == "audio/mpeg"
        assert len(decode(r.read(), "mp3")[0]) > 0


def test_sse_sends_base64_deltas_then_done(client: openai.OpenAI) -> None:
    with client.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts",
        voice="coral",
        input=TWO_SENTENCES,
        response_format="wav",
        stream_format="sse",
    ) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        events = [json.loads(line[5:]) for line in resp.iter_lines() if line.startswith("data:")]
    assert [e["type"] for e in events] == ["speech.audio.delta"] * (len(events) - 1) + ["speech.audio.done"]
    assert len(events) >= 3  # at least one delta per sentence
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert len(decode(audio, "wav")[0]) > 48_000
    usage = events[-1]["usage"]
    assert {"input_tokens", "output_tokens", "total_tokens"} <= set(usage)
    assert usage["input_characters"] == len(TWO_SENTENCES) and usage["output_seconds"] > 0.5


@pytest.mark.slow
def test_speed_is_honoured_across_openais_range(client: openai.OpenAI) -> None:
    lengths = {}
    for speed in (0.25, 0.5, 1.0, 2.0, 4.0):  # 0.25 and 4: past the voice's rate, time-stretched
        r = client.audio.speech.create(
            model="tts-1", voice="onyx", input=TWO_SENTENCES, response_format="wav", speed=speed
        )
        lengths[speed] = len(decode(r.content, "wav")[0])
    assert lengths[0.25] > 1.5 * lengths[0.5] > 2.2 * lengths[1.0] > 3.3 * lengths[2.0] > 4.5 * lengths[4.0]
    for speed in (0.1, 4.5):  # beyond OpenAI's range
        with pytest.raises(openai.BadRequestError, match="speed"):
            client.audio.speech.create(model="tts-1", voice="onyx", input="Hi.", speed=speed)


def test_openai_voice_names_voice_lines_without_adding_roles(live_server: LiveServer,
                                                              client: openai.OpenAI) -> None:  # fmt: skip
    before = set(live_server.service.roles())
    for name in DEFAULT_ALIASES:
        r = client.audio.speech.create(model="tts-1", voice=name, input="Yes.", response_format="wav")  # type: ignore[arg-type]
        assert len(decode(r.content, "wav")[0]) > 4_800, name
    assert set(live_server.service.roles()) == before
    with pytest.raises(openai.BadRequestError, match=r"unknown voice 'klingon'.*alloy"):
        client.audio.speech.create(model="tts-1", voice="klingon", input="Hi.")  # type: ignore[arg-type]


def test_instructions_are_said_to_be_ignored(client: openai.OpenAI) -> None:
    with client.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts", voice="sage", input="Hello.", instructions="Whisper.", response_format="wav"
    ) as r:
        assert r.headers["x-troupe-ignored"] == "instructions"


def test_models_list_and_retrieve(client: openai.OpenAI) -> None:
    ids = [m.id for m in client.models.list()]
    assert {"tts-1", "tts-1-hd", "gpt-4o-mini-tts", "troupe-espeak"} <= set(ids)
    assert client.models.retrieve("tts-1").owned_by == "troupe"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("whisper-9")
    with pytest.raises(openai.NotFoundError, match="unknown model"):
        client.audio.speech.create(model="whisper-9", voice="alloy", input="Hi.")


def test_input_limit_is_openais() -> None:
    assert SpeechBody(model="tts-1", input="x" * 4096, voice="alloy").input
    with pytest.raises(ValidationError):
        SpeechBody(model="tts-1", input="x" * 4097, voice="alloy")


def test_dialogue_turns_come_back_as_one_file_voiced_by_role(live_server: LiveServer) -> None:
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    u = live_server.url
    assert httpx.put(f"{u}/v1/roles/hero", json={"voice_id": "en-gb", "weight": 5}).status_code == 200
    turns = [{"voice": "hero", "text": "Who goes there?"}, {"voice": "alloy", "text": "A friend. Let me in."},
             {"voice": "en-us+m3", "text": "Quiet, both of you."}]  # fmt: skip
    single = []
    for t in turns:
        body = {"model": "tts-1", "voice": t["voice"], "input": t["text"], "response_format": "wav",
                "stream": False}  # fmt: skip
        r = httpx.post(f"{u}/v1/audio/speech", json=body, timeout=60)
        single.append(len(sf.read(io.BytesIO(r.content))[0]))
    r = httpx.post(f"{u}/v1/audio/dialogue", json={"turns": turns, "pause_s": 0.5, "response_format": "wav"},
                   timeout=60)  # fmt: skip
    assert r.status_code == 200, r.text
    audio, rate = sf.read(io.BytesIO(r.content))
    # each turn once, with the pauses (espeak-ng's length varies by a few samples from run to run)
    assert abs(len(audio) - (sum(single) + 2 * round(0.5 * rate))) < 0.02 * rate
    gap, slack = round(0.5 * rate), round(0.02 * rate)
    for end in (single[0], single[0] + gap + single[1]):  # the pauses fall where the turns, in order, end
        assert np.abs(audio[end + slack : end + gap - slack]).max() < 1e-3
    text = httpx.get(f"{u}/metrics").text
    roles = {s.labels["role"] for f in text_string_to_metric_families(text) for s in f.samples
             if s.name == "troupe_requests_total"}  # fmt: skip
    assert {"HERO", "ALLOY", "VOICE:ESPEAK"} <= roles  # every turn went through the scheduler under its role
    bad = httpx.post(f"{u}/v1/audio/dialogue", json={"turns": [*turns, {"voice": "klingon", "text": "Hi."}]})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "voice"
