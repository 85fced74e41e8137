"""The HTTP API (FastAPI): `/tts`, OpenAI's `/v1/audio/speech` and `/v1/models`
(`openai_api`), voices, roles, scripts, `/metrics`. Bad input gets a 4xx with OpenAI's
error body (`errors`), never a 500; `limits` holds the server against its clients."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from engine.core.limits import limit
from engine.core.types import SAMPLE_RATE_HZ
from engine.server import dialogue, errors, flow
from engine.server.audio_out import ResponseFormat, StreamEncoder, check_format, headers
from engine.server.errors import ERROR_RESPONSES, error
from engine.server.limits import Guard, ServerLimits
from engine.server.listen import check_headers, wants_check
from engine.server.openai_api import AUDIO_TYPES, LIVE, Text, router
from engine.server.pacing import paced
from engine.server.slotted import SlottedLine, check_slot
from engine.server.speech import MAX_TEXT_CHARS, SPEED_RANGE, SpeechService, at_speed, role_key
from engine.synthesis import lexicon
from engine.synthesis.kokoro import warming


def _number(name: str) -> Any:
    lo, hi = limit(name)
    return Field(None, ge=lo, le=hi, allow_inf_nan=False)


class RolePatch(BaseModel):
    """A role's voice settings; numbers must be JSON numbers (no strings, no booleans)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    voice_id: Text | None = Field(None, min_length=1, max_length=64)
    weight: float | None = _number("weight")
    rate_wpm: int | None = _number("rate_wpm")
    pitch: int | None = _number("pitch")
    gain_db: float | None = _number("gain_db")
    pan: float | None = _number("pan")


class LexiconBody(BaseModel):
    """Word -> `/IPA/` or a respelling in plain words."""

    model_config = ConfigDict(extra="forbid", strict=True)
    lexicon: dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=256)]] = Field(
        max_length=2000
    )


class ScriptBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    path: Text = Field(min_length=1, max_length=4096)


def create_app(service: SpeechService, token: str | None = None, limits: ServerLimits | None = None,
               hosts: frozenset[str] | None = None) -> FastAPI:  # fmt: skip
    """The server's app: every route behind the `Guard` (token, body limit, Host list)."""
    limits = limits or ServerLimits()
    app = FastAPI(title="Troupe speech server", version="1", responses=ERROR_RESPONSES)
    app.add_middleware(Guard, token=token, max_body_bytes=limits.max_body_bytes, hosts=hosts,
                       client_rate=limits.client_rate)  # fmt: skip
    errors.install(app)
    app.include_router(router(service))
    app.include_router(dialogue.router(service))
    _health(app, service)
    _tts(app, service)
    _roles(app, service)
    app.add_api_route("/metrics", _metrics(service), methods=["GET"], response_class=Response)
    _openapi_as_answered(app)
    return app


def _openapi_as_answered(app: FastAPI) -> None:
    """The schema lists the statuses the server sends: FastAPI's automatic 422 goes (every
    validation failure is answered 400, `errors._validation`)."""
    made = app.openapi

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = made()
            for path in spec.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                spec.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]


def metrics_app(service: SpeechService, token: str | None, hosts: frozenset[str] | None) -> FastAPI:
    """`/metrics` alone (the metrics port), behind the same guard as the API."""
    app = FastAPI(title="Troupe metrics", openapi_url=None, docs_url=None, redoc_url=None)
    app.add_middleware(Guard, token=token, hosts=hosts)
    errors.install(app)
    app.add_api_route("/metrics", _metrics(service), methods=["GET"], response_class=Response)
    return app


def _metrics(service: SpeechService) -> Any:
    async def metrics() -> Response:
        service.telemetry.update_windows()
        return Response(generate_latest(service.telemetry.registry), media_type=CONTENT_TYPE_LATEST)

    return metrics


def _health(app: FastAPI, service: SpeechService) -> None:
    @app.get("/healthz")
    async def healthz() -> Response:
        if not service.healthy:
            return error(503, "the engine loop has stalled")
        return JSONResponse({"status": "ok", "engine_errors": service.engine_errors})

    @app.get("/readyz")
    async def readyz() -> Response:
        if not service.ready:
            return error(503, "not accepting work (engine stalled, queue full, or refusing late work)")
        return JSONResponse({"status": "ready", "queue_depth": service.scheduler.pending_count,
                             "models_loading": warming()})  # fmt: skip


