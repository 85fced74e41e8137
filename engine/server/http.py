"""The HTTP API (FastAPI): `/tts`, OpenAI-compatible `/v1/audio/speech`, voices, roles,
scripts, `/metrics`. Bad input gets a 4xx with a JSON body, never a 500."""

from __future__ import annotations

import asyncio
import contextlib
import io
import math
import secrets
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import numpy as np
import soundfile as sf
from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from engine.core.errors import CastError, QueueFull, ScriptError, TroupeError
from engine.core.limits import limit
from engine.core.types import SAMPLE_RATE_HZ
from engine.scheduler import RequestClass
from engine.server.speech import MAX_TEXT_CHARS, SpeechService, cancel, role_key
from engine.synthesis.base import Mono

Format = Literal["wav", "flac", "pcm"]
MEDIA = {"wav": "audio/wav", "flac": "audio/flac", "pcm": "audio/L16"}
MAX_BODY_BYTES = 64 * 1024
OPEN_PATHS = ("/healthz", "/readyz")
LIVE = RequestClass.SCRIPTED
"""HTTP requests compete by role weight and deadline (ad-libs would all be served FIFO first)."""


class SpeechBody(BaseModel):
    """OpenAI's speech request; `voice` is a role (cast on first use) or an espeak-ng voice."""

    model_config = ConfigDict(extra="ignore")
    model: str = Field("troupe-espeak", max_length=100)
    input: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    voice: str = Field(min_length=1, max_length=64)
    response_format: Literal["wav", "flac", "pcm"] = "wav"
    speed: float = Field(1.0, ge=0.25, le=4.0)


class RolePatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    voice_id: str | None = Field(None, max_length=64)
    weight: float | None = Field(None, ge=limit("weight")[0], le=limit("weight")[1])
    rate_wpm: int | None = Field(None, ge=limit("rate_wpm")[0], le=limit("rate_wpm")[1])
    pitch: int | None = Field(None, ge=limit("pitch")[0], le=limit("pitch")[1])
    gain_db: float | None = Field(None, ge=limit("gain_db")[0], le=limit("gain_db")[1])
    pan: float | None = Field(None, ge=limit("pan")[0], le=limit("pan")[1])


class ScriptBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1, max_length=4096)


def encode(audio: Mono, fmt: str) -> bytes:
    """Mono float32 at the engine rate as WAV/FLAC (16-bit) or raw little-endian PCM16."""
    pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2")
    if fmt == "pcm":
        return pcm.tobytes()
    buf = io.BytesIO()
    sf.write(buf, pcm, SAMPLE_RATE_HZ, format=fmt.upper(), subtype="PCM_16")
    return buf.getvalue()


class Guard:
    """Body size and bearer token, checked before any route runs. A plain ASGI middleware:
    it leaves `receive` untouched, so a route can see its client disconnect."""

    def __init__(self, app: ASGIApp, token: str | None = None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = self._check(Request(scope))
            if problem is not None:
                await problem(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _check(self, request: Request) -> JSONResponse | None:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            return _error(413, f"request body over {MAX_BODY_BYTES} bytes")
        if self.token and request.url.path not in OPEN_PATHS:
            given = request.headers.get("authorization", "")
            if not secrets.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
                return _error(401, "missing or wrong bearer token")
        return None


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "status": status}}, status_code=status)


