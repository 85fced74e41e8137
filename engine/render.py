"""Offline render: a whole script to a WAV/FLAC mix, per-role stems and an SRT cue sheet."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf

from engine.cast import Cast
from engine.core.errors import SynthesisError, TroupeError
from engine.core.types import SAMPLE_RATE_HZ, Script
from engine.mixer import Clip, MixControls, Mixer, Pacing, layout
from engine.script.subtitles import format_srt_time
from engine.synthesis.base import Mono, Synthesizer, SynthRequest

BLOCK_FRAMES = 65_536
TAIL_S = 0.5
FORMATS = {".wav": ("WAV", "PCM_24"), ".flac": ("FLAC", "PCM_24")}

Progress = Callable[[float, str], None]
"""Called with (fraction done 0..1, what is happening)."""


class RenderCancelled(TroupeError):
    """The render was cancelled; no output file was left behind."""


@dataclass(frozen=True)
class LineTiming:
    """Where one line ended up in the render."""

    cue_index: int
    role: str
    text: str
    start_s: float
    duration_s: float
    error: str | None = None
    fallback: str | None = None
    """Why an espeak-ng stand-in voiced this line instead of the voice it is cast to."""


@dataclass
class RenderResult:
    """What a render produced, and how long each stage took."""

    path: Path
    duration_s: float
    lines: list[LineTiming]
    stems: dict[str, Path] = field(default_factory=dict)
    cue_sheet: Path | None = None
    synth_s: float = 0.0
    mix_s: float = 0.0

    @property
    def failed(self) -> list[LineTiming]:
        return [ln for ln in self.lines if ln.error]

    @property
    def fell_back(self) -> list[LineTiming]:
        return [ln for ln in self.lines if ln.fallback and not ln.error]


def write_cue_sheet(path: Path, lines: list[LineTiming]) -> None:
    """An SRT of the actual line timings, `[ROLE] text`, in time order."""
    rows = sorted((ln for ln in lines if not ln.error), key=lambda ln: (ln.start_s, ln.cue_index))
    fmt = format_srt_time
    blocks = [
        f"{k}\n{fmt(ln.start_s)} --> {fmt(ln.start_s + ln.duration_s)}\n[{ln.role}] {ln.text}\n"
        for k, ln in enumerate(rows, start=1)
    ]
    path.write_text("\n".join(blocks), encoding="utf-8")


def synthesize_lines(
    script: Script,
    cast: Cast,
    synth: Synthesizer,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> tuple[dict[int, Mono], dict[int, str]]:
    """Voice every cue, `synth.max_batch` at a time; a failed line is reported, not fatal."""
    audio: dict[int, Mono] = {}
    errors: dict[int, str] = {}
    cues = list(script.cues)
    step = max(1, synth.max_batch) * 16  # enough in flight to keep every worker busy
    for k in range(0, len(cues), step):
        if cancel is not None and cancel.is_set():
            raise RenderCancelled("render cancelled")
        part = cues[k : k + step]
        requests = [SynthRequest(c.text, cast[c.role], c.index) for c in part]
        try:
            results = synth.synthesize(requests)
        except SynthesisError:
            results = []
            for r in requests:  # retry one by one so one bad line fails alone
                try:
                    results.extend(synth.synthesize([r]))
                except SynthesisError as exc:
                    errors[r.request_id] = str(exc)
                    results.append(np.zeros(0, np.float32))
        for cue, clip in zip(part, results, strict=True):
            if cue.index not in errors:
                audio[cue.index] = clip
        if progress:
            progress(0.8 * min(len(cues), k + step) / len(cues), "synthesizing")
    return audio, errors


def _write(path: Path, mixer: Mixer, n_frames: int, roles: set[str] | None) -> None:
    fmt, subtype = FORMATS[path.suffix.lower()]
    block = np.zeros((BLOCK_FRAMES, 2), np.float32)
    with sf.SoundFile(path, "w", SAMPLE_RATE_HZ, 2, subtype, format=fmt) as f:
        for start in range(0, n_frames, BLOCK_FRAMES):
            n = min(BLOCK_FRAMES, n_frames - start)
            mixer.render(start, block[:n], roles)
            f.write(block[:n])


def _safe_name(role: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", role).strip("_") or "role"


def render_script(
    script: Script,
    cast: Cast,
    out_path: str | Path,
    synth: Synthesizer,
    stems_dir: str | Path | None = None,
    pacing: Pacing = Pacing(),
    edits: Mapping[int, str] | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> RenderResult:
    """Render `script` faster than real time; returns the timings of every line."""
    out_path = Path(out_path)
    if out_path.suffix.lower() not in FORMATS:
        raise TroupeError(f"{out_path}: output must end in .wav or .flac")
    if edits:
        cues = tuple(c.with_text(edits[c.index]) if c.index in edits else c for c in script.cues)
        script = Script(script.title, script.path, script.format, script.scenes, cues,
                        script.roles, script.metadata)  # fmt: skip
    t0 = time.perf_counter()
    audio, errors = synthesize_lines(script, cast, synth, progress, cancel)
    fallbacks: dict[int, str] = getattr(synth, "fallbacks", {})
    t1 = time.perf_counter()
    durations = {i: len(a) / SAMPLE_RATE_HZ for i, a in audio.items()}
    starts = layout(script.cues, durations, pacing)
    mixer = Mixer(MixControls.from_voices({r: cast[r] for r in script.roles}))
    lines: list[LineTiming] = []
    for cue in script.cues:
        start_frame = round(starts[cue.index] * SAMPLE_RATE_HZ)
        if cue.index in audio:
            mixer.add(Clip(start_frame, cue.role, audio[cue.index], cue.index))
        lines.append(LineTiming(cue.index, cue.role, cue.text, starts[cue.index],
                                durations.get(cue.index, 0.0), errors.get(cue.index),
                                fallbacks.get(cue.index)))  # fmt: skip
    n_frames = mixer.end_frame + round(TAIL_S * SAMPLE_RATE_HZ)
    if cancel is not None and cancel.is_set():
        raise RenderCancelled("render cancelled")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    _write(out_path, mixer, n_frames, None)
    result = RenderResult(out_path, n_frames / SAMPLE_RATE_HZ, lines, synth_s=t1 - t0)
    if stems_dir is not None:
        stems = Path(stems_dir)
        stems.mkdir(parents=True, exist_ok=True)
        for k, role in enumerate(script.roles):
            if cancel is not None and cancel.is_set():
                raise RenderCancelled("render cancelled")
            path = stems / f"{_safe_name(role)}{out_path.suffix.lower()}"
            _write(path, mixer, n_frames, {role})
            result.stems[role] = path
            if progress:
                progress(0.9 + 0.1 * (k + 1) / len(script.roles), f"stem {role}")
    result.cue_sheet = out_path.with_suffix(".srt")
    write_cue_sheet(result.cue_sheet, lines)
    result.mix_s = time.perf_counter() - t1
    if progress:
        progress(1.0, "done")
    return result
