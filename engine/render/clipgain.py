"""The clips of a loudness-normalised render: each line's lossless premaster takes the gain
the mix took over the line's span, as the normalised blocks reach it; a few clips are open
at a time, so memory stays flat."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf
from numpy.typing import NDArray

from engine.export import AudioFormat, ExportError, FileWriter
from engine.render.outputs import OutputFiles, partial_path, premaster_path


@dataclass
class _Open:
    start_frame: int
    end_frame: int
    path: Path
    source: sf.SoundFile
    writer: FileWriter


@dataclass
class ClipGains:
    """Clips (start frame, final path) whose premasters were written in the first pass."""

    files: OutputFiles
    fmt: AudioFormat
    sample_format: str
    spans: list[tuple[int, Path]] = field(default_factory=list)
    _next: int = 0
    _open: list[_Open] = field(default_factory=list)

    def feed(self, start: int, gain: NDArray[np.float32]) -> None:
        """`gain` for frames start.. of the show: every clip under it takes its share."""
        end = start + len(gain)
        if self._next == 0:
            self.spans.sort(key=lambda s: s[0])
        while self._next < len(self.spans) and self.spans[self._next][0] < end:
            self._start(*self.spans[self._next])
            self._next += 1
        still = []
        for c in self._open:
            a, b = max(start, c.start_frame), min(end, c.end_frame)
            if b > a:
                audio = c.source.read(b - a, dtype="float32", always_2d=True)
                c.writer.write(audio * gain[a - start : b - start, None])
            if c.end_frame <= end:
                self._finish(c)
            else:
                still.append(c)
        self._open = still

    def _start(self, start_frame: int, path: Path) -> None:
        source = sf.SoundFile(partial_path(premaster_path(path)))
        try:
            self.files.extra.append(path)
            writer = FileWriter(partial_path(path), self.fmt, source.channels, source.samplerate,
                                self.sample_format, str(path))  # fmt: skip
        except BaseException:
            source.close()
            raise
        self._open.append(_Open(start_frame, start_frame + source.frames, path, source, writer))

    def _finish(self, c: _Open) -> None:
        c.source.close()
        c.writer.close()
        premaster = premaster_path(c.path)
        partial_path(premaster).unlink()
        self.files.scratch.remove(premaster)

    def close(self) -> None:
        """After the last block: every clip must be done."""
        if self._open or self._next < len(self.spans):
            self.abort()
            raise ExportError("a clip runs past the end of the mix")

    def abort(self) -> None:
        for c in self._open:
            c.source.close()
            with contextlib.suppress(ExportError, OSError):
                c.writer.abort()
        self._open = []
