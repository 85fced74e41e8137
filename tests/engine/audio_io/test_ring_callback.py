"""MixRing and the real-time render function, on plain numpy arrays."""

from __future__ import annotations

import multiprocessing
import tracemalloc

import numpy as np
import pytest

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import MixRing


@pytest.fixture
def ring() -> MixRing:
    r = MixRing(4096)
    yield r
    r.close()


def _signal(n: int) -> np.ndarray:
    t = np.arange(n, dtype=np.float32)
    return np.stack([np.sin(t * 0.01), np.cos(t * 0.013)], axis=1).astype(np.float32)


def test_capacity_must_be_power_of_two() -> None:
    with pytest.raises(ValueError, match="power of two"):
        MixRing(1000)


def test_write_read_wraps_and_stays_contiguous(ring: MixRing) -> None:
    sig = _signal(50_000)
    out = np.zeros((333, 2), np.float32)
    got: list[np.ndarray] = []
    w = 0
    state = RenderState()
    while len(got) * 333 < 40_000:
        w += ring.write(sig[w : w + 1500])
        render(out, ring, state)
        got.append(out.copy())
    played = np.concatenate(got)
    np.testing.assert_array_equal(played, sig[: len(played)])
    assert ring.stats.underruns == 0


def test_write_never_overwrites_unread(ring: MixRing) -> None:
    assert ring.write(_signal(10_000)) == 4096
    assert ring.free_frames == 0 and ring.write(_signal(10)) == 0


@pytest.mark.slow
@pytest.mark.parametrize("block", [1, 64, 65, 256, 4097])
def test_identical_output_at_any_block_size(block: int) -> None:
    sig = _signal(20_000)
    ring = MixRing(8192)
    try:
        out = np.zeros((block, 2), np.float32)
        state = RenderState()
        got: list[np.ndarray] = []
        w = 0
        while sum(len(g) for g in got) < 9_000:
            w += ring.write(sig[w:])
            render(out, ring, state)
            got.append(out.copy())
        played = np.concatenate(got)[:9_000]
        np.testing.assert_array_equal(played, sig[:9_000])
        assert ring.stats.underruns == 0
    finally:
        ring.close()


def test_underrun_fills_silence_and_counts(ring: MixRing) -> None:
    ring.write(_signal(100))
    out = np.ones((256, 2), np.float32)
    render(out, ring, RenderState())
    np.testing.assert_array_equal(out[:100], _signal(100))
    assert not out[100:].any()
    assert ring.stats.underruns == 1 and ring.stats.underrun_frames == 156
    render(out, ring, RenderState())
    assert not out.any() and ring.stats.underruns == 2


def test_paused_plays_silence_without_consuming(ring: MixRing) -> None:
    ring.write(_signal(1000))
    out = np.ones((256, 2), np.float32)
    render(out, ring, RenderState(playing=False))
    assert not out.any() and ring.read_pos == 0 and ring.stats.underruns == 0
    render(out, ring, RenderState(gain=0.5))
    np.testing.assert_allclose(out, _signal(256) * 0.5)


def test_render_does_not_allocate(ring: MixRing) -> None:
    out = np.zeros((256, 2), np.float32)
    chunk = _signal(256)
    state = RenderState(gain=0.9)
    for _ in range(100):  # warm up caches of numpy and the interpreter
        ring.write(chunk)
        render(out, ring, state)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        snap0 = tracemalloc.take_snapshot()
        for k in range(10_000):
            if k % 2 == 0:
                ring.write(chunk)  # half the calls underrun: both paths are checked
            render(out, ring, state)
        after, _ = tracemalloc.get_traced_memory()
        snap1 = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    growth = after - before
    stats = snap1.compare_to(snap0, "lineno")
    assert growth < 1024, [str(s) for s in stats[:5]]
    assert ring.stats.underruns > 4000


def _child_reads(name: str, q: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    r = MixRing.attach(name)
    out = np.zeros((512, 2), np.float32)
    render(out, r, RenderState())
    q.put((float(out.sum()), r.read_pos))
    del out
    r.close()


@pytest.mark.slow
def test_ring_shared_across_processes(ring: MixRing) -> None:
    sig = _signal(512)
    ring.write(sig)
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child_reads, args=(ring.name, q))
    p.start()
    total, pos = q.get(timeout=30)
    p.join(10)
    assert total == pytest.approx(float(sig.sum()), rel=1e-6)
    assert pos == 512 and ring.read_pos == 512  # the child's read counter is ours


def test_stamp_maps_frames_to_time(ring: MixRing) -> None:
    assert ring.clock.last_stamp() is None
    ring.clock.stamp(10.5, 10.49, 4800)
    assert ring.clock.last_stamp() == (4800, 10.5, 10.49)
    assert ring.clock.output_latency_s() == pytest.approx(0.01)
