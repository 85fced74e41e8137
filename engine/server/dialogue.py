"""`POST /v1/audio/dialogue`: speaker turns in, one file out. Every turn is queued at once
under its own role, so the scheduler voices them by role weight and deadline (a lead's
turns first under load), and the file is assembled in script order."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from engine.core.errors import TroupeError
from engine.core.types import SAMPLE_RATE_HZ
from engine.server import flow
from engine.server.audio_out import OPENAI_RATE_HZ, ResponseFormat, check_format, headers
from engine.server.errors import ERROR_RESPONSES
from engine.server.openai_api import AUDIO_TYPES, LIVE, Text
from engine.server.speech import MAX_TEXT_CHARS, SPEED_RANGE, SpeechService, cancel
from engine.synthesis.base import Mono

MAX_TURNS = 64
MAX_DIALOGUE_CHARS = 4 * MAX_TEXT_CHARS


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    voice: Text = Field(
        min_length=1, max_length=64, description="A cast role, an OpenAI voice name or a voice id"
    )
    text: Text = Field(min_length=1, max_length=MAX_TEXT_CHARS)


class DialogueBody(BaseModel):
    """Speaker turns, voiced into one file with a pause between turns."""

    model_config = ConfigDict(extra="forbid", strict=True)
    turns: list[Turn] = Field(min_length=1, max_length=MAX_TURNS)
    pause_s: float = Field(0.35, ge=0.0, le=5.0, allow_inf_nan=False)
    response_format: ResponseFormat = "mp3"
    speed: float = Field(1.0, ge=SPEED_RANGE[0], le=SPEED_RANGE[1], allow_inf_nan=False)


def router(service: SpeechService) -> APIRouter:
    api = APIRouter()

    @api.post("/v1/audio/dialogue", responses={**ERROR_RESPONSES, 200: {"content": AUDIO_TYPES}},
              response_class=Response)  # fmt: skip
    async def dialogue(request: Request, body: DialogueBody) -> Response:
        """Turns voiced by role through the scheduler and joined in order, as one file."""
        check_format(body.response_format)
        total = sum(len(t.text) for t in body.turns)
        if total > MAX_DIALOGUE_CHARS:
            raise TroupeError(f"the turns hold {total} characters; the limit is {MAX_DIALOGUE_CHARS}")
        per_turn = _submit(service, body)
        flat = [f for futures in per_turn for f in futures]
        audio = await flow.whole(request, flat)
        lengths = [sum(len(f.result()) for f in futures) for futures in per_turn]
        mixed = _join(audio, lengths, body.pause_s)
        data = await flow.encoded(mixed, body.response_format)
        return Response(data, headers=headers(body.response_format, OPENAI_RATE_HZ))

    return api


def _submit(service: SpeechService, body: DialogueBody) -> list[list[Future[Mono]]]:
    """Queue every turn under its role; all or nothing (a bad voice withdraws the rest)."""
    per_turn: list[list[Future[Mono]]] = []
    try:
        for turn in body.turns:
            role, voice = service.resolve_voice(turn.voice)
            per_turn.append(service.submit(role, turn.text, body.speed, LIVE, voice))
    except BaseException:
        cancel(f for futures in per_turn for f in futures)
        raise
    return per_turn


def _join(audio: Mono, lengths: list[int], pause_s: float) -> Mono:
    """The turns (one after another in `audio`) with `pause_s` of silence between them."""
    gap = np.zeros(round(pause_s * SAMPLE_RATE_HZ), np.float32)
    pieces: list[Any] = []
    start = 0
    for k, n in enumerate(lengths):
        if k:
            pieces.append(gap)
        pieces.append(audio[start : start + n])
        start += n
    return np.concatenate(pieces).astype(np.float32, copy=False)
