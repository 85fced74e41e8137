"""The line check on request: a client that sends `X-Troupe-Check: 1` with a whole (not
streamed) speech request gets the word error rate of what was voiced against its input in
`X-Troupe-WER`, and `X-Troupe-Check: ok` or `check` (over the backend's threshold), or
`unavailable` where the asr extra is not installed. Recognition runs in a worker thread."""

from __future__ import annotations

import re

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono

CHECK_HEADER = "X-Troupe-Check"
_TAG = re.compile(r"<[^>]*>")


def wants_check(request: Request) -> bool:
    return request.headers.get(CHECK_HEADER, "").strip().lower() in ("1", "true", "yes")


def _check(audio: Mono, text: str, backend: str) -> dict[str, str]:
    from engine.asr import AsrUnavailable, check_line, shared_transcriber, threshold_for

    try:
        result = check_line(shared_transcriber(), audio, SAMPLE_RATE_HZ, text, threshold_for(backend))
    except AsrUnavailable:
        return {CHECK_HEADER: "unavailable"}
    return {CHECK_HEADER: "check" if result.flagged else "ok", "X-Troupe-WER": f"{result.wer:.3f}"}


async def check_headers(request: Request, audio: Mono, text: str, backend: str) -> dict[str, str]:
    """The check's response headers when the client asked for them, else none."""
    if not wants_check(request):
        return {}
    spoken = _TAG.sub(" ", text) if text.lstrip().startswith("<") else text  # SSML: its words only
    return await run_in_threadpool(_check, audio, spoken, backend)
