"""Word timings for a script line: the line's own words (as written, for captions) placed at
the times the recogniser heard them; words it missed are placed between their neighbours."""

from __future__ import annotations

from collections.abc import Sequence

from engine.asr.text import normalise
from engine.asr.transcriber import Word
from engine.asr.wer import align

DRIFT_BOUND_S = 0.25
"""Predicted word times (a backend's own durations) whose starts and ends are further than
this on average from where the recogniser placed the words disagree with what was heard:
more than the recogniser's own timing error (about 0.1 s for a clean neural voice), less
than a word (a dropped or added word shifts the words after it by one)."""


def _heard_tokens(heard: Sequence[Word]) -> tuple[list[str], list[tuple[float, float]]]:
    """Each heard word split into spoken tokens ('2024' -> four), its span shared evenly."""
    tokens: list[str] = []
    spans: list[tuple[float, float]] = []
    for w in heard:
        parts = normalise(w.text)
        step = (w.end_s - w.start_s) / max(1, len(parts))
        for k, p in enumerate(parts):
            tokens.append(p)
            spans.append((w.start_s + k * step, w.start_s + (k + 1) * step))
    return tokens, spans


def word_times(text: str, heard: Sequence[Word], duration_s: float) -> tuple[Word, ...]:
    """Each whitespace-separated word of `text` with a start and end inside [0, duration_s],
    in order and never overlapping."""
    shown = text.split()
    if not shown:
        return ()
    ref: list[str] = []
    owner: list[int] = []
    for k, w in enumerate(shown):
        for token in normalise(w):
            ref.append(token)
            owner.append(k)
    hyp, spans = _heard_tokens(heard)
    found: list[tuple[float, float] | None] = [None] * len(shown)
    for i, j in align(ref, hyp):
        if i is not None and j is not None:
            k, (a, b) = owner[i], spans[j]
            prev = found[k]
            found[k] = (a, b) if prev is None else (min(prev[0], a), max(prev[1], b))
    _fill_gaps(shown, found, duration_s, heard)
    return _monotonic(shown, found, duration_s)


def _fill_gaps(shown: list[str], found: list[tuple[float, float] | None], duration_s: float,
               heard: Sequence[Word]) -> None:  # fmt: skip
    """Words not heard share the time between their heard neighbours by length (from the
    line's start before the first heard word, to its end after the last)."""
    k = 0
    while k < len(shown):
        if found[k] is not None:
            k += 1
            continue
        end = k
        while end < len(shown) and found[end] is None:
            end += 1
        before, after = (found[k - 1] if k else None), (found[end] if end < len(shown) else None)
        lo = before[1] if before is not None else 0.0
        hi = max(lo, after[0] if after is not None else duration_s)
        chars = [len(w) for w in shown[k:end]]
        total, t = sum(chars), lo
        for n, c in zip(range(k, end), chars, strict=True):
            step = (hi - lo) * c / total
            found[n] = (t, t + step)
            t += step
        k = end


def _monotonic(
    shown: list[str], found: list[tuple[float, float] | None], duration_s: float
) -> tuple[Word, ...]:
    spans: list[list[float]] = []
    t = 0.0
    for span in found:
        a, b = span if span is not None else (t, t)
        a = min(max(a, t), duration_s)
        b = min(max(b, a), duration_s)
        spans.append([a, b])
        t = b
    for k in range(len(spans)):  # a word squeezed to nothing shares a neighbour's span by length
        if spans[k][1] - spans[k][0] < 1e-3 and len(spans) > 1:
            i = k - 1 if k else 1
            first, second = min(i, k), max(i, k)
            a, b = spans[first][0], spans[second][1]
            cut = a + (b - a) * len(shown[first]) / (len(shown[first]) + len(shown[second]))
            spans[first][1], spans[second][0] = cut, cut
    return tuple(Word(w, a, b) for w, (a, b) in zip(shown, spans, strict=True))


def word_drift_s(predicted: Sequence[tuple[str, float, float]], heard: Sequence[Word]) -> float | None:
    """Mean |predicted - heard| in seconds over every word's start and end, the two lists
    being the same line's words in order; None when they are not (or are empty)."""
    if not predicted or len(predicted) != len(heard):
        return None
    diffs = [abs(a - w.start_s) + abs(b - w.end_s) for (_t, a, b), w in zip(predicted, heard, strict=True)]
    return sum(diffs) / (2 * len(diffs))
