"""The real-time path: what the audio callback does with each block."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from engine.audio_io.ring import _CALLBACKS, _PLAYING, _READ, _UNDERRUN_FRAMES, _UNDERRUNS, MixRing


@dataclass(frozen=True)
class RenderState:
    """Output controls the callback reads: one immutable snapshot, swapped by reference."""

    playing: bool = True
    gain: float = 1.0


def render(outdata: NDArray[np.float32], ring: MixRing, state: RenderState) -> None:
    """Real-time: no allocation, no blocking. Copy the next `len(outdata)` frames from the
    ring into `outdata`, advance the read counter, and count an underrun (filling silence)
    when the ring holds fewer frames than asked.

    While paused (`state.playing` false, or the ring header's play flag down: read directly,
    so a Stop's pause and rewind arrive together) it plays silence and consumes nothing, and
    that is not an underrun. A reset or hold the producer asked for is served first, paused
    or not.
    Only slicing is used: fancy indexing would allocate.
    """
    slots = ring._slots
    slots[_CALLBACKS] += 1
    limit = ring.consumer.serve_requests()
    if not state.playing or not slots[_PLAYING]:
        outdata.fill(0.0)
        return
    frames = outdata.shape[0]
    r = int(slots[_READ])
    n = min(frames, limit - r)
    if n > 0:
        p = r & ring.mask
        np.copyto(outdata[:n], ring.data[p : p + n])
        if state.gain != 1.0:
            np.multiply(outdata[:n], state.gain, out=outdata[:n])
        slots[_READ] = r + n
    else:
        n = 0
    if n < frames:
        outdata[n:].fill(0.0)
        slots[_UNDERRUNS] += 1
        slots[_UNDERRUN_FRAMES] += frames - n
