"""Word times from Kokoro's own durations: each token lasts a predicted number of frames and
the audio is exactly those frames, so a word lasts from its first sound's first frame to its
last sound's last frame. A line voiced in parts (long lines, cut at clauses) is the parts'
audio end to end: each part's times are offset by the parts before it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import soxr

from engine.core.onset import leading_silence_s
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono, Take, WordTime

MODEL_RATE_HZ = 24_000
"""Kokoro's output rate."""


def to_engine_rate(audio: np.ndarray) -> Mono:
    return np.asarray(soxr.resample(audio, MODEL_RATE_HZ, SAMPLE_RATE_HZ, quality="HQ"), np.float32)


SAMPLES_PER_FRAME = 600
"""Audio samples (24 kHz) per predicted duration frame: iSTFT hop 5 x upsampling 10 x 6 x 2;
25 ms a frame. Here rather than in the torch model so that the ONNX path needs no torch."""
FRAME_S = SAMPLES_PER_FRAME / MODEL_RATE_HZ

Frames = np.ndarray | Sequence[int]
"""Tokens' durations in frames."""
TimedPart = tuple[Sequence[int], Frames]
"""One part of a line: its tokens' owners (`Phonemized.owners`) and its durations in frames
(one per token plus the two 0 ends, as the model gives them)."""


def word_frames(n_words: int, parts: Sequence[TimedPart]) -> list[tuple[int, int] | None]:
    """Each word's (first frame, end frame) over the parts end to end; None for a word that
    no token voices (espeak-ng said nothing for it)."""
    spans: list[tuple[int, int] | None] = [None] * n_words
    offset = 0
    for owners, frames in parts:
        if len(frames) != len(owners) + 2:
            raise ValueError(f"{len(frames)} durations for {len(owners)} tokens (expected tokens + 2)")
        ends = offset + np.cumsum(np.asarray(frames, np.int64))
        for k, owner in enumerate(owners):
            if not 0 <= owner < n_words:
                continue
            start, end = int(ends[k]), int(ends[k + 1])  # token k follows the leading 0 end
            prev = spans[owner]
            spans[owner] = (start, end) if prev is None else (min(prev[0], start), max(prev[1], end))
        offset = int(ends[-1]) if len(ends) else offset
    return spans


def word_times(text: str, parts: Sequence[TimedPart], frame_s: float = FRAME_S) -> tuple[WordTime, ...]:
    """Each whitespace-separated word of `text` with its (start, end) in seconds from the
    clip's start, in order, never overlapping; a word no token voices sits, zero long, where
    its neighbours meet."""
    shown = text.split()
    spans = word_frames(len(shown), parts)
    out: list[WordTime] = []
    t = 0
    for k, word in enumerate(shown):
        span = spans[k]
        if span is None:
            span = (t, t)
        start, end = max(span[0], t), max(span[1], t)
        out.append((word, start * frame_s, end * frame_s))
        t = end
    return tuple(out)


CUT_MARGIN_S = 0.05
"""Silence kept before the speech of a part that follows a cut."""


def after_cut(audio: np.ndarray, frames: Frames | None = None) -> tuple[np.ndarray, Frames | None]:
    """A part that follows a cut in its line (24 kHz) without its leading silence, in whole
    frames and less `CUT_MARGIN_S`: the part before it already ends in a clause's pause.
    Kokoro starts every part with ~0.3-0.4 s of silence and ends it with ~0.4-0.7 s, so a
    cut heard both, 0.35 s longer on average than the model's own pause at a comma inside
    one part (7 screenplay lines cut in two: 6.63 s against 6.28 s). With durations, the
    leading end token loses the same frames, so the word times still follow the audio."""
    cut = int(max(0.0, leading_silence_s(audio, MODEL_RATE_HZ) - CUT_MARGIN_S) / FRAME_S)
    if frames is not None:
        cut = min(cut, int(frames[0]))
        frames = np.concatenate([[int(frames[0]) - cut], np.asarray(frames[1:], np.int64)])
    return audio[cut * SAMPLES_PER_FRAME :], frames


def join_takes(texts: Sequence[str], owners: Sequence[Sequence[int]], counts: Sequence[int],
               audio: Sequence[np.ndarray], frames: Sequence[Frames | None]) -> list[Take]:  # fmt: skip
    """Each request's take at the engine rate, from the model's audio and durations for all
    requests' parts in order (`counts[k]` parts for request k; `owners` and `frames` per
    part; each part after a cut without its leading silence, `after_cut`): its words where
    every part came with durations."""
    out: list[Take] = []
    k = 0
    for text, n in zip(texts, counts, strict=True):
        pieces, durations = list(audio[k : k + n]), list(frames[k : k + n])
        for j in range(1, n):
            pieces[j], durations[j] = after_cut(pieces[j], durations[j])
        joined = to_engine_rate(np.concatenate(pieces) if len(pieces) > 1 else pieces[0])
        timed = [(owners[k + j], f) for j in range(n) if (f := durations[j]) is not None]
        words = word_times(text, timed) if len(timed) == n else None
        out.append(Take(joined, words))
        k += n
    return out
