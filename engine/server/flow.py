"""Waiting for speech on behalf of an HTTP client: whole, or chunk by chunk as a stream;
a client that hangs up withdraws what is still queued."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from typing import Any

import numpy as np
from fastapi import Request
from starlette.concurrency import run_in_threadpool

from engine.core.types import SAMPLE_RATE_HZ
from engine.server.audio_out import OPENAI_RATE_HZ, StreamEncoder
from engine.server.audio_out import whole as encode_whole
from engine.server.errors import ClientGone
from engine.server.speech import cancel
from engine.synthesis.base import Mono


async def whole(request: Request, futures: list[Future[Mono]]) -> Mono:
    """All of a request's chunks, joined; a hang-up cancels them (`ClientGone`)."""
    try:
        parts = await unless_disconnected(request, asyncio.gather(*map(asyncio.wrap_future, futures)))
    finally:
        cancel(futures)  # a client that left (or any error) withdraws what is still queued
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


INLINE_MAX_S = 20.0
"""Raw PCM and WAV answers up to this long are encoded on the event loop (a copy, about a
millisecond): a hop through the thread pool costs more than that under load, where the
pool's threads queue for the interpreter lock behind one another (the lead's p95 on a busy
server was 0.1 s in the queue and 0.3 s at the client). Resampling PCM to 24 kHz is about
as cheap."""


async def encoded(audio: Mono, fmt: str, rate_hz: int = OPENAI_RATE_HZ) -> bytes:
    """`audio` as a whole answer in `fmt` (see `audio_out.whole`): short raw answers at
    once, anything else on a worker thread."""
    if fmt in ("pcm", "wav") and len(audio) <= INLINE_MAX_S * SAMPLE_RATE_HZ:
        return encode_whole(audio, fmt, rate_hz)
    return await run_in_threadpool(encode_whole, audio, fmt, rate_hz)


async def first_then_rest(request: Request, futures: list[Future[Mono]]) -> Mono:
    """Wait for the first chunk before the answer starts, so that a refusal or a failure of
    the first sentence is still a proper status code; cancels everything on failure."""
    try:
        first: Mono = await unless_disconnected(request, asyncio.wrap_future(futures[0]))
        return first
    except BaseException:
        cancel(futures)
        raise


async def encoded_stream(first: Mono, futures: list[Future[Mono]], encoder: StreamEncoder,
                         wrap: Callable[[bytes], bytes] = bytes) -> AsyncIterator[bytes]:  # fmt: skip
    """The encoded bytes of every chunk in order, each as soon as it is voiced. A client
    that leaves mid-stream closes this generator: the rest is withdrawn."""
    try:
        piece = await run_in_threadpool(encoder.feed, first)
        if piece:
            yield wrap(piece)
        for f in futures[1:]:
            audio = await asyncio.wrap_future(f)
            piece = await run_in_threadpool(encoder.feed, audio)
            if piece:
                yield wrap(piece)
        tail = await run_in_threadpool(encoder.finish)
        if tail:
            yield wrap(tail)
    finally:
        cancel(futures)


async def unless_disconnected(request: Request, work: asyncio.Future[Any]) -> Any:
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
