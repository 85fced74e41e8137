"""Offline render as a pipeline: lines voice ahead in workers, the mixer consumes them in
timeline order and releases each clip once written, and files encode on their own thread."""

from __future__ import annotations

import dataclasses
import math
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.cast import Cast
from engine.core.errors import TroupeError
from engine.core.onset import leading_silence_s
from engine.core.types import SAMPLE_RATE_HZ, Cue, RoleKey, Script
from engine.export import FORMATS, SAMPLE_FORMATS, ExportError
from engine.export.formats import describe, format_for_path, require
from engine.export.tags import BookInfo, Chapter
from engine.mixer import Clip, MixControls, Pacing
from engine.mixer.levelling import RoleLeveller
from engine.render import finishing, outputs, sizing
from engine.render.captions import side_file, write_captions
from engine.render.chapters import MIN_CHAPTER_S, chapters
from engine.render.layout import StreamLayout
from engine.render.listening import LineFinisher, Listening
from engine.render.mixdown import StreamMixer
from engine.render.outputs import BlockWriter, Encoder, OutputFiles, _Target, partial_path, stem_format
from engine.render.prevoice import BackendPasses
from engine.render.report import build_report, write_report
from engine.render.result import (
    STEM_MODES,
    LineNotes,
    LineTiming,
    Progress,
    RenderCancelled,
    RenderResult,
    StemOptions,
    write_cue_sheet,
)
from engine.render.voicing import voice_in_order
from engine.synthesis.base import Mono, Synthesizer

if TYPE_CHECKING:
    from engine.export.loudness import LoudnessTarget

BLOCK_FRAMES = 65_536
TAIL_S = 0.5
RENDER_RATES_HZ = (22_050, 24_000, 44_100, 48_000)
"""Sample rates a render writes: espeak-ng's own, Kokoro's, CD and audiobook (ACX), the engine's."""
OPUS_RATES_HZ = (24_000, 48_000)


