"""MixRing: the single-producer/single-consumer mix buffer in shared memory.

Layout of the shared block: a 256-byte header of 64-bit slots, then the frames stored
twice (2 x capacity x channels float32), so any read of up to `capacity` frames is one
contiguous view and the callback never copies a wrap in two parts.
"""

from __future__ import annotations

import os
import secrets
from multiprocessing import shared_memory
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from engine.core.process import alive

_HEADER_BYTES = 256
TIMING_SLOTS = 1 << 16
"""Callback durations kept (a ring of the latest 65,536 callbacks, ~5.8 min at 256 frames)."""
# int64 slots. The producer's and consumer's counters sit on separate 64-byte cache lines.
_WRITE = 0
_DROP_TO = 1
"""Producer: the consumer skips ahead to this frame (a reset), once it sees `_DROP_SEQ` move."""
_DROP_SEQ = 2
_HOLD = 3
"""Producer: the consumer reads no frame at or past this one (while a splice rewrites them)."""
_HOLD_SEQ = 4
_READ = 8
_UNDERRUNS = 9
_CALLBACKS = 10
_UNDERRUN_FRAMES = 11
_STAMP_SEQ = 12
_STAMP_FRAME = 13
_CAPACITY = 16
_CHANNELS = 17
_RATE = 18
_PLAYING = 19
_XRUNS = 20
_CONTROL_SEQ = 21
# float64 slots (same header, viewed as float64)
_STAMP_DAC = 14
_STAMP_NOW = 15
_GAIN = 22
# consumer-owned int64 slots (beside the other consumer statistics)
_CALLBACK_ERRORS = 23
_DROP_ACK = 24
_HOLD_ACK = 25
_CONSUMER = 26
"""1 while a consumer (a running stream) is attached to the ring."""
NO_HOLD = 1 << 62
SEGMENT_PREFIX = "troupe-ring-"
"""Ring segments are named `troupe-ring-<pid>-<random>` so that one left by a killed run
(its creator's pid gone) is recognised and removed at the next start."""
SHM_DIR = Path("/dev/shm")


