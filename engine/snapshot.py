"""What the GUI draws: immutable snapshots of the engine, built on the engine thread and
handed over by one reference assignment (see DESIGN.md)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from engine.audio_io.guard import OutputGuard
from engine.audio_io.ring import MixRing
from engine.cast import Cast
from engine.core.types import SAMPLE_RATE_HZ, RoleKey, Script, Voice
from engine.metrics import AnomalyDetector, Rolling
from engine.mixer import Clip
from engine.mixer.envelope import EnvelopeCache
from engine.mixer.meters import WINDOW_FRAMES, Level, Meters, role_signals
from engine.scheduler import Scheduler
from engine.show import Show
from engine.show.tracks import HEARD, CueTrack

HISTORY_COLUMNS = 600
"""Priority heatmap width: 30 s at one column per 50 ms scheduler tick."""


@dataclass(frozen=True)
class CueView:
    """One cue as the GUI shows it."""

    index: int
    role: RoleKey
    text: str
    scene: int
    state: str
    start_s: float
    duration_s: float
    late_ms: float
    fallback: bool
    error: str
    hints: tuple[str, ...]
    kind: str = "line"
    """'line' (from the script), 'adlib' (typed live, heard once) or 'kept' (an ad-lib kept
    in the show)."""
    check: bool = False
    """The line check marked this take: its words were not all heard (TROUPE_LIVE_CHECK)."""
    wer: float | None = None
    fit: str = ""
    """A timed line's fit to its slot as heard: 'rate 1.21x, -40 ms' (ended 40 ms early),
    'over +310 ms'; empty for untimed lines and until the take is voiced."""


@dataclass(frozen=True)
class Figures:
    """The latency monitor's numbers."""

    adlib_p50_ms: float = float("nan")
    """Ad-lib latency from Enter to its first sample in the ring."""
    adlib_p95_ms: float = float("nan")
    audible_p50_ms: float = float("nan")
    """Ad-lib latency from Enter to its first audible sample (the callback's DAC time)."""
    audible_p95_ms: float = float("nan")
    queue_wait_p50_ms: float = float("nan")
    queue_wait_p95_ms: float = float("nan")
    rtf: float = float("nan")
    ring_fill_ms: float = 0.0
    callback_load: float = 0.0
    """Median callback time / block period over the latest callbacks."""
    underruns: int = 0
    """Callbacks that found the ring short of audio (the engine fell behind)."""
    xruns: int = 0
    """Output underflows PortAudio reported: the device itself ran dry (a callback was late),
    an audible glitch even when the ring was full."""
    callback_errors: int = 0
    queue_depth: int = 0
    deadline_misses: int = 0
    fallbacks: int = 0
    anomalies: int = 0


@dataclass(frozen=True)
class EngineSnapshot:
    """Everything the GUI draws, frozen at one moment."""

    version: int
    title: str = ""
    path: str = ""
    playing: bool = False
    output_open: bool = False
    output_lost: str = ""
    """Why the audio output was lost, while Troupe reopens it ('' otherwise)."""
    playhead_s: float = 0.0
    end_s: float = 0.0
    cues: tuple[CueView, ...] = ()
    roles: tuple[RoleKey, ...] = ()
    voices: dict[RoleKey, Voice] = field(default_factory=dict)
    cast_why: dict[RoleKey, str] = field(default_factory=dict)
    """Role -> why auto-casting chose its voice's gender (the cast panel's tooltip)."""
    scenes: tuple[str, ...] = ()
    priorities: NDArray[np.float32] = field(
        default_factory=lambda: np.zeros((0, HISTORY_COLUMNS), np.float32)
    )
    """Each role's urgency 0..1 (the scheduler's slack to its deadlines, see
    `engine.scheduler.urgency`), roles x HISTORY_COLUMNS, newest column last."""
    queued_work: NDArray[np.float32] = field(
        default_factory=lambda: np.zeros((0, HISTORY_COLUMNS), np.float32)
    )
    """Each role's queued synthesis time (s), the same shape."""
    figures: Figures = field(default_factory=Figures)
    latency_points: tuple[tuple[float, float, bool], ...] = ()
    """(show time s, latency ms, missed) of recent lines heard, for the rolling plot."""
    envelopes: dict[int, NDArray[np.float32]] = field(default_factory=dict)
    """Cue index -> its take's waveform envelope (peak per 50 ms, 0..1), once voiced; the
    same dict object from snapshot to snapshot while no take changed."""
    levels: dict[str, Level] = field(default_factory=dict)
    """Each role's meter reading (what the listener just heard of it)."""
    master: Level = field(default_factory=Level)
    cue_stack: bool = False
    go_cue: int = -1
    """The Standby cue: the one GO fires, in every mode (-1: none left)."""
    status: str = "stopped"
    """'stopped' (at the top), 'playing', 'paused', 'waiting for GO' (cue-stack mode), 'ended',
    or 'audio lost' (playing, while Troupe reopens a lost output)."""


