"""After the mix is streamed: loudness normalisation (a second pass over a lossless
premaster, so memory stays flat) and audiobook chapters and tags."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import soundfile as sf

from engine.core.types import Script
from engine.export import FORMATS, AudioFormat
from engine.render.outputs import OutputFiles, _Target, partial_path
from engine.render.result import LineTiming, Progress

if TYPE_CHECKING:
    from engine.export.loudness import LoudnessTarget
    from engine.render.clipgain import ClipGains


@dataclass(frozen=True)
class Normalised:
    measured_lufs: float
    gain_db: float
    stems: dict[str, Path]
    """Role -> the normalised stem."""


def normalise_into(out: Path, premaster: _Target, files: OutputFiles, measured_lufs: float,
                   target: LoudnessTarget, sample_format: str, progress: Progress | None,
                   stems: Mapping[str, tuple[_Target, Path]] = {},
                   stem_format: AudioFormat = FORMATS["flac"], stem_sample_format: str = "s24",
                   clips: ClipGains | None = None) -> Normalised:  # fmt: skip
    """Read the premaster, bring it to `target`, write `out`; each stem's premaster (role ->
    premaster, final path) takes the very gain the mix took, frame by frame, so the stems
    still add up to the mix; so does each clip (`clips`) over its span. The premasters are
    removed once the final files are written."""
    from engine.export.loudness import normalised

    rate = sf.info(str(partial_path(premaster.path))).samplerate
    final = files.open(out, premaster.channels, rate, sample_format)
    finals = {r: files.open(path, t.channels, rate, stem_sample_format, stem_format, sparse=True)
              for r, (t, path) in stems.items()}  # fmt: skip
    with contextlib.ExitStack() as stack:
        f = stack.enter_context(sf.SoundFile(partial_path(premaster.path)))
        sources = {r: stack.enter_context(sf.SoundFile(partial_path(t.path))) for r, (t, _) in stems.items()}
        if clips is not None:
            stack.callback(clips.abort)  # NB: nothing left open after a clean finish
        n = f.frames

        def read(a: int, b: int) -> np.ndarray:
            f.seek(a)
            return np.asarray(f.read(b - a, dtype="float32", always_2d=True))

        for start, block, gain in normalised(read, n, measured_lufs, target):
            final.writer.write(block)
            for r, src in sources.items():  # NB: read in order, block after block
                finals[r].writer.write(src.read(len(block), dtype="float32", always_2d=True) * gain[:, None])
            if clips is not None:
                clips.feed(start, gain)
            if progress:
                done = start + len(block)
                progress(0.9 + 0.09 * done / max(1, n), f"normalising loudness to {target.lufs:g} LUFS")
        if clips is not None:
            clips.close()
    for t in (final, *finals.values()):
        t.writer.close()
        t.done = True
    for t in (premaster, *(t for t, _ in stems.values())):
        files.targets.remove(t)
        partial_path(t.path).unlink()
    return Normalised(measured_lufs, target.lufs - measured_lufs, {r: t.path for r, t in finals.items()})


def scene_chapters(script: Script, lines: Sequence[LineTiming]) -> list[tuple[float, str]]:
    """(start, title) of each scene that has a voiced line, in time order; the first from 0."""
    starts: dict[int, float] = {}
    for ln in lines:
        if not ln.error:
            starts[ln.scene] = min(starts.get(ln.scene, ln.start_s), ln.start_s)
    rows = sorted((s, k) for k, s in starts.items())
    out = []
    for n, (start_s, k) in enumerate(rows):
        title = script.scenes[k].heading if k < len(script.scenes) else f"Chapter {n + 1}"
        out.append((0.0 if n == 0 else start_s, title))
    return out


def finish_audiobook(out: Path, script: Script, lines: Sequence[LineTiming], duration_s: float) -> None:
    """Chapters from the scenes and tags from the title page, into the (partial) M4B file."""
    from engine.export.audiobook import Chapter, add_chapters, book_tags, write_tags

    path = partial_path(out)
    chapters = [Chapter(s, t) for s, t in scene_chapters(script, lines)]
    if chapters:
        add_chapters(path, chapters, duration_s, str(out))
    write_tags(path, book_tags(script.metadata, script.title), str(out))


def is_audiobook(out: Path) -> bool:
    return out.suffix.lower() in FORMATS["m4a"].suffixes