def safe_name(role: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", role).strip("_") or "role"


@dataclasses.dataclass
class _Job:
    """Everything one render needs, checked before anything is written."""

    script: Script
    cast: Cast
    out: Path
    stems_dir: Path | None
    stems: StemOptions
    sample_format: str
    stem_channels: dict[RoleKey, int]
    loudness: LoudnessTarget | None = None
    listening: Listening | None = None
    rate_hz: int = SAMPLE_RATE_HZ
    """The files' sample rate (the mix runs at it too)."""
    channels: int = 2
    """The mix's channels: 2, or 1 (pan ignored, each role at its own level; stems mono)."""
    book: BookInfo | None = None
    """The mix's tags (None: the script's title page)."""
    chapter_min_s: float = MIN_CHAPTER_S
    tail_s: float = TAIL_S
    """Room tone after the last line."""
    levelling: bool = True
    """Every role's speech brought to one level before the mix (engine/mixer/levelling.py)."""
    head_exact: bool = False
    """The first line's own leading silence is cut, so its speech starts at the lead-in
    (a delivery that measures the room tone at the head: ACX asks for 0.5-1 s)."""

    def stem_path(self, role: str) -> Path:
        assert self.stems_dir is not None
        return self.stems_dir / f"{safe_name(role)}.{self.stems.format}"

    def clip_path(self, cue_index: int, role: str) -> Path:
        assert self.stems_dir is not None
        return self.stems_dir / f"{cue_index + 1:05d}_{safe_name(role)}.{self.stems.format}"


def _check(job: _Job, pacing: Pacing, free: sizing.DiskFree) -> None:
    fmt = format_for_path(str(job.out))
    require(fmt, str(job.out))
    if job.sample_format not in SAMPLE_FORMATS:
        raise ExportError(f"sample format must be one of {', '.join(SAMPLE_FORMATS)}")
    if job.rate_hz not in RENDER_RATES_HZ:
        raise ExportError(
            f"sample rate must be one of {', '.join(map(str, RENDER_RATES_HZ))} Hz, not {job.rate_hz}"
        )
    if job.channels not in (1, 2):
        raise ExportError(f"the mix has 1 or 2 channels, not {job.channels}")
    if not 0 <= job.chapter_min_s < float("inf"):
        raise ExportError(f"a chapter's least length must be 0 s or more, not {job.chapter_min_s}")
    if fmt.name == "opus" and job.rate_hz not in OPUS_RATES_HZ:
        raise ExportError(
            f"{job.out}: Opus takes {' or '.join(map(str, OPUS_RATES_HZ))} Hz, not {job.rate_hz}"
        )
    rate, ch = job.rate_hz, job.channels
    est = sizing.estimate_show(job.script, job.cast, pacing)
    voiced_total = sum(est.voiced_s.values())
    needs = [(job.out.parent, sizing.audio_bytes(fmt, ch, job.sample_format, voiced_total, est.duration_s,
                                                 rate), "mix")]  # fmt: skip
    if job.loudness is not None:
        n = sizing.audio_bytes(FORMATS["flac"], ch, "s24", voiced_total, est.duration_s, rate)
        needs.append((job.out.parent, n, "premaster for loudness"))
    if job.stems_dir is not None:
        sfmt = stem_format(job.stems.format)
        if job.stems.mode not in STEM_MODES:
            raise ExportError(f"stem mode must be one of {', '.join(STEM_MODES)}, not {job.stems.mode!r}")
        if job.stems.mode == "clips":
            n = sizing.audio_bytes(sfmt, 1, job.stems.sample_format, voiced_total, voiced_total, rate)
            needs.append((job.stems_dir, n, f"{len(job.script.cues)} clips"))
            if job.loudness is not None:
                n = sizing.audio_bytes(FORMATS["flac"], 1, "s24", voiced_total, voiced_total, rate)
                needs.append((job.stems_dir, n, "clip premasters for loudness"))
        else:
            n = sum(sizing.audio_bytes(sfmt, c, job.stems.sample_format, est.voiced_s.get(r, 0.0),
                                       est.duration_s, rate)
                    for r, c in job.stem_channels.items())  # fmt: skip
            needs.append((job.stems_dir, n, f"{len(job.stem_channels)} stems"))
            if job.loudness is not None:
                flac = FORMATS["flac"]
                n = sum(sizing.audio_bytes(flac, c, "s24", est.voiced_s.get(r, 0.0), est.duration_s, rate)
                        for r, c in job.stem_channels.items())  # fmt: skip
                needs.append((job.stems_dir, n, "stem premasters for loudness"))
    sizing.check_space(needs, free)


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
    *,
    stems: StemOptions = StemOptions(),
    sample_format: str = "s24",
    loudness: LoudnessTarget | None = None,
    free: sizing.DiskFree = sizing.disk_free,
    listening: Listening | None = None,
    sample_rate_hz: int = SAMPLE_RATE_HZ,
    channels: int = 2,
    book: BookInfo | None = None,
    chapter_min_s: float = MIN_CHAPTER_S,
    levelling: bool = True,
    one_model_at_a_time: bool = False,
) -> RenderResult:
    """Render `script` to `out_path` (and stems), streaming: memory does not grow with the
    show. `loudness` normalises the mix (a second pass); an .m4b/.m4a mix gets the scenes as
    chapters and the title page as tags. `listening` fits timed lines to their slots and
    checks each line by ear (word captions and a report beside the mix). The mix is tagged
    (`book`, else the title page) with chapters (Fountain sections, else scenes grouped to
    at least `chapter_min_s`) where its format allows; with `levelling`, every role's speech
    is brought to one level before the mix (the cast's gain on top). With
    `one_model_at_a_time` (a render that owns `synth`'s models), two voice models take turns
    (engine/render/prevoice.py). The files (and the
    mix) run at `sample_rate_hz` with `channels` (1: pan ignored); lines come from `synth` at
    its own rate and are resampled where it differs. A render that fails
    or is cancelled removes its partial files and says so."""
    if edits:
        cues = tuple(c.with_text(edits[c.index]) if c.index in edits else c for c in script.cues)
        script = dataclasses.replace(script, cues=cues)
    stem_channels = {r: 1 if cast[r].pan == 0 or channels == 1 else 2 for r in script.roles}
    if loudness is not None and loudness.lead_in_s is not None:  # a delivery's own room tone
        pacing = dataclasses.replace(pacing, lead_in_s=loudness.lead_in_s)
    tail_s = loudness.tail_s if loudness is not None and loudness.tail_s is not None else TAIL_S
    head_exact = loudness is not None and loudness.lead_in_s is not None
    job = _Job(script, cast, Path(out_path), Path(stems_dir) if stems_dir is not None else None, stems,
               sample_format, stem_channels, loudness, listening, sample_rate_hz, channels, book,
               chapter_min_s, tail_s, levelling, head_exact)  # fmt: skip
    for folder in (job.out.parent, job.stems_dir):
        if folder is not None and folder.exists() and not folder.is_dir():
            raise ExportError(f"{folder}: cannot write there: it is a file, not a folder")
    _check(job, pacing, free)
    files = OutputFiles()
    try:
        job.out.parent.mkdir(parents=True, exist_ok=True)
        if job.stems_dir is not None:
            job.stems_dir.mkdir(parents=True, exist_ok=True)
        return _render(job, synth, pacing, files, progress, cancel, one_model_at_a_time)
    except OSError as exc:
        removed = files.discard()
        raise ExportError(f"{describe(exc, str(exc.filename or job.out))}{_removed(removed)}") from exc
    except RenderCancelled:
        raise RenderCancelled(f"render cancelled{_removed(files.discard())}") from None
    except KeyboardInterrupt:
        raise RenderCancelled(f"render interrupted{_removed(files.discard())}") from None
    except TroupeError as exc:
        removed = files.discard()
        raise type(exc)(f"{exc}{_removed(removed)}") from exc
    except BaseException:
        files.discard()
        raise