def _tts(app: FastAPI, service: SpeechService) -> None:
    @app.get("/tts", responses={200: {"content": AUDIO_TYPES}}, response_class=Response)
    async def tts(
        request: Request,
        role: Annotated[Text, Query(min_length=1, max_length=64)],
        text: Annotated[Text, Query(min_length=1, max_length=MAX_TEXT_CHARS)],
        format: ResponseFormat = "wav",
        stream: bool = False,
        speed: Annotated[float, Query(ge=SPEED_RANGE[0], le=SPEED_RANGE[1], allow_inf_nan=False)] = 1.0,
        slot_s: Annotated[float | None, Query(allow_inf_nan=False)] = None,
        slot_correction: bool = True,
    ) -> Response:
        """A cast role's line at the engine rate (48 kHz; `pcm` is headerless 16-bit
        little-endian mono, its rate in X-Sample-Rate); `stream=1`: PCM chunk by chunk;
        `slot_s`: fit the line to that many seconds, chunk by chunk (`slotted`)."""
        check_format(format)
        check_slot(slot_s, text)
        if slot_s is not None:
            voice = at_speed(service.voice(role), speed)
            line = SlottedLine(service, role, voice, text, LIVE, slot_s, slot_correction)
            if not stream:
                audio = await line.whole(request)
                data = await flow.encoded(audio, format, SAMPLE_RATE_HZ)
                return Response(data, headers={**headers(format, SAMPLE_RATE_HZ), **line.headers(),
                                               **line.report.headers()})  # fmt: skip
            opening = await line.first(request)
            pieces = line.encoded(opening, StreamEncoder("pcm", SAMPLE_RATE_HZ))
            return flow.Streamed(pieces, headers={**headers("pcm", SAMPLE_RATE_HZ), **line.headers()})
        if not stream:
            futures = service.submit(role, text, speed, LIVE)
            audio = await flow.whole(request, futures)
            data = await flow.encoded(audio, format, SAMPLE_RATE_HZ)
            checked = (
                await check_headers(request, audio, text, service.voice(role).backend)
                if wants_check(request)
                else {}
            )
            return Response(data, headers={**headers(format, SAMPLE_RATE_HZ), **checked})
        speech = paced(service, role, text, speed, LIVE)
        first = await flow.first_then_rest(request, speech)
        chunks = flow.encoded_stream(first, speech, StreamEncoder("pcm", SAMPLE_RATE_HZ))
        return flow.Streamed(chunks, headers=headers("pcm", SAMPLE_RATE_HZ))


def _roles(app: FastAPI, service: SpeechService) -> None:
    @app.get("/v1/voices")
    @app.get("/v1/audio/voices")
    async def voices() -> dict[str, Any]:
        """Voice ids, OpenAI voice names (aliases) and the cast roles: any can be a `voice`."""
        return {"voices": service.neural_voice_ids() + service.voice_ids, "roles": sorted(service.roles()),
                "aliases": service.aliases}  # fmt: skip

    @app.get("/v1/roles")
    async def roles() -> dict[str, Any]:
        return {"roles": {r: v.to_dict() for r, v in sorted(service.roles().items())}}

    @app.patch("/v1/roles/{role}")
    async def patch_role(role: str, body: RolePatch) -> dict[str, Any]:
        changes = body.model_dump(exclude_none=True)
        return {"role": role_key(role), "voice": service.update_role(role, **changes).to_dict()}

    @app.put("/v1/roles/{role}")
    async def put_role(role: str, body: RolePatch) -> dict[str, Any]:
        """Add a role (or change one); roles clients add are capped and dropped when idle."""
        changes = body.model_dump(exclude_none=True)
        return {"role": role_key(role), "voice": service.add_role(role, by_client=True, **changes).to_dict()}

    @app.get("/v1/lexicon")
    async def get_lexicon() -> dict[str, Any]:
        """The pronunciations in force (the user's, with the server's own winning)."""
        return {"lexicon": lexicon.current().to_dict()}

    @app.put("/v1/lexicon")
    async def put_lexicon(body: LexiconBody) -> dict[str, Any]:
        """Replace the server's lexicon: `{"lexicon": {"Worcester": "/ˈwʊstər/", "Nguyen": "win"}}`."""
        lexicon.use_project_lexicon(lexicon.Lexicon.from_mapping(body.lexicon, "lexicon"))
        return {"lexicon": lexicon.current().to_dict()}

    @app.post("/v1/script")
    async def load(body: ScriptBody) -> dict[str, Any]:
        script = await run_in_threadpool(service.load_script, body.path)
        return {"title": script.title, "cues": len(script.cues), "roles": list(script.roles)}