class SnapshotSource(Protocol):
    """What a snapshot is built from: the engine's parts, read on its thread."""

    show: Show | None
    script: Script | None
    cast: Cast
    ring: MixRing
    scheduler: Scheduler
    history: NDArray[np.float32]
    work_history: NDArray[np.float32]
    adlib_ms: Rolling
    audible_ms: Rolling
    queue_wait_ms: Rolling
    anomalies: AnomalyDetector
    meters: Meters
    envelopes: EnvelopeCache

    guard: OutputGuard
    """The audio output (None while closed) and why it was lost ('' when it plays)."""


def build_snapshot(engine: SnapshotSource, version: int, block_frames: int) -> EngineSnapshot:
    """Everything the GUI draws, read from the engine at one moment (on its thread);
    `block_frames`: the output's frames per callback."""
    show = engine.show
    output_open, output_lost = engine.guard.output is not None, engine.guard.lost
    if show is None or engine.script is None:
        return EngineSnapshot(version=version, output_open=output_open, output_lost=output_lost)
    shown = _in_show_order(show)
    cues = tuple(_cue_view(show, t) for t in shown)
    times = engine.ring.stats.callback_times_ns()[-512:]
    block_ns = block_frames / SAMPLE_RATE_HZ * 1e9
    figures = Figures(
        adlib_p50_ms=engine.adlib_ms.percentile(50), adlib_p95_ms=engine.adlib_ms.percentile(95),
        audible_p50_ms=engine.audible_ms.percentile(50), audible_p95_ms=engine.audible_ms.percentile(95),
        queue_wait_p50_ms=engine.queue_wait_ms.percentile(50),
        queue_wait_p95_ms=engine.queue_wait_ms.percentile(95),
        rtf=engine.scheduler.backends["espeak"].measured_rtf,
        ring_fill_ms=engine.ring.fill_frames / SAMPLE_RATE_HZ * 1000,
        callback_load=float(np.median(times)) / block_ns if times.size else 0.0,
        underruns=engine.ring.stats.underruns, xruns=engine.ring.stats.xruns,
        callback_errors=engine.ring.stats.callback_errors, queue_depth=engine.scheduler.pending_count,
        deadline_misses=show.stats.late, fallbacks=sum(t.fallback for t in show.tracks),
        anomalies=len(engine.anomalies.flagged),
    )  # fmt: skip
    heard = (t for t in show.tracks if t.start_s is not None and t.state in HEARD)  # not lines still to come
    points = tuple((t.start_s, t.late_ms, t.late_ms > 0) for t in heard if t.start_s is not None)
    return EngineSnapshot(
        version=version, title=engine.script.title, path=engine.script.path,
        playing=engine.ring.controls.playing and output_open, output_open=output_open,
        output_lost=output_lost,
        playhead_s=show.times.playhead_s, end_s=show.times.end_s, cues=cues, roles=tuple(engine.script.roles),
        voices={r: engine.cast[r] for r in engine.script.roles},
        cast_why=dict(engine.cast.why),
        scenes=tuple(s.heading for s in engine.script.scenes), priorities=engine.history.copy(),
        queued_work=engine.work_history.copy(),
        figures=figures, latency_points=points[-400:], cue_stack=show.cue_stack, go_cue=show.times.standby,
        levels=engine.meters.roles, master=engine.meters.master,
        envelopes=engine.envelopes.update((t.cue.index, t) for t in shown),
        status=_status(show.status, output_open, output_lost),
    )  # fmt: skip


