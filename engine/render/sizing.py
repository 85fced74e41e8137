"""How much disk a render needs, estimated from the script before anything is voiced."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.cast import Cast
from engine.core.timing import RATE_WPM, TAIL_S, spoken_length_s
from engine.core.types import SAMPLE_RATE_HZ, Script
from engine.export import AudioFormat, ExportError
from engine.mixer import Pacing

LENGTH_MARGIN = 1.25
"""Lines are counted this much longer than the one estimate (engine/core/timing.py) says, so
the size errs on the large side."""
FLAC_SPEECH_RATIO = 0.5
"""FLAC of voiced audio against raw PCM, with room to spare (a 10-hour espeak-ng mix measured 0.24)."""
FLAC_SILENCE_RATIO = 0.01
"""FLAC of digital silence against raw PCM (constant subframes: a few bytes a frame)."""
MARGIN = 1.1
MARGIN_BYTES = 16 << 20

DiskFree = Callable[[Path], int]
"""Free bytes on the filesystem that holds a folder."""


def disk_free(folder: Path) -> int:
    return shutil.disk_usage(folder).free


@dataclass(frozen=True)
class ShowEstimate:
    """The show's length and each role's voiced seconds, before synthesis."""

    duration_s: float
    voiced_s: dict[str, float]


def estimate_show(script: Script, cast: Cast, pacing: Pacing) -> ShowEstimate:
    voiced: dict[str, float] = {}
    total = pacing.lead_in_s
    for cue in script.cues:
        voice = cast[cue.role] if cue.role in cast.voices else None
        rate, backend = (voice.rate_wpm, voice.backend) if voice is not None else (RATE_WPM, "espeak")
        seconds = (spoken_length_s(cue.text, rate, backend) - TAIL_S) * LENGTH_MARGIN
        voiced[cue.role] = voiced.get(cue.role, 0.0) + seconds
        total += seconds + pacing.scene_gap_s
        if cue.end_s is not None:
            total = max(total, cue.end_s)
    return ShowEstimate(total + 0.5, voiced)


def pcm_bytes_per_s(channels: int, sample_format: str, rate_hz: int = SAMPLE_RATE_HZ) -> int:
    return rate_hz * channels * {"s16": 2, "s24": 3, "f32": 4}[sample_format]


def audio_bytes(fmt: AudioFormat, channels: int, sample_format: str, voiced_s: float, total_s: float,
                rate_hz: int = SAMPLE_RATE_HZ) -> int:  # fmt: skip
    """Estimated size of a file of `total_s` seconds, `voiced_s` of them sound."""
    if fmt.lossy:
        return int(fmt.bytes_per_s * total_s)
    pcm = pcm_bytes_per_s(channels, sample_format, rate_hz)
    if fmt.name == "flac":
        return int(pcm * (voiced_s * FLAC_SPEECH_RATIO + (total_s - voiced_s) * FLAC_SILENCE_RATIO))
    return int(pcm * total_s)


def human(n_bytes: float) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if n_bytes < 1000 or unit == "GB":
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1000
    return f"{n_bytes:.1f} TB"  # pragma: no cover


def check_space(needs: Iterable[tuple[Path, int, str]], free: DiskFree = disk_free) -> None:
    """Refuse, before writing anything, a render whose files will not fit: `needs` is
    (folder, bytes, what) for each file; folders on one filesystem share its free space."""
    by_fs: dict[int, tuple[Path, int, list[str]]] = {}
    for folder, n, what in needs:
        probe = folder
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        dev = os.stat(probe).st_dev
        first, total, whats = by_fs.get(dev, (probe, 0, []))
        by_fs[dev] = (first, total + n, [*whats, f"{what} {human(n)}"])
    for probe, total, whats in by_fs.values():
        available = free(probe)
        if total * MARGIN + MARGIN_BYTES > available:
            raise ExportError(
                f"{probe}: not enough disk space for this render: it needs about {human(total)} "
                f"({', '.join(whats)}), plus a margin of {MARGIN - 1:.0%} and {human(MARGIN_BYTES)} "
                f"(about {human(total * MARGIN + MARGIN_BYTES)} in all), and {human(available)} is "
                "free; free some space, write the stems as FLAC or as clips (one file per line), or "
                "pick another folder"
            )
