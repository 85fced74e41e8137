"""OpenAI's speech API as OpenAI defines it: `POST /v1/audio/speech` (every
`response_format`, streamed as soon as the first sentence is voiced, or as server-sent
events), `GET /v1/models`, OpenAI's voice names as aliases."""

from __future__ import annotations

import base64
import contextlib
import json
import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from engine.core.types import Voice
from engine.scheduler import RequestClass
from engine.server import flow
from engine.server.audio_out import (
    ResponseFormat,
    StreamEncoder,
    check_format,
    check_rate,
    headers,
)
from engine.server.errors import ERROR_RESPONSES, UnknownModel
from engine.server.listen import check_headers
from engine.server.pacing import paced
from engine.server.slotted import SlottedLine, check_slot
from engine.server.speech import MAX_TEXT_CHARS, SPEED_RANGE, SpeechService, at_speed

LIVE = RequestClass.SCRIPTED
"""HTTP requests compete by role weight and deadline (ad-libs would all be served FIFO first)."""
STARTED = int(time.time())
OPENAI_MODELS = ("tts-1", "tts-1-hd", "gpt-4o-mini-tts")
"""OpenAI's model names, accepted so that clients work unchanged; all voice with the
voice the `voice` field names."""


def no_surrogates(text: str) -> str:
    """Refuse text with lone UTF-16 surrogates (valid JSON escapes, not speakable text)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("contains a lone surrogate (not valid Unicode text)") from None
    return text


Text = Annotated[str, AfterValidator(no_surrogates)]
MEDIA_TYPES = ("audio/mpeg", "audio/ogg", "audio/aac", "audio/flac", "audio/wav", "audio/pcm")
SSE_TYPE = "text/event-stream"
AUDIO_TYPES: dict[str, Any] = {t: {} for t in (*MEDIA_TYPES, SSE_TYPE)}


class VoiceRef(BaseModel):
    """OpenAI's voice object (`{"id": "voice_1234"}`): here the id is what `voice` names."""

    model_config = ConfigDict(extra="ignore", strict=True)
    id: Text = Field(min_length=1, max_length=64)


class SpeechBody(BaseModel):
    """OpenAI's speech request. `voice` is a cast role, an OpenAI voice name (an alias of a
    configured voice) or a voice id, as a string or a voice object; it never adds a role."""

    model_config = ConfigDict(extra="ignore", strict=True)
    model: Text = Field(min_length=1, max_length=100)
    input: Text = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    voice: Annotated[Text, Field(min_length=1, max_length=64)] | VoiceRef
    instructions: Text | None = Field(None, max_length=4096, description="Ignored: no backend here "
                                      "can express free-text delivery instructions (the answer says so "
                                      "in X-Troupe-Ignored).")  # fmt: skip
    response_format: ResponseFormat = "mp3"
    speed: float = Field(1.0, ge=SPEED_RANGE[0], le=SPEED_RANGE[1], allow_inf_nan=False,
                         description="0.25 to 4.0: the voice's own rate as far as its range reaches, "
                         "a time-stretch (pitch and timbre kept) beyond.")  # fmt: skip
    stream_format: Literal["audio", "sse"] = "audio"
    sample_rate: Literal[8000, 12000, 16000, 22050, 24000, 44100, 48000] = Field(
        24_000,
        description="Troupe: the answer's sample rate in Hz (24000, as OpenAI's; "
        "Opus: 8000, 12000, 16000, 24000 or 48000).",
    )
    stream: bool = Field(True, description="Troupe (and Kokoro-FastAPI): false sends the whole file at "
                         "once, with its exact length in the header (FLAC always comes whole).")  # fmt: skip
    slot_s: float | None = Field(None, allow_inf_nan=False, description="Troupe: the seconds the line "
                                 "must fit; it is voiced chunk by chunk, each chunk's rate corrected by "
                                 "where the last one was heard to end.")  # fmt: skip
    slot_correction: bool = Field(True, description="Troupe: false voices a slotted line at one rate "
                                  "guessed up front (no correction; for comparison).")  # fmt: skip


def model_ids(service: SpeechService) -> list[str]:
    own = ["troupe-espeak"] + (["troupe-kokoro"] if "kokoro" in service.scheduler.backends else [])
    return [*OPENAI_MODELS, *own]


def _model(model_id: str) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": STARTED, "owned_by": "troupe"}


