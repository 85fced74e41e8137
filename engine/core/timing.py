"""How long a line takes to say: the one estimate the show plans with, the scheduler budgets
with, the offline render sizes its files with and the fit loops start from.

A line's length is its characters times a speed (seconds per character at 175 words per
minute), scaled by the voice's rate, plus the silence a synthesizer adds around it. The speed
starts at espeak-ng's (~15 characters a second at 175 wpm) and is learnt per backend from
every measured take (`SPEEDS.learn`, called by the scheduler as takes come back): Kokoro and
Piper speak at their own pace, and a plan made before their first take is corrected by it.
"""

from __future__ import annotations

import threading

MIN_RATE_WPM = 60
"""Below this a rate is treated as this (an estimate must stay finite)."""
RATE_WPM = 175
"""The rate the speeds are given at."""
S_PER_CHAR = 1 / 15
"""The speed before any take is measured: espeak-ng at 175 wpm says ~15 characters a second."""
TAIL_S = 0.2
"""Silence a synthesizer adds around a line (lead-in and release)."""
LEARN = 0.2
"""Share of a new measurement in a backend's speed (an exponential average)."""
SPEED_RANGE = (S_PER_CHAR / 3, S_PER_CHAR * 3)
"""A measured speed is held within this (a take of noise or of a cut line cannot derail it)."""
MIN_LEARN_CHARS = 8
"""Shorter lines are not learnt from: their length is mostly lead-in and release."""


class Speeds:
    """Seconds per character at 175 wpm, per backend, learnt from measured takes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_backend: dict[str, float] = {}
        self.version = 0
        """Bumped whenever a speed changes (what a cached plan is checked against)."""

    def s_per_char(self, backend: str = "") -> float:
        """The backend's speed (the prior for a backend not yet heard)."""
        return self._by_backend.get(backend, S_PER_CHAR)  # NB: one dict read, no lock needed

    def learn(self, backend: str, text: str, rate_wpm: float, seconds: float) -> None:
        """A take of `text` at `rate_wpm` lasted `seconds`."""
        chars = len(text.strip())
        if chars < MIN_LEARN_CHARS or seconds <= TAIL_S or not backend:
            return
        measured = (seconds - TAIL_S) / chars * max(MIN_RATE_WPM, rate_wpm) / RATE_WPM
        measured = min(SPEED_RANGE[1], max(SPEED_RANGE[0], measured))
        with self._lock:
            old = self._by_backend.get(backend)
            new = measured if old is None else old + LEARN * (measured - old)
            if old is None or abs(new - old) > 1e-4 * old:
                self._by_backend[backend] = new
                self.version += 1

    def reset(self) -> None:
        """Forget what was learnt (back to the prior)."""
        with self._lock:
            self._by_backend.clear()
            self.version += 1


SPEEDS = Speeds()
"""The process's speeds: every show, render and server in it learns from and plans with it."""


def spoken_length_s(text: str, rate_wpm: float, backend: str = "") -> float:
    """Estimated seconds of audio for `text` spoken at `rate_wpm` on `backend`."""
    chars = max(1, len(text.strip()))
    return chars * SPEEDS.s_per_char(backend) * RATE_WPM / max(MIN_RATE_WPM, rate_wpm) + TAIL_S
