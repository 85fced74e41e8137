"""The ring's request/acknowledge protocol: a reset the consumer serves (it alone writes the
read counter), and a hold under which the producer rewrites queued frames (a splice).

Frames carry their own frame number, so a lost, doubled or torn frame shows as a wrong
value at a known position."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import MixRing

PLAY = RenderState()


def _numbered(start: int, n: int) -> np.ndarray:
    """Frames whose left sample is their frame number (exact in float32 below 2**24)."""
    f = np.arange(start, start + n, dtype=np.float32)
    return np.stack([f, -f], axis=1)


@pytest.fixture
def ring():  # type: ignore[no-untyped-def]
    r = MixRing(1 << 12)
    r.consumer.set_attached(True)
    yield r
    r.close()


def test_reset_waits_for_the_consumer_and_never_runs_the_fill_negative(ring: MixRing) -> None:
    ring.write(_numbered(0, 1000))
    out = np.zeros((100, 2), np.float32)
    render(out, ring, PLAY)  # the consumer is at 100
    ring.reset()
    assert ring.read_pos == ring.write_pos == 1000 and ring.fill_frames == 0
    assert ring._slots[8] == 100  # the consumer's counter: untouched by the producer
    ring.write(_numbered(5000, 300))
    render(out, ring, PLAY)  # the next callback serves the reset, then reads the new frames
    np.testing.assert_array_equal(out[:, 0], np.arange(5000, 5100, dtype=np.float32))
    assert ring.read_pos == 1100 and ring.fill_frames == 200 and ring.stats.underruns == 0


def test_a_reset_while_paused_is_served_too(ring: MixRing) -> None:
    ring.write(_numbered(0, 500))
    ring.reset()
    render(np.zeros((64, 2), np.float32), ring, RenderState(playing=False))
    assert ring._slots[8] == 500 and ring.fill_frames == 0


def test_without_a_consumer_a_reset_frees_the_ring_at_once() -> None:
    ring = MixRing(1024)
    try:
        assert ring.write(_numbered(0, 1024)) == 1024
        ring.reset()
        assert ring.write(_numbered(0, 1024)) == 1024  # nobody reads: the dropped frames are free
    finally:
        ring.close()


def test_frames_a_callback_may_still_read_are_not_overwritten(ring: MixRing) -> None:
    ring.write(_numbered(0, 4096))
    ring.reset()  # the consumer has not served it yet: it may be copying frames 0.. now
    assert ring.write(_numbered(0, 10)) == 0
    render(np.zeros((1, 2), np.float32), ring, PLAY)
    assert ring.write(_numbered(0, 10)) == 10


def _splice(ring: MixRing, start: int, add: np.ndarray, consume: object) -> int:
    """The producer's side of a splice: hold, wait for the acknowledgement (here by running
    the consumer), then add `add` from max(start, read position) and release."""
    seq = ring.splice.hold(start)
    while not ring.splice.held(seq):
        consume()  # type: ignore[operator]
    at = max(start, ring.read_pos)
    n = max(0, min(len(add), ring.write_pos - at))
    if n:
        ring.splice.overwrite(at, ring.frames_at(at, n) + add[:n])
    ring.splice.release()
    return at


@settings(max_examples=30, deadline=None)
@given(block=st.sampled_from([1, 2, 63, 64, 65, 256, 1023, 4096, 8193]),
       margin=st.integers(0, 1500), length=st.integers(1, 2000))  # fmt: skip
def test_splice_is_heard_whole_at_any_block_size(block: int, margin: int, length: int) -> None:
    ring = MixRing(1 << 14)
    ring.consumer.set_attached(True)
    try:
        written = 0
        out = np.zeros((block, 2), np.float32)
        heard: list[np.ndarray] = []

        def consume() -> None:
            nonlocal written
            written += ring.write(_numbered(written, ring.free_frames))
            render(out, ring, PLAY)
            heard.append(out.copy())

        consume()
        # a margin of at least one callback: the callback that acknowledges the hold reads in full
        at = _splice(ring, ring.read_pos + block + margin, np.full((length, 2), 0.5, np.float32), consume)
        spliced = min(length, ring.write_pos - at)
        while len(heard) * block < at + spliced + 1:
            consume()
        got = np.concatenate(heard)[:, 0]
        expected = np.arange(len(got), dtype=np.float32)
        expected[at : at + spliced] += 0.5
        assert ring.stats.underruns == 0 and spliced == length
        np.testing.assert_array_equal(got, expected)  # nothing lost or doubled; the splice whole
    finally:
        ring.close()


@pytest.mark.slow
def test_splice_with_a_concurrent_consumer_is_never_torn() -> None:
    """A consumer thread keeps reading while the producer splices 200 times."""
    ring = MixRing(1 << 14)
    ring.consumer.set_attached(True)
    stop = threading.Event()
    heard: list[np.ndarray] = []
    block = np.zeros((65, 2), np.float32)
    written = ring.write(_numbered(0, 8000))

    def consumer() -> None:
        while not stop.is_set():
            render(block, ring, PLAY)
            heard.append(block.copy())

    th = threading.Thread(target=consumer)
    th.start()
    starts: list[tuple[int, int]] = []
    try:
        for _ in range(200):
            # NB: below 2**22 a frame number plus 0.25 is exact in float32 (from 2**22 the step is
            # 0.5), so no frame numbered 2**22 or above is written (a fast consumer reaches it)
            while ring.free_frames > 0 and written < 1 << 22:
                written += ring.write(_numbered(written, min(500, ring.free_frames, (1 << 22) - written)))
            add = np.full((300, 2), 0.25, np.float32)
            at = _splice(ring, ring.read_pos + 2000, add, lambda: None)
            starts.append((at, min(300, ring.write_pos - at)))
    finally:
        stop.set()
        th.join()
    got = np.concatenate(heard)
    n = ring.read_pos - ring.stats.underrun_frames  # frames actually read (underruns are zeros)
    frames = got[np.any(got != 0, axis=1) | (np.arange(len(got)) == 0)][:, 0]
    assert len(frames) >= n - 1
    base = np.floor(frames)
    np.testing.assert_array_equal(base, np.arange(len(frames), dtype=np.float32))  # none lost or doubled
    extra = frames - base
    expect = np.zeros(len(frames), np.float32)
    for at, k in starts:
        expect[at : at + k] += 0.25
    np.testing.assert_array_equal(extra, expect[: len(frames)])  # every splice whole, none torn
    ring.close()