def _removed(paths: list[Path]) -> str:
    if not paths:
        return "; nothing was left on disk"
    names = ", ".join(p.name for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return f"; removed {len(paths)} partial file(s): {names}"


class _Stream:
    """The mixing end of the pipeline: each voiced line is placed, mixed once the timeline
    before it is final, and handed to the encoder thread block by block."""

    def __init__(self, job: _Job, files: OutputFiles, pacing: Pacing) -> None:
        script, cast = job.script, job.cast
        self.job, self.files = job, files
        controls = MixControls.from_voices({r: cast[r] for r in script.roles})
        role_stems = job.stems_dir is not None and job.stems.mode == "roles"
        self.rate = job.rate_hz
        self.mixer = StreamMixer(controls, script.roles if role_stems else (), job.channels)
        self.meter = None
        if job.loudness is not None:  # a lossless premaster, metered as it is written, normalised after
            from engine.export.loudness import LoudnessMeter

            self.meter = LoudnessMeter(self.rate)
            self.mix = files.open(
                outputs.premaster_path(job.out), job.channels, self.rate, "s24", FORMATS["flac"]
            )
        else:
            self.mix = files.open(job.out, job.channels, self.rate, job.sample_format)
        self.stems = {r: self._open_stem(r, ch) for r, ch in job.stem_channels.items()} if role_stems else {}
        self.encoder = Encoder()
        self.blocks = BlockWriter(self.mix, self.stems, self.meter)
        self.layout = StreamLayout(script.cues, pacing)
        self.lines: list[LineTiming] = []
        voices = {(v.backend, v.voice_id, v.pitch) for v in (cast[r] for r in script.roles)}
        # NB: one voice for every role (a like-for-like draft) has nothing to level
        self.leveller = RoleLeveller() if job.levelling and len(voices) > 1 else None
        self.clip_spans: list[tuple[int, Path]] = []

    def _open_stem(self, role: str, channels: int) -> _Target:
        """The role's stem; with loudness, its lossless premaster (it takes the mix's gain after)."""
        path, fmt, sample_format = (
            self.job.stem_path(role),
            stem_format(self.job.stems.format),
            self.job.stems.sample_format,
        )
        if self.meter is not None:
            path, fmt, sample_format = outputs.premaster_path(path), FORMATS["flac"], "s24"
        return self.files.open(path, channels, self.rate, sample_format, fmt, sparse=True)

    def take(self, cue: Cue, audio: Mono | None, error: str | None, fallback: str | None,
             notes: LineNotes = LineNotes()) -> None:  # fmt: skip
        if audio is not None and not self.lines and self.job.head_exact:  # the room tone is the lead-in
            audio = audio[round(leading_silence_s(audio, self.rate) * self.rate) :]
        if audio is not None and self.leveller is not None:
            audio = audio * np.float32(self.leveller.gain(cue.role, notes.speech_db))
        duration_s = 0.0 if audio is None else len(audio) / self.rate
        start_s = self.layout.place(cue, duration_s)
        if audio is not None and len(audio):
            clip = Clip(round(start_s * self.rate), cue.role, audio, cue.index)
            self.mixer.add(clip)
            if self.job.stems_dir is not None and self.job.stems.mode == "clips":
                self.encoder.put(lambda: _write_clip(self.job, self.files, clip))
                self.clip_spans.append((clip.start_frame, self.job.clip_path(clip.cue_index, clip.role)))
        lead = leading_silence_s(audio, self.rate) if audio is not None else 0.0
        self.lines.append(LineTiming(cue.index, cue.role, cue.text, start_s, duration_s, error, fallback,
                                     cue.scene, notes, lead))  # fmt: skip
        frontier = self.layout.frontier_s()
        if frontier != float("inf"):
            self.flush(int(frontier * self.rate))

    def flush(self, limit_frame: int, final: bool = False) -> None:
        """Mix and queue every whole block before `limit_frame` (at the end, the rest too)."""
        while self.mixer.written_frames < limit_frame:
            n = min(BLOCK_FRAMES, limit_frame - self.mixer.written_frames)
            if n < BLOCK_FRAMES and not final:
                return
            block = self.mixer.next_block(n)
            self.encoder.put(lambda b=block: self.blocks.write(b))  # type: ignore[misc]

    def finish(self) -> int:
        """Write the rest and the tail, wait for the encoder; the show's length in frames."""
        end_frame = self.mixer.end_frame + round(self.job.tail_s * self.rate)
        self.flush(end_frame, final=True)
        self.encoder.finish()
        return end_frame


def _render(job: _Job, synth: Synthesizer, pacing: Pacing, files: OutputFiles, progress: Progress | None,
            cancel: threading.Event | None, one_model_at_a_time: bool = False) -> RenderResult:  # fmt: skip
    n_cues = len(job.script.cues)
    fallbacks: dict[int, str] = getattr(synth, "fallbacks", {})
    t0 = time.perf_counter()
    stream = _Stream(job, files, pacing)
    finish = LineFinisher(job.listening, job.script.cues, job.cast, synth) if job.listening else None
    try:
        shown = [0.0]  # NB: a stretch voiced ahead moves the bar; its mix then tells its lines

        def report(at: int, what: str) -> None:
            shown[0] = max(shown[0], 0.97 * at / n_cues)
            if progress is not None:
                progress(shown[0], what)

        passes = None
        if one_model_at_a_time:
            passes = BackendPasses.for_render(synth, job.script.cues, job.cast, cancel, report)
        voiced = voice_in_order(job.script.cues, job.cast, synth, cancel, finish=finish, rate_hz=job.rate_hz,
                                measure=stream.leveller is not None, passes=passes)  # fmt: skip
        for k, (cue, audio, error, notes) in enumerate(voiced, 1):
            stream.take(cue, audio, error, fallbacks.get(cue.index), notes)
            if progress:
                written = _clock(stream.mixer.written_frames / job.rate_hz)
                report(k, f"{k} of {n_cues} lines voiced, {written} of audio written")
        if cancel is not None and cancel.is_set():
            raise RenderCancelled("render cancelled")
        end_frame = stream.finish()
    except BaseException:
        stream.encoder.abandon()
        raise
    finally:
        stream.blocks.close()
    synth_done = time.perf_counter()
    files.close_all()
    result = RenderResult(job.out, end_frame / job.rate_hz, stream.lines, synth_s=synth_done - t0,
                          stale_removed=list(files.stale))  # fmt: skip
    _finish(job, files, stream, result, progress)
    result.mix_s = time.perf_counter() - synth_done
    if progress:
        progress(1.0, f"done: {_clock(result.duration_s)} of audio")
    return result


MAX_ENCODES = 3
"""A normalised mix whose encoded file peaks over its ceiling is limited and encoded again
with the ceiling lowered by the excess (and 0.2 dB): at most this many encodes."""


def _finish(job: _Job, files: OutputFiles, stream: _Stream, result: RenderResult,
            progress: Progress | None) -> None:  # fmt: skip
    """Loudness (the encoded file measured, and encoded again while it peaks over), tags
    and chapters, then the files into place and the side files."""
    marks = chapters(job.script, result.lines, job.chapter_min_s)
    script = Path(job.script.path)
    if stream.meter is not None and job.loudness is not None:
        _normalise(job, files, stream, result, marks, progress)
    else:
        result.stems = {r: t.path for r, t in stream.stems.items()}
    result.chapters = finishing.tag_mix(job.out, job.script, marks, result.duration_s, job.book)
    if job.stems_dir is not None and job.stems.mode == "clips":
        result.stems = {p.stem: p for p in files.extra}
    result.bytes_written = files.commit()
    if result.compliance is not None:
        result.compliance_report = side_file(job.out, ".loudness.json", script)
        result.compliance_report.write_text(result.compliance.to_json(), encoding="utf-8")
    result.cue_sheet = side_file(job.out, ".srt", script)  # NB: never over a subtitle script
    write_cue_sheet(result.cue_sheet, result.lines)
    if job.listening is not None:
        result.report = build_report(result.lines)
        write_report(side_file(job.out, ".report.json", script), result.report)
    if (job.listening is not None and job.listening.check is not None) or any(
        ln.notes.words for ln in result.lines
    ):
        result.captions = write_captions(
            job.out, result.lines, script
        )  # heard, or the backends' own word times
    if job.stems_dir is not None:
        result.timeline = _write_timeline(job, result)


def _normalise(job: _Job, files: OutputFiles, stream: _Stream, result: RenderResult,
               marks: list[Chapter], progress: Progress | None) -> None:  # fmt: skip
    from engine.export.compliance import measure

    assert stream.meter is not None and job.loudness is not None
    stems = {r: (t, job.stem_path(r)) for r, t in stream.stems.items()}
    lufs = stream.meter.integrated_lufs()
    fmt = format_for_path(str(job.out))
    target = job.loudness
    if target.rms_db is not None and math.isfinite(stream.meter.rms_db()):  # ACX: RMS in its range
        target = dataclasses.replace(target, lufs=lufs + sum(target.rms_db) / 2 - stream.meter.rms_db())
    for encode in range(1, MAX_ENCODES + 1):
        clips = None
        if job.stems_dir is not None and job.stems.mode == "clips":
            from engine.render.clipgain import ClipGains

            clips = ClipGains(
                files, stem_format(job.stems.format), job.stems.sample_format, stream.clip_spans
            )
        done = finishing.normalise_into(job.out, stream.mix, files, lufs, target, job.sample_format,
                                        progress, stems, stem_format(job.stems.format),
                                        job.stems.sample_format, clips)  # fmt: skip
        if progress:
            progress(0.99, "measuring the encoded file")
        report = measure(partial_path(job.out), fmt, job.channels, job.rate_hz, job.loudness, marks)
        report.path, report.encodes = str(job.out), encode
        over = report.true_peak_db - job.loudness.true_peak_db
        off = _rms_miss(report.rms_db, job.loudness.rms_db)
        if (over <= 0 and not off) or encode == MAX_ENCODES or clips is not None:
            break  # NB: clips are written once (their premasters go as they are read)
        finishing.drop(files, done.written)
        ceiling = target.true_peak_db - over - 0.2 if over > 0 else target.true_peak_db
        target = dataclasses.replace(target, lufs=target.lufs + off, true_peak_db=ceiling)
    finishing.drop(files, [stream.mix, *(t for t, _ in stems.values())])
    result.loudness_measured_lufs, result.loudness_gain_db = done.measured_lufs, done.gain_db
    result.stems = done.stems
    result.compliance = report


def _rms_miss(rms_db: float, wanted: tuple[float, float] | None) -> float:
    """How far (dB) the file's RMS is from the middle of `wanted`, if it is outside it; else 0."""
    if wanted is None or not math.isfinite(rms_db) or wanted[0] <= rms_db <= wanted[1]:
        return 0.0
    return sum(wanted) / 2 - rms_db


def _write_clip(job: _Job, files: OutputFiles, clip: Clip) -> None:
    from engine.export import FileWriter

    path = job.clip_path(clip.cue_index, clip.role)
    fmt, sample_format = stem_format(job.stems.format), job.stems.sample_format
    if job.loudness is not None:  # a lossless premaster: the clip takes the mix's gain after
        path, fmt, sample_format = outputs.premaster_path(path), FORMATS["flac"], "s24"
        files.scratch.append(path)
    else:
        files.extra.append(path)
    w = FileWriter(partial_path(path), fmt, 1, job.rate_hz, sample_format, str(path))
    try:
        w.write(clip.audio.reshape(-1, 1).astype(np.float32, copy=False))
        w.close()
    except BaseException:
        w.abort()
        raise


def _write_timeline(job: _Job, result: RenderResult) -> Path | None:
    try:
        from engine.export.timeline import write_timeline
    except ImportError:
        return None  # the export extra (opentimelineio) is not installed
    assert job.stems_dir is not None
    path = job.stems_dir / "timeline.otio"
    media = {ln.cue_index: job.clip_path(ln.cue_index, ln.role) for ln in result.lines if not ln.error}
    if job.stems.mode == "roles":
        media = {ln.cue_index: job.stem_path(ln.role) for ln in result.lines if not ln.error}
    write_timeline(path, job.script, result.lines, media, per_line=job.stems.mode == "clips",
                   mix=result.path)  # fmt: skip
    return path


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}"
