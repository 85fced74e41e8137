"""Hearing what was voiced: speech recognition (faster-whisper, the `asr` extra), text
normalisation, word error rate, word timings and the line check."""

from engine.asr.align import DRIFT_BOUND_S, word_drift_s
from engine.asr.check import (
    DEFAULT_THRESHOLD,
    LineCheck,
    LineChecker,
    check_line,
    line_checker,
    threshold_for,
)
from engine.asr.text import normalise
from engine.asr.transcriber import (
    AsrUnavailable,
    Transcriber,
    Transcript,
    Word,
    asr_available,
    shared_transcriber,
)
from engine.asr.wer import WordErrors, wer, word_errors

__all__ = [
    "DEFAULT_THRESHOLD",
    "DRIFT_BOUND_S",
    "AsrUnavailable",
    "LineCheck",
    "LineChecker",
    "Transcriber",
    "Transcript",
    "Word",
    "WordErrors",
    "asr_available",
    "check_line",
    "line_checker",
    "normalise",
    "shared_transcriber",
    "threshold_for",
    "wer",
    "word_drift_s",
    "word_errors",
]
