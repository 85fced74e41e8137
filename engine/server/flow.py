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
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from engine.core.types import SAMPLE_RATE_HZ
from engine.server.audio_out import OPENAI_RATE_HZ, StreamEncoder
from engine.server.audio_out import whole as encode_whole
from engine.server.errors import ClientGone
from engine.server.pacing import Paced
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


async def first_then_rest(request: Request, speech: Paced) -> Mono:
    """Wait for the first chunk before the answer starts, so that a refusal or a failure of
    the first sentence is still a proper status code; withdraws everything on failure."""
    first = speech.take()
    assert first is not None  # NB: a request has at least one chunk
    try:
        audio: Mono = await unless_disconnected(request, asyncio.wrap_future(first))
        return audio
    except BaseException:
        first.cancel()
        speech.cancel()
        raise


async def encoded_stream(first: Mono, speech: Paced, encoder: StreamEncoder,
                         wrap: Callable[[bytes], bytes] = bytes) -> AsyncIterator[bytes]:  # fmt: skip
    """The encoded bytes of every chunk in order, each as soon as it is voiced, the next
    ones queued as the client takes these (`Paced`). A client that leaves mid-stream (or is
    cut off for not reading) closes this generator: the rest is withdrawn."""
    audio: Mono | None = first
    del first  # NB: only `audio` holds a chunk's samples, and only until it is encoded
    current: Future[Mono] | None = None
    try:
        while audio is not None:
            piece = await _fed(encoder, audio)
            audio = None
            if piece:
                yield wrap(piece)
            current = speech.take()
            if current is not None:
                audio = await asyncio.wrap_future(current)
                current = None
        tail = await run_in_threadpool(encoder.finish)
        if tail:
            yield wrap(tail)
    finally:
        if current is not None:
            current.cancel()
        speech.cancel()


async def _fed(encoder: StreamEncoder, audio: Mono) -> bytes:
    """`encoder.feed(audio)`: a sentence of raw PCM or WAV on the event loop (as `encoded`
    does: the thread pool's extra threads and their heaps cost more than the copy), any
    other format on a worker thread."""
    if encoder.fmt in ("pcm", "wav") and len(audio) <= INLINE_MAX_S * SAMPLE_RATE_HZ:
        return encoder.feed(audio)
    return await run_in_threadpool(encoder.feed, audio)


class Streamed(StreamingResponse):
    """A streamed answer that lets go of everything it holds as soon as it ends, however it
    ends: sent, failed, the client gone, or cut off for not reading. Starlette's own
    streaming (an anyio task group watching for the hang-up) leaves a departed client's
    generator, its queued chunks and its encoder in reference cycles until the garbage
    collector's next full pass (10 stalled clients: 13 MB held after they were cut off).
    Here the stream is a plain task beside a watcher of the connection; whichever ends
    first ends the other, and the body generator is closed (its `finally` withdraws the
    chunks still queued)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, self.body_iterator = self.body_iterator, _ended()
        stream = asyncio.ensure_future(self._send_all(body, send))
        gone = asyncio.ensure_future(_hung_up(receive))
        try:
            await asyncio.wait([stream, gone], return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not stream.done():
                stream.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await stream
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                await aclose()
        if not stream.cancelled():
            stream.result()  # NB: a failure mid-stream is raised (the server cuts the connection)
        if self.background is not None:
            await self.background()

    async def _send_all(self, body: Any, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        async for chunk in body:
            if isinstance(chunk, str):
                chunk = chunk.encode(self.charset)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _ended() -> AsyncIterator[bytes]:
    return
    yield b""


async def _hung_up(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(request: Request, work: asyncio.Future[Any]) -> Any:
    """Await `work`; if the client hangs up first, cancel it and raise `ClientGone`. The
    hang-up is seen at once: a task waits on the connection's own disconnect message."""
    gone = asyncio.ensure_future(_hung_up(request.receive))
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