def create_app(service: SpeechService, token: str | None = None) -> FastAPI:
    app = FastAPI(title="Troupe speech server", version="1")

    app.add_middleware(Guard, token=token)

    @app.exception_handler(ClientGone)
    async def client_gone(_r: Request, _exc: ClientGone) -> Response:
        return Response(status_code=499)  # nobody reads it: the connection is closed

    @app.exception_handler(CastError)
    async def cast_error(_r: Request, exc: CastError) -> JSONResponse:
        return _error(404 if "unknown role" in str(exc) else 400, str(exc))

    @app.exception_handler(ScriptError)
    async def script_error(_r: Request, exc: ScriptError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(QueueFull)
    async def queue_full(_r: Request, exc: QueueFull) -> JSONResponse:
        response = _error(503, str(exc))
        response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_s)))
        return response

    @app.exception_handler(TroupeError)
    async def troupe_error(_r: Request, exc: TroupeError) -> JSONResponse:
        return _error(400 if "failed" not in str(exc) else 502, str(exc))

    async def speak(request: Request, role: str, text: str, speed: float) -> Mono:
        futures = service.submit(role, text, speed, LIVE)
        try:
            parts = await _unless_disconnected(request, asyncio.gather(*map(asyncio.wrap_future, futures)))
        finally:
            cancel(futures)  # a client that left (or any error) withdraws what is still queued
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    @app.get("/healthz")
    async def healthz() -> Response:
        if not service.healthy:
            return _error(503, "the engine loop has stalled")
        return JSONResponse({"status": "ok", "engine_errors": service.engine_errors})

    @app.get("/readyz")
    async def readyz() -> Response:
        if not service.ready:
            return _error(503, "not accepting work (engine stalled or queue full)")
        return JSONResponse({"status": "ready", "queue_depth": service.scheduler.pending_count})

    @app.get("/tts", responses={200: {"content": {"audio/wav": {}}}})
    async def tts(
        request: Request,
        role: Annotated[str, Query(min_length=1, max_length=64)],
        text: Annotated[str, Query(min_length=1, max_length=MAX_TEXT_CHARS)],
        format: Format = "wav",
        stream: bool = False,
        speed: Annotated[float, Query(ge=0.25, le=4.0)] = 1.0,
    ) -> Response:
        if not stream:
            audio = await speak(request, role, text, speed)
            return Response(encode(audio, format), media_type=MEDIA[format])
        futures = service.submit(role, text, speed, LIVE)

        async def chunks() -> AsyncIterator[bytes]:
            try:
                for f in futures:  # raw PCM16 chunks, in order, each as soon as it is voiced
                    yield encode(await asyncio.wrap_future(f), "pcm")
            finally:
                cancel(futures)  # the client left mid-stream: the rest is withdrawn

        headers = {"X-Sample-Rate": str(SAMPLE_RATE_HZ), "X-Channels": "1"}
        return StreamingResponse(chunks(), media_type="audio/L16", headers=headers)

    @app.post("/v1/audio/speech", responses={200: {"content": {"audio/wav": {}}}})
    async def openai_speech(request: Request, body: SpeechBody) -> Response:
        role = body.voice
        if role_key(role) not in service.roles():
            service.add_role(role, **({"voice_id": role} if _is_voice(service, role) else {}))
        audio = await speak(request, role, body.input, body.speed)
        return Response(encode(audio, body.response_format), media_type=MEDIA[body.response_format])

    @app.get("/v1/voices")
    @app.get("/v1/audio/voices")
    async def voices() -> dict[str, Any]:
        return {"voices": service.neural_voice_ids() + service.voice_ids, "roles": sorted(service.roles())}

    @app.get("/v1/roles")
    async def roles() -> dict[str, Any]:
        return {"roles": {r: v.to_dict() for r, v in sorted(service.roles().items())}}

    @app.patch("/v1/roles/{role}")
    async def patch_role(role: str, body: RolePatch) -> dict[str, Any]:
        changes = body.model_dump(exclude_none=True)
        return {"role": role_key(role), "voice": service.update_role(role, **changes).to_dict()}

    @app.put("/v1/roles/{role}")
    async def put_role(role: str, body: RolePatch) -> dict[str, Any]:
        changes = body.model_dump(exclude_none=True)
        return {"role": role_key(role), "voice": service.add_role(role, **changes).to_dict()}

    @app.post("/v1/script")
    async def load(body: ScriptBody) -> dict[str, Any]:
        script = await run_in_threadpool(service.load_script, body.path)
        return {"title": script.title, "cues": len(script.cues), "roles": list(script.roles)}

    @app.get("/metrics")
    async def metrics() -> Response:
        service.telemetry.update_windows()
        return Response(generate_latest(service.telemetry.registry), media_type=CONTENT_TYPE_LATEST)

    return app


class ClientGone(Exception):
    """The client hung up while its speech was being made."""


async def _unless_disconnected(request: Request, work: asyncio.Future[list[Mono]]) -> list[Mono]:
    """Await `work`; if the client hangs up first, cancel it and raise `ClientGone`. The
    hang-up is seen at once: a task waits on the connection's own disconnect message."""
    gone = asyncio.ensure_future(_disconnected(request))
    waiting: list[asyncio.Future[Any]] = [work, gone]
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if work.done():
        return work.result()
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await work  # collects the cancellation, so nothing is left unretrieved
    raise ClientGone


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _is_voice(service: SpeechService, name: str) -> bool:
    try:
        service.check_voice(name)
    except CastError:
        return False
    return True
