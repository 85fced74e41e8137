"""Splicing audio into frames already queued in the ring: how a live ad-lib is heard within
tens of milliseconds instead of after the whole render-ahead.

The producer asks the consumer to hold (read nothing at or past a frame a margin ahead of
the read position), waits for the acknowledgement (at most one callback), adds the audio
to the held frames, and releases. The callback never waits: if it reaches the held frame
before the release (a margin too small for the machine), it plays silence and counts an
underrun, and the splice starts where it is safe.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from engine.audio_io.ring import MixRing


@dataclass(frozen=True)
class Spliced:
    """Where a splice went: from ring frame `start` on, `n_frames` of the audio."""

    start: int
    n_frames: int


@contextlib.contextmanager
def _held(ring: MixRing, margin_frames: int, timeout_s: float) -> Iterator[int | None]:
    """Hold the consumer `margin_frames` ahead of the read position; yields the first frame
    that may be rewritten, or None when the consumer did not acknowledge in `timeout_s`."""
    held = ring.read_pos + margin_frames
    seq = ring.splice.hold(held)
    give_up = time.monotonic() + timeout_s
    while not ring.splice.held(seq):
        if time.monotonic() > give_up:
            ring.splice.release()
            yield None
            return
        time.sleep(0.0002)
    try:
        yield max(held, ring.read_pos)  # NB: the consumer may have passed it before it saw the hold
    finally:
        ring.splice.release()


def splice(
    ring: MixRing,
    audio: NDArray[np.float32],
    margin_frames: int,
    post: Callable[[NDArray[np.float32]], None] | None = None,
    timeout_s: float = 0.05,
) -> Spliced | None:
    """Add stereo `audio` (frames, channels) to the queued frames from `margin_frames` ahead
    of the read position; `post` (e.g. the limiter) runs in place on the summed frames.
    Returns where it went (`n_frames` may be less than `len(audio)`: the rest is for the
    writer), or None when the consumer did not acknowledge in `timeout_s`."""
    with _held(ring, margin_frames, timeout_s) as start:
        if start is None:
            return None
        n = max(0, min(len(audio), ring.write_pos - start))
        if n:
            mixed = ring.frames_at(start, n)
            mixed += audio[:n]
            if post is not None:
                post(mixed)
            ring.splice.overwrite(start, mixed)
        return Spliced(start, n)


def remix(
    ring: MixRing,
    render: Callable[[int, NDArray[np.float32]], None],
    margin_frames: int,
    timeout_s: float = 0.05,
) -> Spliced | None:
    """Mix again the frames already queued from `margin_frames` ahead of the read position to
    the write position: `render(ring_frame, out)` fills `out` (frames, channels) with the mix
    from that ring frame on. How a mute, solo, gain or pan change is heard within a callback
    block or two instead of after the whole render-ahead. Returns what was replaced, or None
    when the consumer did not acknowledge in `timeout_s` (the frames are then left as they were)."""
    with _held(ring, margin_frames, timeout_s) as start:
        if start is None:
            return None
        n = max(0, ring.write_pos - start)
        if n:
            out = np.empty((n, ring.channels), np.float32)
            render(start, out)
            ring.splice.overwrite(start, out)
        return Spliced(start, n)
