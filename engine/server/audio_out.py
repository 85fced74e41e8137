"""Speech as response bytes: a whole file, or a stream fed sentence by sentence, in any
of OpenAI's `response_format`s, through the one encoding module (`engine.export`)."""

from __future__ import annotations

import io
import struct
from typing import Any, Literal

import numpy as np
import soxr

from engine.core.types import SAMPLE_RATE_HZ
from engine.export import FORMATS, ExportError, available_formats, encode
from engine.export.formats import pcm_bytes
from engine.export.writers import SndWriter, WavWriter
from engine.server.errors import BadField
from engine.synthesis.base import Mono

ResponseFormat = Literal["mp3", "opus", "aac", "flac", "wav", "pcm"]
RESPONSE_FORMATS: tuple[str, ...] = ("mp3", "opus", "aac", "flac", "wav", "pcm")
OPENAI_RATE_HZ = 24_000
"""OpenAI's answers are 24 kHz in every format (`pcm`: 16-bit little-endian mono, no header)."""
RATES_HZ = (8_000, 12_000, 16_000, 22_050, 24_000, 44_100, 48_000)
"""What a request may ask for (`sample_rate`); Opus only 8, 12, 16, 24 and 48 kHz."""
OPUS_RATES_HZ = (8_000, 12_000, 16_000, 24_000, 48_000)
UNKNOWN_SIZE = 0xFFFFFFFF
"""A streamed WAV's RIFF and data sizes: 'until the stream ends' (the size is not known yet)."""


def check_format(fmt: str) -> None:
    """`ExportError` (a 400) naming what this install writes when it cannot write `fmt`."""
    if fmt not in supported_formats():
        have = ", ".join(supported_formats())
        why = "" if fmt not in FORMATS else " (its encoder is not installed here)"
        raise ExportError(f"response_format {fmt!r} is not available{why}; this server writes: {have}")


def supported_formats() -> list[str]:
    have = available_formats()
    return [f for f in RESPONSE_FORMATS if f in have]


def check_rate(fmt: str, rate_hz: int) -> None:
    """`ExportError` (a 400) for a rate the format cannot carry (Opus at 44.1 kHz)."""
    if fmt == "opus" and rate_hz not in OPUS_RATES_HZ:
        rates = ", ".join(str(r) for r in OPUS_RATES_HZ)
        raise BadField(
            "sample_rate", f"sample_rate {rate_hz} is not one Opus carries; expected one of {rates}"
        )


def headers(fmt: str, rate_hz: int) -> dict[str, str]:
    """Content type and, for headerless PCM, what a player needs to know."""
    if fmt == "pcm":
        return {"Content-Type": "audio/pcm", "X-Sample-Rate": str(rate_hz), "X-Channels": "1",
                "X-Sample-Format": "s16le"}  # fmt: skip
    return {"Content-Type": FORMATS[fmt].media_type, "X-Sample-Rate": str(rate_hz)}


def whole(audio: Mono, fmt: str, rate_hz: int = OPENAI_RATE_HZ) -> bytes:
    """A whole answer: `audio` (engine rate) as one file in `fmt` at `rate_hz`."""
    audio = _resample(audio, rate_hz)
    if fmt == "pcm":
        return pcm_bytes(audio.reshape(-1, 1), "s16")
    return encode(audio, rate_hz, fmt)


def _resample(audio: Mono, rate_hz: int) -> Mono:
    if rate_hz == SAMPLE_RATE_HZ:
        return audio
    return np.asarray(soxr.resample(audio, SAMPLE_RATE_HZ, rate_hz), np.float32)


class _Drain(io.RawIOBase):
    """A write-only byte sink that hands out what was written so far. An encoder that seeks
    back to patch a header after the fact (FLAC's sample count, MP3's LAME tag) patches
    bytes already sent: that write is dropped, which leaves the 'length unknown' value the
    header started with, as in any live stream."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._base = 0  # stream offset of _buf[0]
        self._pos = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        raw = bytes(data)
        start = self._pos - self._base
        if start < 0:
            raw, start = raw[-start:], 0
        self._buf[start : start + len(raw)] = raw
        self._pos += len(bytes(data))
        return len(bytes(data))

    def seek(self, offset: int, whence: int = 0) -> int:
        end = self._base + len(self._buf)
        self._pos = {0: offset, 1: self._pos + offset, 2: end + offset}[whence]
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        return b""

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def take(self) -> bytes:
        out = bytes(self._buf)
        self._base += len(self._buf)
        self._buf.clear()
        return out


RESAMPLE_BLOCK = SAMPLE_RATE_HZ // 10
"""A stream's resampler is fed this many samples at a time (0.1 s)."""


class StreamEncoder:
    """One stream in `fmt`, fed a sentence at a time: `feed` returns the bytes ready to
    send, `finish` the rest. Container formats carry one continuous encoder state (no gap
    at a sentence break); AAC is a sequence of ADTS frames, one encoder run per sentence."""

    def __init__(self, fmt: str, rate_hz: int = OPENAI_RATE_HZ) -> None:
        check_format(fmt)
        check_rate(fmt, rate_hz)
        self.fmt = fmt
        self.rate_hz = rate_hz
        self.fed_s = 0.0
        """Seconds of audio fed so far (what an SSE stream's usage reports)."""
        self._sink = _Drain()
        self._resampler = None
        self._writer: SndWriter | None = None
        self._head = b""
        if rate_hz != SAMPLE_RATE_HZ:
            self._resampler = soxr.ResampleStream(SAMPLE_RATE_HZ, rate_hz, 1, dtype="float32")
        if fmt == "wav":
            buf = io.BytesIO()
            WavWriter(buf, 1, rate_hz, "s16", "stream")
            head = buf.getvalue()
            self._head = (
                head[:4] + struct.pack("<I", UNKNOWN_SIZE) + head[8:-4] + struct.pack("<I", UNKNOWN_SIZE)
            )
        elif FORMATS[fmt].encoder == "sndfile":
            sink: Any = self._sink  # a file as far as libsndfile is concerned
            self._writer = SndWriter(sink, FORMATS[fmt], 1, rate_hz, "s16", "stream")

    def feed(self, audio: Mono) -> bytes:
        self.fed_s += len(audio) / SAMPLE_RATE_HZ
        if self._resampler is not None:
            # NB: in small blocks: soxr's stream keeps buffers as large as the largest block it
            # was ever fed (a 6 s sentence at once: 1.65 MB a stream for its life; 0.1 s: 0.12 MB)
            step = RESAMPLE_BLOCK
            parts = [self._resampler.resample_chunk(audio[k : k + step]) for k in range(0, len(audio), step)]
            audio = np.concatenate(parts).astype(np.float32, copy=False) if parts else audio
        return self._encode(audio)

    def _encode(self, audio: Mono) -> bytes:
        head, self._head = self._head, b""
        if self._writer is not None:
            if audio.size:
                self._writer.write(audio.reshape(-1, 1))
            return head + self._sink.take()
        if self.fmt == "aac":
            return head + (encode(audio, self.rate_hz, "aac") if audio.size else b"")
        return head + pcm_bytes(audio.reshape(-1, 1), "s16")

    def finish(self) -> bytes:
        tail = b""
        if self._resampler is not None:
            rest = np.asarray(self._resampler.resample_chunk(np.zeros(0, np.float32), last=True), np.float32)
            tail = self._encode(rest)
        head, self._head = self._head, b""
        if self._writer is not None:
            self._writer.close()
            return tail + head + self._sink.take()
        return tail + head
