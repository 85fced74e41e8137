"""Giving freed memory back to the system once a burst of work is over.

A speech server under load allocates audio (a line is ~0.1-1 MB) on many threads. glibc
serves a large block by mmap only until the first such block is freed; then it raises
its threshold to that size (up to 32 MB) and takes later ones from its heaps, where freed
audio stays as fragments: the resident size after a burst stayed near its peak although
nothing was referenced any more (measured in one process: 224 MB -> 889 MB after 2,000
requests at 200 in flight, no array alive). A fixed threshold keeps audio on mmap, given
back when freed (85 MB -> 92 MB on the same load); `malloc_trim` returns what small
objects left free once a burst is over.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _libc(name: str, argtypes: tuple[type, ...]) -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    """The C library's function `name` (returning int), or None where it has none (not
    glibc: musl, macOS)."""
    lib = ctypes.util.find_library("c")
    if lib is None:
        return None
    try:
        fn = getattr(ctypes.CDLL(lib), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = list(argtypes), ctypes.c_int
    return fn


M_MMAP_THRESHOLD = -3
"""mallopt's parameter number (glibc's malloc.h)."""
AUDIO_MMAP_THRESHOLD = 128 * 1024
"""Blocks from this size up (glibc's initial threshold; 0.7 s of 48 kHz float32 mono is
this size) are mapped apart and unmapped when freed."""


@functools.cache
def keep_large_blocks_mapped() -> bool:
    """Fix glibc's mmap threshold (no dynamic raise); False where the C library has no
    mallopt. Once per process."""
    mallopt = _libc("mallopt", (ctypes.c_int, ctypes.c_int))
    return mallopt is not None and bool(mallopt(M_MMAP_THRESHOLD, AUDIO_MMAP_THRESHOLD))


M_TRIM_THRESHOLD = -1


@functools.cache
def steady_heap() -> bool:
    """Keep a long show's memory from creeping: audio buffers of a few hundred kB are
    allocated and freed all show long; with the threshold fixed (`keep_large_blocks_mapped`)
    each stays in its own mapping, returned when freed, and the heap's free top goes back
    to the system from the same size. False where the C library has no mallopt."""
    mallopt = _libc("mallopt", (ctypes.c_int, ctypes.c_int))
    if mallopt is None or not keep_large_blocks_mapped():
        return False
    return bool(mallopt(M_TRIM_THRESHOLD, AUDIO_MMAP_THRESHOLD))


M_ARENA_MAX = -8
MODEL_MMAP_THRESHOLD = 1 << 20
"""A render's threshold: a voice model's working buffers (tens of MB a call) are mapped
apart and given back after each line, the mix's 512 kB blocks stay on the heap (a mapping
per block cost the draft render 2.5 million page faults)."""


@functools.cache
def bound_render_heap() -> bool:
    """A render with a voice model (one model call at a time): large buffers mapped apart
    from `MODEL_MMAP_THRESHOLD` up and two malloc arenas, not one per thread that ever
    allocated (the demo with the natural cast: peak 512 MB -> 432 MB, same wall time)."""
    mallopt = _libc("mallopt", (ctypes.c_int, ctypes.c_int))
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MODEL_MMAP_THRESHOLD)) and bool(mallopt(M_ARENA_MAX, 2))


def release_free_memory() -> bool:
    """Return the C heap's free pages to the system; False where the C library cannot."""
    trim = _libc("malloc_trim", (ctypes.c_size_t,))
    return trim is not None and bool(trim(0))


class IdleTrimmer:
    """Calls `release_free_memory` once each time its owner has been idle for `idle_s`
    after some work (by then the answers holding the last audio have been sent), so a
    quiet process is not trimmed over and over and a busy one never."""

    def __init__(self, idle_s: float = 0.5) -> None:
        self.idle_s = idle_s
        self._worked = False
        self._idle_since: float | None = None
        self.trims = 0

    def tick(self, busy: bool, now: float) -> None:
        if busy:
            self._worked, self._idle_since = True, None
            return
        if not self._worked:
            return
        if self._idle_since is None:
            self._idle_since = now
        elif now - self._idle_since >= self.idle_s:
            release_free_memory()
            self.trims += 1
            self._worked, self._idle_since = False, None
