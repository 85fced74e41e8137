"""The files a render writes: written under `.partial` names on their own thread, renamed
when the render succeeds, removed when it fails or is cancelled."""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from engine.core.types import RoleKey
from engine.export import FORMATS, AudioFormat, ExportError, FileWriter
from engine.export.formats import format_for_path
from engine.render.mixdown import Block

PARTIAL = ".partial"


def partial_path(path: Path) -> Path:
    return path.with_name(path.name + PARTIAL)


@dataclass
class _Target:
    path: Path
    writer: FileWriter
    channels: int
    done: bool = False


@dataclass
class OutputFiles:
    """Every file of one render; `commit` renames them into place, `discard` removes them."""

    targets: list[_Target] = field(default_factory=list)
    extra: list[Path] = field(default_factory=list)
    """Partial files written outside a writer (clips), removed on discard."""
    scratch: list[Path] = field(default_factory=list)
    """Partial files the render reads back and removes itself (clips' premasters); never kept."""
    stale: list[Path] = field(default_factory=list)
    """Partial files of these outputs left by an earlier render that was killed: removed."""

    def open(self, path: Path, channels: int, sample_rate_hz: int, sample_format: str,
             fmt: AudioFormat | None = None, sparse: bool = False) -> _Target:  # fmt: skip
        fmt = fmt or format_for_path(str(path))
        left = partial_path(path)
        if left.exists():  # an earlier render of this file was killed before it could clean up
            with contextlib.suppress(OSError):
                left.unlink()
                self.stale.append(left)
        writer = FileWriter(
            partial_path(path), fmt, channels, sample_rate_hz, sample_format, str(path), sparse
        )
        target = _Target(path, writer, channels)
        self.targets.append(target)
        return target

    def close_all(self) -> None:
        for t in self.targets:
            if not t.done:
                t.writer.close()
                t.done = True

    def commit(self, paths: list[Path] | None = None) -> int:
        """Rename the finished files into place; the bytes they hold."""
        total = 0
        for p in paths if paths is not None else [t.path for t in self.targets] + self.extra:
            partial = partial_path(p)
            total += partial.stat().st_size
            os.replace(partial, p)
        return total

    def discard(self) -> list[Path]:
        """Stop every writer and remove its partial file; the files that were removed."""
        removed: list[Path] = []
        for t in self.targets:
            if not t.done:
                with contextlib.suppress(ExportError, OSError):
                    t.writer.abort()
                t.done = True
        for p in [t.path for t in self.targets] + self.extra + self.scratch:
            partial = partial_path(p)
            with contextlib.suppress(FileNotFoundError):
                partial.unlink()
                removed.append(partial)
        return removed


_Job = Callable[[], None]


class Encoder:
    """Writes blocks on its own thread; a bounded queue keeps it a few blocks behind at most."""

    def __init__(self, depth: int = 4) -> None:
        self._q: queue.Queue[_Job | None] = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self._abandoned = False
        self._thread = threading.Thread(target=self._run, name="troupe-encode", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := self._q.get()) is not None:
            if self.error is None and not self._abandoned:
                try:
                    job()
                except BaseException as exc:  # reported to the render thread on its next put
                    self.error = exc

    def put(self, job: _Job) -> None:
        if self.error is not None:
            raise self.error
        self._q.put(job)

    def finish(self) -> None:
        """Wait for every queued job; raise the first error any of them hit."""
        self._q.put(None)
        self._thread.join()
        if self.error is not None:
            raise self.error

    def abandon(self) -> None:
        """Skip the queued jobs and stop the thread (the render failed or was cancelled)."""
        self._abandoned = True
        self._q.put(None)
        self._thread.join()


class Meter(Protocol):
    def add(self, block: NDArray[np.float32]) -> None: ...


STEM_THREADS = max(1, min(4, os.cpu_count() or 1))
"""Threads that encode stems side by side (libsndfile runs without the GIL): with many roles,
encoding every stem's silence is most of a render's work."""


class BlockWriter:
    """Writes each finished block to the mix, the meter and every stem, stems spread over
    `STEM_THREADS` threads (each stem always on the same thread, so its blocks stay in order)."""

    def __init__(self, mix: _Target, stems: dict[RoleKey, _Target], meter: Meter | None = None) -> None:
        self.mix, self.meter = mix, meter
        items = list(stems.items())
        n_groups = min(STEM_THREADS, len(items)) if len(items) > 2 else 1
        self.groups = [items[k::n_groups] for k in range(n_groups)] if items else []
        self._pool = ThreadPoolExecutor(n_groups - 1, "troupe-stems") if n_groups > 1 else None

    def write(self, block: Block) -> None:
        futures = [self._pool.submit(_write_stems, block, g) for g in self.groups[1:]] if self._pool else []
        self.mix.writer.write(block.mix)
        if self.meter is not None:
            self.meter.add(block.mix)
        try:
            if self.groups:
                _write_stems(block, self.groups[0])
        finally:
            for f in futures:
                f.result()  # NB: waits for every group, then raises the first error

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)


def _write_stems(block: Block, group: list[tuple[RoleKey, _Target]]) -> None:
    """One block to each stem of `group` (silence for the roles not heard in it)."""
    n = block.mix.shape[0]
    silent: dict[int, NDArray[np.float32]] = {}
    for role, target in group:
        audio = block.stems.get(role)
        if audio is None:
            audio = silent.setdefault(target.channels, np.zeros((n, target.channels), np.float32))
        elif target.channels == 1:
            audio = audio[:, :1]
        target.writer.write(audio)


def stem_format(name: str) -> AudioFormat:
    fmt = FORMATS.get(name)
    if fmt is None or fmt.lossy or fmt.encoder not in ("wav", "sndfile"):
        raise ExportError(f"stems are written as flac or wav, not {name!r}")
    return fmt


def premaster_path(out: Path) -> Path:
    return out.with_name(out.name + ".premaster.flac")
