"""Word timings for a script line: the line's own words (as written, for captions) placed at
the times the recogniser heard them; words it missed are placed between their neighbours."""

from __future__ import annotations

from collections.abc import Sequence

from engine.asr.text import normalise
from engine.asr.transcriber import Word
from engine.asr.wer import align


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
    """Words not heard share the time between their heard neighbours by length."""
    first = heard[0].start_s if heard else 0.0
    last = heard[-1].end_s if heard else duration_s
    k = 0
    while k < len(shown):
        if found[k] is not None:
            k += 1
            continue
        end = k
        while end < len(shown) and found[end] is None:
            end += 1
        lo = found[k - 1][1] if k > 0 and found[k - 1] is not None else min(first, duration_s)  # type: ignore[index]
        hi = found[end][0] if end < len(shown) and found[end] is not None else max(last, lo)  # type: ignore[index]
        if hi <= lo:
            hi = lo
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
    out: list[Word] = []
    t = 0.0
    for w, span in zip(shown, found, strict=True):
        a, b = span if span is not None else (t, t)
        a = min(max(a, t), duration_s)
        b = min(max(b, a), duration_s)
        out.append(Word(w, a, b))
        t = b
    return tuple(out)
