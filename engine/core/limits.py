"""The one table of a voice's limits: what the cast accepts, what the HTTP API validates and
what the cast panel's controls span."""

from __future__ import annotations

VOICE_LIMITS: dict[str, tuple[float, float]] = {
    "rate_wpm": (80, 450),
    "pitch": (0, 100),
    "pitch_range": (0, 100),
    "gain_db": (-60.0, 12.0),
    "pan": (-1.0, 1.0),
    "weight": (0.0, 100.0),
}
"""Voice field -> (lowest, highest) allowed value, both inclusive."""


def limit(name: str) -> tuple[float, float]:
    """(lowest, highest) for the voice field `name`."""
    return VOICE_LIMITS[name]


def clamp(name: str, value: float) -> float:
    """`value` brought within the voice field `name`'s limits (the one place a rate or a
    pitch worked out from a delivery hint, SSML or a fit is held to what a voice takes)."""
    lo, hi = VOICE_LIMITS[name]
    return min(hi, max(lo, value))
