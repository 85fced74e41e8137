"""Every role's speech at one level before the mix: voices come out of their backends at
different levels (espeak-ng's formant voices sat 3.6 dB above the natural leads in a
57-minute render), so a director's gain would otherwise start from wherever a backend
left it. Each line's active speech level is measured (gated RMS, in the voicing threads);
a role's gain is the target less the median of its recent lines, so a role keeps its own
line-to-line dynamics (a `(whispering)` line stays quieter: its delivery gain comes after)
while every role sits at the same level. The cast's gain is applied on top, in the mixer."""

from __future__ import annotations

import statistics
import threading
from collections import deque

import numpy as np
from numpy.typing import NDArray

TARGET_DB = -23.0
"""The active speech level every role is brought to (dBFS); the mix's loudness is set after."""
MAX_GAIN_DB = 15.0
"""A role is moved at most this far (a silent or broken take is not blown up)."""
HISTORY = 9
"""The recent lines a role's median is taken over."""
FRAME_S = 0.05
ABSOLUTE_GATE_DB = -60.0
RELATIVE_GATE_DB = -15.0
MIN_SPEECH_S = 0.25
"""A take with less speech than this is not measured (it takes its role's gain as it stands)."""


def _k_weighted(audio: NDArray[np.float32], rate_hz: int) -> NDArray[np.float32]:
    """BS.1770's K-weighting, near enough (pedalboard's biquads: the RLB high-pass at 38 Hz
    and the +4 dB shelf from ~1.7 kHz): a bright formant voice and a dark natural one are
    weighed as a listener hears them."""
    from pedalboard import HighpassFilter, HighShelfFilter

    x = audio.astype(np.float32).reshape(1, -1)
    x = HighpassFilter(38.0)(x, float(rate_hz))
    out: NDArray[np.float32] = HighShelfFilter(1681.0, 4.0, 0.7071)(x, float(rate_hz))[0]
    return out


def speech_level_db(audio: NDArray[np.float32], rate_hz: int) -> float | None:
    """The active speech level of a mono take, K-weighted: the mean power of its 50 ms
    frames above -60 dB and within 15 dB of their mean (pauses and breaths left out); None
    when it has too little speech to tell."""
    while rate_hz >= 32_000:  # NB: every other sample keeps a line's power: half the work at 48 kHz
        audio, rate_hz = audio[::2], rate_hz // 2
    n = int(FRAME_S * rate_hz)
    frames = len(audio) // n
    if frames == 0:
        return None
    weighted = _k_weighted(audio[: frames * n], rate_hz).reshape(frames, n)
    power = np.einsum("ij,ij->i", weighted, weighted) / n  # NB: gated in the linear domain: cheap
    loud = power[power > 10 ** (ABSOLUTE_GATE_DB / 10)]
    if len(loud) * FRAME_S < MIN_SPEECH_S:
        return None
    active = loud[loud > loud.mean() * 10 ** (RELATIVE_GATE_DB / 10)]
    return float(10 * np.log10(active.mean(dtype=np.float64)))


class RoleLeveller:
    """Each role's gain to `target_db`, from the median level of its last `HISTORY` lines."""

    def __init__(self, target_db: float = TARGET_DB) -> None:
        self.target_db = target_db
        self._levels: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def gain(self, role: str, level_db: float | None) -> float:
        """The linear gain for `role`'s line measured at `level_db` (None: not measured)."""
        with self._lock:
            seen = self._levels.setdefault(role, deque(maxlen=HISTORY))
            if level_db is not None:
                seen.append(level_db)
            if not seen:
                return 1.0
            db = max(-MAX_GAIN_DB, min(MAX_GAIN_DB, self.target_db - statistics.median(seen)))
        return float(10 ** (db / 20))

    def forget(self, role: str | None = None) -> None:
        """Start `role` (or every role) afresh: its voice changed."""
        with self._lock:
            if role is None:
                self._levels.clear()
            else:
                self._levels.pop(role, None)