def router(service: SpeechService) -> APIRouter:
    api = APIRouter()

    @api.get("/v1/models", responses=ERROR_RESPONSES)
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [_model(m) for m in model_ids(service)]}

    @api.get("/v1/models/{model_id}", responses=ERROR_RESPONSES)
    async def model(model_id: str) -> Any:
        if model_id not in model_ids(service):
            raise HTTPException(404, f"unknown model {model_id!r}; GET /v1/models lists them")
        return _model(model_id)

    @api.post("/v1/audio/speech", responses={**ERROR_RESPONSES, 200: {"content": AUDIO_TYPES}},
              response_class=Response)  # fmt: skip
    async def speech(request: Request, body: SpeechBody) -> Response:
        """Speech for `input`, streamed (chunked) from the first voiced sentence on; `pcm` is
        24 kHz 16-bit little-endian mono as OpenAI's; FLAC comes whole (its stream form
        lacks the length that common readers need)."""
        if body.model not in model_ids(service):
            raise UnknownModel(
                f"unknown model {body.model!r}; GET /v1/models lists: {', '.join(model_ids(service))}"
            )
        check_format(body.response_format)
        check_rate(body.response_format, body.sample_rate)
        check_slot(body.slot_s, body.input)
        role, voice = service.resolve_voice(body.voice if isinstance(body.voice, str) else body.voice.id)
        extra = {"X-Troupe-Ignored": "instructions"} if body.instructions else {}
        if body.slot_s is not None:
            return await _slotted(request, service, body, role, at_speed(voice, body.speed), extra)
        rate = body.sample_rate
        if body.stream_format == "audio" and (body.response_format == "flac" or not body.stream):
            futures = service.submit(role, body.input, body.speed, LIVE, voice)
            audio = await flow.whole(request, futures)
            data = await flow.encoded(audio, body.response_format, rate)
            extra |= await check_headers(request, audio, body.input, voice.backend)
            return Response(data, headers={**headers(body.response_format, rate), **extra})
        speech = paced(service, role, body.input, body.speed, LIVE, voice)
        first = await flow.first_then_rest(request, speech)
        encoder = StreamEncoder(body.response_format, rate)
        if body.stream_format == "sse":
            usage = _Usage(body.input, encoder)
            events = _sse(flow.encoded_stream(first, speech, encoder, _delta), usage.done)
            return flow.Streamed(events, media_type="text/event-stream", headers=extra)
        hdrs = {**headers(body.response_format, rate), **extra}
        return flow.Streamed(flow.encoded_stream(first, speech, encoder), headers=hdrs)

    return api


async def _slotted(request: Request, service: SpeechService, body: SpeechBody, role: str, voice: Voice,
                   extra: dict[str, str]) -> Response:  # fmt: skip
    """A line that must fit `slot_s`: chunk by chunk, each one's rate corrected (`slotted`)."""
    line = SlottedLine(service, role, voice, body.input, LIVE, body.slot_s or 0.0, body.slot_correction)
    extra = {**extra, **line.headers()}
    fmt_headers = headers(body.response_format, body.sample_rate)
    if body.stream_format == "audio" and (body.response_format == "flac" or not body.stream):
        audio = await line.whole(request)
        data = await flow.encoded(audio, body.response_format, body.sample_rate)
        return Response(data, headers={**fmt_headers, **extra, **line.report.headers()})
    first = await line.first(request)
    encoder = StreamEncoder(body.response_format, body.sample_rate)
    if body.stream_format == "sse":
        events = _sse(line.encoded(first, encoder, _delta), lambda: {"troupe_slot": line.report.summary()})
        return flow.Streamed(events, media_type="text/event-stream", headers=extra)
    return flow.Streamed(line.encoded(first, encoder), headers={**fmt_headers, **extra})


def _delta(piece: bytes) -> bytes:
    event = {"type": "speech.audio.delta", "audio": base64.b64encode(piece).decode("ascii")}
    return f"data: {json.dumps(event)}\n\n".encode()


class _Usage:
    """What an SSE stream's `speech.audio.done` reports: the input as OpenAI counts it
    (tokens, estimated at 4 characters each: no tokenizer here), its characters, and the
    seconds of audio sent (what the encoder was fed)."""

    def __init__(self, text: str, encoder: StreamEncoder) -> None:
        self.chars = len(text)
        self.encoder = encoder

    def done(self) -> dict[str, Any]:
        seconds = self.encoder.fed_s
        tokens_in = max(1, -(-self.chars // 4))
        tokens_out = round(seconds * 10)  # about 10 audio tokens a second
        return {"usage": {"input_tokens": tokens_in, "output_tokens": tokens_out,
                          "total_tokens": tokens_in + tokens_out, "input_characters": self.chars,
                          "output_seconds": round(seconds, 3)}}  # fmt: skip


async def _sse(deltas: Any, more: Callable[[], dict[str, Any]] | None = None) -> Any:
    async with contextlib.aclosing(deltas):  # NB: closing this stream closes the one it wraps
        async for d in deltas:
            yield d
    done = {"type": "speech.audio.done", **(more() if more is not None else {})}
    if "usage" not in done:
        done["usage"] = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    yield f"data: {json.dumps(done)}\n\n".encode()