def _status(status: str, output_open: bool, output_lost: str) -> str:
    """The show's status as the director reads it: a playing show with no output is
    'audio lost' while Troupe reopens the device, else 'paused'."""
    if status != "playing":
        return status
    if output_lost:
        return "audio lost"
    return status if output_open else "paused"


def _cue_view(show: Show, t: CueTrack) -> CueView:
    start = t.start_s if t.start_s is not None else show.times.planned_start_s(t.cue.index)
    kind = ("kept" if t.kept else "adlib") if t.adlib else "line"
    return CueView(t.cue.index, t.cue.role, t.cue.text, t.cue.scene, t.state.value, start,
                   t.est_duration_s, t.late_ms, t.fallback, t.error, t.cue.hints, kind, t.check,
                   t.wer, _fit(show, t))  # fmt: skip


def _fit(show: Show, t: CueTrack) -> str:
    fit = show.fit.fits.get(t.cue.index) if show.fit is not None and not t.adlib else None
    if fit is None:
        return ""
    how = f"rate {fit.rate:.2f}x" if fit.strategy in ("rate", "overrun", "over") else fit.strategy
    if fit.strategy in ("overrun", "over"):
        how = f"{fit.strategy} ({how})"
    return f"{how}, {fit.after_s * 1000:+.0f} ms"


def measure_levels(show: Show, ring: MixRing, meters: Meters, heard: bool, now_s: float) -> None:
    """Update `meters` from the last WINDOW_FRAMES the listener heard (silence unless
    `heard`): the master from the ring itself, each role from its clips at those frames.
    Runs on the engine thread, never in the callback."""
    read = ring.read_pos
    n = max(0, min(WINDOW_FRAMES, read - (ring.write_pos - ring.capacity))) if heard else 0
    start = read - n - show.origin
    mixed = show.mixer.clips_in(start, start + n) if n else []
    adlibs = [t for t in show.adlibs.tracks if not t.kept and not t.deleted and t.start_s is not None]
    spliced = {t.cue.index for t in adlibs}  # their start is in the ring, not the mixer
    clips = [c for c in mixed if c.cue_index not in spliced]
    for t in adlibs:
        audio = t.audio[0] if t.known else None
        if audio is not None and t.start_s is not None:
            clips.append(Clip(round(t.start_s * SAMPLE_RATE_HZ), t.cue.role, audio, t.cue.index))
    roles = role_signals(clips, start, n, show.mixer.controls) if n else {}
    meters.update(ring.frames_at(read - n, n), roles, show.script.roles, now_s)


def _in_show_order(show: Show) -> list[CueTrack]:
    """The script's lines in order, each ad-lib inline after the last line that started at or
    before it was heard (one still being voiced: after the line heard now)."""
    adlibs = [t for t in show.adlibs.tracks if not t.deleted]
    if not adlibs:
        return list(show.tracks)
    starts = [show.times.planned_start_s(t.cue.index) for t in show.tracks]
    head = show.times.playhead_s
    after: dict[int, list[CueTrack]] = {}
    for t in adlibs:
        at = t.start_s if t.start_s is not None else head
        after.setdefault(bisect.bisect_right(starts, at), []).append(t)
    out: list[CueTrack] = []
    for k, t in enumerate(show.tracks):
        out += after.pop(k, [])
        out.append(t)
    for rest in after.values():
        out += rest
    return out
