"""The line check: transcribe a voiced line, score it against the script (word error rate on
normalised words) and place its words in time; a line over its backend's threshold is marked
"check"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from engine.asr.align import word_times
from engine.asr.text import normalise
from engine.asr.transcriber import Transcriber, Word
from engine.asr.wer import word_errors

DEFAULT_THRESHOLD = 0.3
SHORT_LINE_WORDS = 3
THRESHOLDS = {"espeak": 0.6}
"""Backend -> the WER above which a line is marked "check". The packaged tiny.en model mishears
espeak-ng's formant voice far more than a neural voice (benchmarks/bench_asr.py measures both),
so a robotic voice gets more room before it is flagged."""


def threshold_for(backend: str) -> float:
    return THRESHOLDS.get(backend, DEFAULT_THRESHOLD)


@dataclass(frozen=True)
class LineCheck:
    """What the recogniser made of one voiced line."""

    wer: float
    heard: str
    words: tuple[Word, ...]
    """The script's words with their times in the clip."""
    threshold: float
    deletions: int = 0
    """Script words not heard at all."""
    n_words: int = SHORT_LINE_WORDS
    """Words in the script line (normalised)."""

    @property
    def flagged(self) -> bool:
        """Over the threshold; a line of one or two words only when a word was not heard at
        all (a short exclamation is easily misheard: 'Halt!' as 'Oh.')."""
        if self.n_words < SHORT_LINE_WORDS:
            return self.wer > self.threshold and self.deletions > 0
        return self.wer > self.threshold


def check_line(transcriber: Transcriber, audio: NDArray[np.float32], sample_rate_hz: int, text: str,
               threshold: float = DEFAULT_THRESHOLD) -> LineCheck:  # fmt: skip
    heard = transcriber.transcribe(audio, sample_rate_hz)
    errors = word_errors(normalise(text), [t for w in heard.words for t in normalise(w.text)])
    words = word_times(text, heard.words, heard.duration_s)
    return LineCheck(errors.wer, heard.text, words, threshold, errors.deletions, errors.n_reference)


LineChecker = Callable[[NDArray[np.float32], str, str], LineCheck]
"""(audio at the engine rate, script text, backend) -> its check."""


def line_checker(transcriber: Transcriber, sample_rate_hz: int,
                 thresholds: dict[str, float] | None = None) -> LineChecker:  # fmt: skip
    """A `LineChecker` over one transcriber; `thresholds` override the per-backend defaults."""
    table = {**THRESHOLDS, **(thresholds or {})}

    def check(audio: NDArray[np.float32], text: str, backend: str) -> LineCheck:
        return check_line(transcriber, audio, sample_rate_hz, text, table.get(backend, DEFAULT_THRESHOLD))

    return check
