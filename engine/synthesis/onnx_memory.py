"""What a voice model costs in memory on the CPU, and the rules that bound it (measured
with the shipped Kokoro int8 model on 2 cores, `benchmarks/bench_render.py --natural`):

- a session is built from a file, not from bytes in memory: onnxruntime keeps its own copy
  of a model given as bytes (Kokoro: 258 MB resident once loaded from bytes, 174 MB from
  the same model as a file);
- each call gives its working memory back when it returns (onnxruntime's arena shrinkage):
  otherwise the arena keeps the largest call's memory for good and grows by doubling
  (Kokoro, one 250-phoneme part: 585 MB resident after, 319 MB with shrinkage);
- one model call at a time in a process: every call already uses every core, so two at
  once run no faster and hold two working sets (a render voices on two threads);
- after each call the C heap's free pages go back to the system (`malloc_trim`): the call's
  buffers under the mmap threshold, freed across threads, otherwise stay in the process as
  fragments (Kokoro alone, 40 screenplay lines, glibc's defaults: 256 MB resident after,
  212 MB with the trim; peak 415 -> 387 MB; a render also maps buffers from 1 MB apart,
  `engine.core.memory.bound_render_heap`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import Any

from engine.core.memory import release_free_memory

log = logging.getLogger("troupe.synthesis")


class _CpuCalls:
    """One CPU model call at a time in this process; the heap trimmed after each (a trim took
    1.3 ms, median of 16, after Kokoro calls of ~1.5 s)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trim = release_free_memory

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *_exc: object) -> None:
        try:
            self._trim()
        finally:
            self._lock.release()


CPU_CALLS = _CpuCalls()
"""Held around every CPU model call of this process (Kokoro and Piper alike)."""


def run_options(provider: str) -> Any:
    """onnxruntime run options for a session on `provider`: on the CPU, the arena is shrunk
    back after the call (memory held between lines is the model's own, not the last line's)."""
    import onnxruntime as ort

    opts = ort.RunOptions()
    if provider == "CPUExecutionProvider":
        opts.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return opts


def models_folder() -> Path:
    """Where models assembled or patched here are kept: $XDG_CACHE_HOME/troupe/models."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "troupe" / "models"


def model_file(data: bytes, stem: str) -> Path | bytes:
    """`data` (a model made in memory) as a file in `models_folder()`, named by its content,
    written once (atomically: two processes at once are harmless); `data` itself where the
    folder cannot be written."""
    folder = models_folder()
    path = folder / f"{stem}-{hashlib.sha256(data).hexdigest()[:16]}.onnx"
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        if not (path.is_file() and path.stat().st_size == len(data)):
            folder.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return path
    except OSError as exc:
        log.info("cannot keep %s in %s (%s): loading it from memory", stem, folder, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()
        return data