def clean_stale_segments(shm_dir: Path = SHM_DIR) -> list[str]:
    """Unlink ring segments whose creating process is gone; return their names."""
    removed: list[str] = []
    try:
        entries = list(shm_dir.glob(SEGMENT_PREFIX + "*"))
    except OSError:
        return removed
    for entry in entries:
        pid = entry.name[len(SEGMENT_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not alive(int(pid)):
            try:
                entry.unlink()
            except OSError:
                continue
            removed.append(entry.name)
    return removed


def _read_pos(slots: NDArray[np.int64]) -> int:
    """The next frame the listener hears: the consumer's counter, or the frame a reset skips
    to while the consumer has not yet acknowledged it."""
    return max(int(slots[_READ]), int(slots[_DROP_TO]))


def _store(data: NDArray[np.float32], frame: int, frames: NDArray[np.float32]) -> None:
    """Copy `frames` into both halves of the ring's `data` from ring position `frame` (wrapping)."""
    n, cap = len(frames), len(data) // 2
    p = frame & (cap - 1)
    first = min(n, cap - p)
    data[p : p + first] = frames[:first]
    data[p + cap : p + cap + first] = frames[:first]
    if n > first:
        rest = n - first
        data[:rest] = frames[first:n]
        data[cap : cap + rest] = frames[first:n]


class _RingView:
    """One concern of the ring, reached as an attribute of it (`ring.stats`, ...): it reads and
    writes the same shared block as the ring, through arrays the ring hands it."""

    def _unmap(self) -> None:
        """Drop every reference into the shared block: the ring's `close` calls this, since
        the block cannot close while an array over it is alive (a closed ring's view then
        fails on use, as the ring itself does)."""
        vars(self).clear()


class RingConsumer(_RingView):
    """The consumer's side of the request/acknowledge protocol: whether a consumer (a running
    stream) is attached, and serving the producer's pending reset and hold at each read."""

    def __init__(self, slots: NDArray[np.int64]) -> None:
        self._slots = slots

    @property
    def attached(self) -> bool:
        return bool(self._slots[_CONSUMER])

    def set_attached(self, attached: bool) -> None:
        """Called by the consumer side around a stream's life (start, stop)."""
        if not attached:
            self.serve_requests()  # the last act of a consumer: nothing stays pending
        self._slots[_CONSUMER] = int(attached)

    def serve_requests(self) -> int:
        """Consumer: honour a pending reset, acknowledge holds; return the frame limit of
        this read (the write counter, or a held frame). Real-time: no allocation."""
        slots = self._slots
        seq = slots[_DROP_SEQ]
        if seq != slots[_DROP_ACK]:
            to = slots[_DROP_TO]
            if to > slots[_READ]:
                slots[_READ] = to
            slots[_DROP_ACK] = seq
        hold_seq = slots[_HOLD_SEQ]
        limit = min(int(slots[_WRITE]), int(slots[_HOLD]))
        slots[_HOLD_ACK] = hold_seq
        return limit


class RingSplice(_RingView):
    """Splicing into written frames (producer side): the producer holds the consumer back
    from a frame, rewrites the queued frames from there on, and releases it."""

    def __init__(self, slots: NDArray[np.int64], data: NDArray[np.float32], consumer: RingConsumer) -> None:
        self._slots = slots
        self._data = data
        self._consumer = consumer

    def hold(self, frame: int) -> int:
        """Ask the consumer to read nothing at or past `frame`; returns the request number
        that `held` waits for. The producer may rewrite frames >= `frame` once it is held."""
        self._slots[_HOLD] = frame
        seq = int(self._slots[_HOLD_SEQ]) + 1
        self._slots[_HOLD_SEQ] = seq  # NB: after _HOLD, as for a reset
        return seq

    def held(self, seq: int) -> bool:
        """True once the consumer has seen hold request `seq` (or no consumer is running)."""
        return not self._consumer.attached or int(self._slots[_HOLD_ACK]) >= seq

    def release(self) -> None:
        """End a hold: the rewritten frames are visible before the consumer may read them
        (the frames are stored before this store; x86-64 keeps stores in order)."""
        self._slots[_HOLD] = NO_HOLD

    def overwrite(self, frame: int, frames: NDArray[np.float32]) -> None:
        """Replace written frames from `frame` on (only while they are held, below the
        write counter and at or past the read position)."""
        if frame < _read_pos(self._slots) or frame + len(frames) > int(self._slots[_WRITE]):
            raise ValueError(f"frames {frame}..{frame + len(frames)} are not all queued and unread")
        _store(self._data, frame, frames)


class RingStats(_RingView):
    """The callback statistics: written by the consumer (whichever process runs the stream),
    read by the engine to report underruns, xruns, failed callbacks and callback load."""

    def __init__(self, slots: NDArray[np.int64], block_times_ns: NDArray[np.int64]) -> None:
        self._slots = slots
        self.block_times_ns = block_times_ns
        """Duration of each callback (slot = callback number mod TIMING_SLOTS); written by
        whichever process runs the stream, so the engine can report callback load."""

    @property
    def underruns(self) -> int:
        return int(self._slots[_UNDERRUNS])

    @property
    def underrun_frames(self) -> int:
        return int(self._slots[_UNDERRUN_FRAMES])

    @property
    def callbacks(self) -> int:
        return int(self._slots[_CALLBACKS])

    @property
    def xruns(self) -> int:
        """Output underflows reported by PortAudio itself (the device ran dry)."""
        return int(self._slots[_XRUNS])

    def callback_times_ns(self) -> NDArray[np.int64]:
        """Durations of the latest callbacks, oldest first (a copy)."""
        n = self.callbacks
        if n <= TIMING_SLOTS:
            return self.block_times_ns[1 : n + 1].copy()
        k = (n + 1) % TIMING_SLOTS
        return np.concatenate([self.block_times_ns[k:], self.block_times_ns[:k]])

    def count_xrun(self) -> None:
        self._slots[_XRUNS] += 1

    @property
    def callback_errors(self) -> int:
        """Callbacks that raised (they played silence instead)."""
        return int(self._slots[_CALLBACK_ERRORS])

    def count_callback_error(self) -> None:
        self._slots[_CALLBACK_ERRORS] += 1


class RingClock(_RingView):
    """When the frames are heard: the consumer stamps each callback with the frame it hands
    over and the stream clock's DAC time for it; the engine maps frames to time with it."""

    def __init__(self, slots: NDArray[np.int64], floats: NDArray[np.float64]) -> None:
        self._slots = slots
        self._floats = floats

    def stamp(self, dac_time_s: float, now_s: float, frame: int) -> None:
        """Record that `frame` is heard at `dac_time_s` (stream clock); seqlock-protected."""
        seq = self._slots[_STAMP_SEQ]
        self._slots[_STAMP_SEQ] = seq + 1
        self._slots[_STAMP_FRAME] = frame
        self._floats[_STAMP_DAC] = dac_time_s
        self._floats[_STAMP_NOW] = now_s
        self._slots[_STAMP_SEQ] = seq + 2

    def last_stamp(self) -> tuple[int, float, float] | None:
        """(frame, dac_time_s, stream_now_s) of the latest callback, or None before the first."""
        for _ in range(100):
            seq = int(self._slots[_STAMP_SEQ])
            if seq == 0:
                return None
            frame = int(self._slots[_STAMP_FRAME])
            dac, now = float(self._floats[_STAMP_DAC]), float(self._floats[_STAMP_NOW])
            if seq % 2 == 0 and int(self._slots[_STAMP_SEQ]) == seq:
                return frame, dac, now
        return None

    def output_latency_s(self) -> float:
        """How long after the callback a frame it hands over is heard (DAC - now)."""
        st = self.last_stamp()
        return 0.0 if st is None else max(0.0, st[1] - st[2])


class RingControls(_RingView):
    """The output controls: written by the engine, read by the audio side (which picks up a
    change when `seq` moves)."""

    def __init__(self, slots: NDArray[np.int64], floats: NDArray[np.float64]) -> None:
        self._slots = slots
        self._floats = floats

    @property
    def playing(self) -> bool:
        return bool(self._slots[_PLAYING])

    @property
    def gain(self) -> float:
        return float(self._floats[_GAIN])

    @property
    def seq(self) -> int:
        return int(self._slots[_CONTROL_SEQ])

    def set(self, playing: bool, gain: float = 1.0) -> None:
        self._slots[_PLAYING] = int(playing)
        self._floats[_GAIN] = gain
        self._slots[_CONTROL_SEQ] += 1


class MixRing:
    """Shared-memory SPSC ring of interleaved float32 frames.

    The mixer is the only writer of the write counter and the frames; the audio callback
    is the only writer of the read counter and of the callback statistics. The producer asks
    the consumer for the two things that touch the read side through request/acknowledge
    pairs of counters: a reset (skip to a frame) and a hold (read nothing past a frame while
    the producer rewrites frames already in the ring; see `RingSplice`).

    The ring itself keeps the frames and the positions; each other concern is a view over the
    same shared block, reached as an attribute: `consumer` (the consumer's side of the
    requests), `splice` (rewriting queued frames), `stats` (callback statistics), `clock`
    (when frames are heard) and `controls` (play and gain).
    """

    def __init__(
        self,
        capacity_frames: int = 16384,
        channels: int = 2,
        sample_rate_hz: int = 48_000,
        name: str | None = None,
    ) -> None:
        if name is None:
            if capacity_frames <= 0 or capacity_frames & (capacity_frames - 1):
                raise ValueError(f"capacity_frames must be a power of two, got {capacity_frames}")
            size = _HEADER_BYTES + 2 * capacity_frames * channels * 4 + TIMING_SLOTS * 8
            clean_stale_segments()
            name = f"{SEGMENT_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
            self._shm = shared_memory.SharedMemory(name=name, create=True, size=size)
            self._owner = True
        else:
            self._shm = shared_memory.SharedMemory(name=name)
            self._owner = False
            # NB: a spawned child shares its parent's resource tracker, so this attach adds
            # nothing to unlink at exit; the creator alone unlinks the block.
        self._slots: NDArray[np.int64] = np.ndarray((32,), np.int64, self._shm.buf, 0)
        self._floats: NDArray[np.float64] = np.ndarray((32,), np.float64, self._shm.buf, 0)
        if self._owner:
            self._slots[:] = 0
            self._slots[_CAPACITY] = capacity_frames
            self._slots[_CHANNELS] = channels
            self._slots[_RATE] = sample_rate_hz
            self._slots[_PLAYING] = 1
            self._slots[_HOLD] = NO_HOLD
            self._floats[_GAIN] = 1.0
        self.capacity = int(self._slots[_CAPACITY])
        self.channels = int(self._slots[_CHANNELS])
        self.sample_rate_hz = int(self._slots[_RATE])
        self.mask = self.capacity - 1
        self.data: NDArray[np.float32] = np.ndarray(
            (2 * self.capacity, self.channels), np.float32, self._shm.buf, _HEADER_BYTES
        )
        block_times_ns: NDArray[np.int64] = np.ndarray(
            (TIMING_SLOTS,), np.int64, self._shm.buf, _HEADER_BYTES + self.data.nbytes
        )
        self.consumer = RingConsumer(self._slots)
        self.splice = RingSplice(self._slots, self.data, self.consumer)
        self.stats = RingStats(self._slots, block_times_ns)
        self.clock = RingClock(self._slots, self._floats)
        self.controls = RingControls(self._slots, self._floats)

    @property
    def name(self) -> str:
        return self._shm.name

    @classmethod
    def attach(cls, name: str) -> MixRing:
        """Map an existing ring (e.g. in the audio process)."""
        return cls(name=name)

    # --- positions -------------------------------------------------------------------
    # NB: each counter is one aligned 8-byte store by its single writer, which is atomic on
    # x86-64 and AArch64; x86's store ordering also keeps the frames visible before the new
    # write counter. This is the one place the SPSC protocol depends on it.
    @property
    def write_pos(self) -> int:
        return int(self._slots[_WRITE])

    @property
    def read_pos(self) -> int:
        """The next frame the listener hears: the consumer's counter, or the frame a reset
        skips to while the consumer has not yet acknowledged it."""
        return _read_pos(self._slots)

    @property
    def fill_frames(self) -> int:
        return self.write_pos - self.read_pos

    @property
    def free_frames(self) -> int:
        return self.capacity - self.fill_frames

    def _physical_free(self) -> int:
        # While a consumer runs, frames a reset skips may still be in a callback's hands:
        # only what the consumer's own counter has passed may be overwritten.
        read = int(self._slots[_READ]) if self.consumer.attached else self.read_pos
        return self.capacity - (self.write_pos - read)

    def write(self, frames: NDArray[np.float32]) -> int:
        """Append up to `free_frames` frames (shape (n, channels)); return how many were taken."""
        w = self.write_pos
        n = min(len(frames), self._physical_free())
        if n <= 0:
            return 0
        _store(self.data, w, frames[:n])
        self._slots[_WRITE] = w + n
        return n

    def frames_at(self, frame: int, n: int) -> NDArray[np.float32]:
        """A copy of `n` written frames from ring position `frame` (producer side)."""
        p = frame & self.mask
        return np.array(self.data[p : p + n])

    def reset(self) -> None:
        """Drop everything queued (panic / seek): the listener's next frame is the next one
        written. A request to the consumer, which owns the read counter: it skips ahead at
        its next callback; until then `read_pos` already reports the skip."""
        self._slots[_DROP_TO] = self.write_pos
        self._slots[_DROP_SEQ] += 1  # NB: after _DROP_TO; the consumer loads them in reverse

    def close(self) -> None:
        # Views into the buffer must go before the mapping can close: the ring's and each
        # concern's (which may be held elsewhere, e.g. a StallWatch's stats).
        for view in (self.consumer, self.splice, self.stats, self.clock, self.controls):
            view._unmap()
        del self.data, self._slots, self._floats
        self._shm.close()
        if self._owner:
            self._shm.unlink()
