"""After the mix is streamed: loudness normalisation (a second pass over a lossless
premaster, so memory stays flat), then tags and chapters in the mix."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import soundfile as sf

from engine.core.types import RoleKey, Script
from engine.export import FORMATS, AudioFormat
from engine.export.formats import format_for_path
from engine.export.tags import BookInfo, Chapter, book_info, tag_file
from engine.render.outputs import OutputFiles, _Target, partial_path
from engine.render.result import Progress

if TYPE_CHECKING:
    from engine.export.loudness import LoudnessTarget
    from engine.render.clipgain import ClipGains


@dataclass(frozen=True)
class Normalised:
    measured_lufs: float
    gain_db: float
    stems: dict[str, Path]
    """Role -> the normalised stem."""
    written: list[_Target]
    """The files this pass wrote (the mix and the stems), still under their partial names."""


def normalise_into(out: Path, premaster: _Target, files: OutputFiles, measured_lufs: float,
                   target: LoudnessTarget, sample_format: str, progress: Progress | None,
                   stems: Mapping[RoleKey, tuple[_Target, Path]] = {},
                   stem_format: AudioFormat = FORMATS["flac"], stem_sample_format: str = "s24",
                   clips: ClipGains | None = None) -> Normalised:  # fmt: skip
    """Read the premaster, bring it to `target`, write `out`; each stem's premaster (role ->
    premaster, final path) takes the very gain the mix took, frame by frame, so the stems
    still add up to the mix; so does each clip (`clips`) over its span. The premasters stay
    (`drop_premasters`): a pass whose encoded file peaks over is run again from them."""
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
    return Normalised(measured_lufs, target.lufs - measured_lufs, {r: t.path for r, t in finals.items()},
                      [final, *finals.values()])  # fmt: skip


def drop(files: OutputFiles, targets: Sequence[_Target]) -> None:
    """Remove `targets`' partial files (premasters once used, or a pass to be run again)."""
    for t in targets:
        files.targets.remove(t)
        partial_path(t.path).unlink(missing_ok=True)


def tag_mix(out: Path, script: Script, marks: Sequence[Chapter], duration_s: float,
            book: BookInfo | None) -> list[Chapter]:  # fmt: skip
    """Tags (the title page's, or `book`) and the chapters `marks` into the mix's partial
    file; the chapters written (none for a format without a place for them)."""
    fmt = format_for_path(str(out))
    info = book if book is not None else book_info(script.metadata, script.title)
    if fmt.name == "m4a" and not info.genre:
        info = replace(info, genre="Audiobook")
    return list(marks) if tag_file(partial_path(out), fmt, info, marks, duration_s, str(out)) else []
