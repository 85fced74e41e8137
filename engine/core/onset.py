"""Where a take's speech starts: the one onset rule that the render (a line's lead, a
delivery's exact head) and the voice models (a part after a cut) share."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

ONSET_DB = -40.0
"""Speech starts at the first 5 ms whose peak reaches this."""
ONSET_LOOK = 200
"""5 ms frames looked at first for a take's onset (1 s), before the rest of it."""


def leading_silence_s(audio: NDArray[np.float32], rate_hz: int) -> float:
    """How long a take is silent before its speech starts (all of it, for a silent take)."""
    n = max(1, int(0.005 * rate_hz))
    frames = len(audio) // n
    at = 0
    for upto in (min(frames, ONSET_LOOK), frames):  # NB: speech starts in the first second, mostly
        if upto <= at:
            continue
        peaks = np.abs(audio[at * n : upto * n]).reshape(upto - at, n).max(axis=1)
        loud = np.flatnonzero(peaks >= 10 ** (ONSET_DB / 20))
        if len(loud):
            return (at + int(loud[0])) * n / rate_hz
        at = upto
    return frames * n / rate_hz
