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

from engine.server.audio_out import StreamEncoder
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
