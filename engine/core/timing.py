"""How long a line takes to say: the one estimate the show plans with and the scheduler
budgets with, from the words and the role's speaking rate."""

from __future__ import annotations

MIN_RATE_WPM = 60
"""Below this a rate is treated as this (an estimate must stay finite)."""
TAIL_S = 0.2
"""Silence a synthesizer adds around a line (lead-in and release)."""


def spoken_length_s(text: str, rate_wpm: float) -> float:
    """Estimated seconds of audio for `text` spoken at `rate_wpm` words per minute."""
    words = max(1, len(text.split()))
    return words * 60.0 / max(MIN_RATE_WPM, rate_wpm) + TAIL_S
