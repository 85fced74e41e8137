"""A show playing in real time: cue deadlines on the show clock, scheduled synthesis,
placement of each line (chunk by chunk) on the timeline, and render-ahead into the ring.

The show clock is the ring itself: show frame = ring position - origin. The frame being
written now is `write_frame`; a cue starting at show time t must be placed in the mixer
before the writer reaches it, i.e. by wall time now + (t - write_s): its deadline.
Seek, loop and skip move `origin`; pause stops the callback consuming, so the clock stops.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engine.audio_io.ring import MixRing
from engine.cast import Cast
from engine.core.types import SAMPLE_RATE_HZ, Cue, Script, Voice
from engine.mixer import Clip, MixControls, Mixer, Pacing
from engine.scheduler import Request, RequestClass, Scheduler, State
from engine.scheduler.request import Clock, monotonic
from engine.synthesis.text import split_chunks

BLOCK_FRAMES = 1024
SR = SAMPLE_RATE_HZ


class CueState(enum.Enum):
    PENDING = "pending"
    QUEUED = "queued"
    SYNTHESIZING = "synthesizing"
    READY = "ready"
    PLAYING = "playing"
    PLAYED = "played"
    FAILED = "failed"
    FALLBACK = "fallback"


@dataclass
class CueTrack:
    """Everything the show knows about one cue."""

    cue: Cue
    chunks: list[str]
    audio: list[np.ndarray | None] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    start_s: float | None = None
    """Fixed once the first chunk is placed."""
    placed_chunks: int = 0
    next_chunk_frame: int = 0
    state: CueState = CueState.PENDING
    fallback: bool = False
    error: str = ""
    late_ms: float = 0.0
    generation: int = 0
    """Bumped on every re-take, so results of an older take are ignored."""
    skipped: bool = False
    """Jumped over by a seek before it was voiced."""

    @property
    def est_duration_s(self) -> float:
        if self.audio and all(a is not None for a in self.audio):
            return sum(len(a) for a in self.audio if a is not None) / SR
        words = max(1, len(self.cue.text.split()))
        return words * 60.0 / 175 + 0.2

    @property
    def known(self) -> bool:
        return bool(self.audio) and all(a is not None for a in self.audio)


@dataclass
class ShowStats:
    placed: int = 0
    late: int = 0
    """Lines placed after their planned start (a deadline miss at the show level)."""
    failed: dict[int, str] = field(default_factory=dict)
    late_ms: list[float] = field(default_factory=list)
    adlibs: list[Request] = field(default_factory=list)


class Show:
    """One script playing into one ring, fed by one scheduler."""

    def __init__(
        self,
        script: Script,
        cast: Cast,
        scheduler: Scheduler,
        ring: MixRing,
        pacing: Pacing = Pacing(),
        render_ahead_ms: float = 200.0,
        lookahead_s: float = 30.0,
        prefetch_s: float = 10.0,
        clock: Clock = monotonic,
    ) -> None:
        self.script, self.cast, self.scheduler, self.ring = script, cast, scheduler, ring
        self.pacing = pacing
        self.clock = clock
        self.render_ahead_s = render_ahead_ms / 1000
        self.target_fill = min(ring.capacity, round(self.render_ahead_s * SR))
        self.lookahead_s, self.prefetch_s = lookahead_s, prefetch_s
        self.mixer = Mixer(self._controls())
        self.tracks = [CueTrack(c, split_chunks(c.text) or [c.text]) for c in script.cues]
        self.stats = ShowStats()
        self.origin = ring.write_pos
        self.loop: tuple[float, float] | None = None
        self.cue_stack = False
        """Theatre mode: each cue waits for GO; the timeline stretches to when GO came."""
        self.go_index = -1
        self.on_cue_changed: Callable[[CueTrack], None] | None = None
        self.on_request_done: Callable[[Request], None] | None = None
        """Observer of every finished request (metrics), called on the engine thread."""
        self._next_place = 0
        self._planned: dict[int, float] = {}
        self._block = np.zeros((BLOCK_FRAMES, ring.channels), np.float32)
        self._last_tick = -1e9
        for role in script.roles:
            self.scheduler.weights.setdefault(role, cast[role].weight)
        self.scheduler.policy.reweight(self.scheduler.weights)
        self._replan()

    # --- clock ---------------------------------------------------------------------
    @property
    def write_frame(self) -> int:
        return self.ring.write_pos - self.origin

    @property
    def write_s(self) -> float:
        return self.write_frame / SR

    @property
    def playhead_s(self) -> float:
        return max(0, self.ring.read_pos - self.origin) / SR

    @property
    def end_s(self) -> float:
        if not self.tracks:
            return 0.0
        return max(self._planned[t.cue.index] + t.est_duration_s for t in self.tracks)

    @property
    def finished(self) -> bool:
        done = all(t.placed_chunks >= len(t.chunks) or t.skipped or t.state is CueState.FAILED
                   for t in self.tracks)  # fmt: skip
        return self._next_place >= len(self.tracks) and done and self.write_frame >= self.mixer.end_frame

    def deadline(self, show_s: float) -> float:
        """Wall-clock time by which audio for show time `show_s` must be in the mixer."""
        writer_s = max(self.write_s, self.playhead_s + self.render_ahead_s)  # steady state
        return self.clock() + (show_s - writer_s)

    # --- planning ------------------------------------------------------------------
    def _replan(self) -> None:
        """Planned start of every cue from fixed starts, real durations and estimates."""
        cursor = self.pacing.lead_in_s
        prev: CueTrack | None = None
        for t in self.tracks:
            cue = t.cue
            if t.start_s is not None:
                start = t.start_s
            elif cue.start_s is not None:
                start = cue.start_s
            elif cue.overlaps_previous and prev is not None:
                start = self._planned[prev.cue.index]
            elif prev is None:
                start = cursor
            else:
                gap = self.pacing.scene_gap_s if cue.scene != prev.cue.scene else self.pacing.gap_s
                start = cursor + gap
            self._planned[cue.index] = start
            cursor = max(cursor, start + t.est_duration_s)
            prev = t

    def planned_start_s(self, cue_index: int) -> float:
        return self._planned[cue_index]

    def _chunk_deadlines(self, t: CueTrack) -> list[float]:
        start = self._planned[t.cue.index]
        out, offset = [], 0.0
        words_total = max(1, len(t.cue.text.split()))
        for chunk in t.chunks:
            out.append(self.deadline(start + offset))
            offset += t.est_duration_s * len(chunk.split()) / words_total
        return out

    def _submit_window(self) -> None:
        horizon = self.write_s + self.lookahead_s
        for t in self.tracks:
            if t.state is not CueState.PENDING:
                continue
            start = self._planned[t.cue.index]
            if start > horizon:
                break
            if start + t.est_duration_s < self.write_s:
                continue  # already behind the playhead (after a seek)
            klass = RequestClass.SCRIPTED if start - self.write_s < self.prefetch_s else RequestClass.PREFETCH
            self._submit(t, klass)

    def _submit(self, t: CueTrack, klass: RequestClass) -> None:
        voice = self.cast[t.cue.role]
        gen = t.generation
        t.audio = [None] * len(t.chunks)
        t.requests = []
        for k, (text, deadline) in enumerate(zip(t.chunks, self._chunk_deadlines(t), strict=True)):
            r = Request(t.cue.role, text, voice, deadline, klass, t.cue.index, k, len(t.chunks))
            r.on_done = lambda req, track=t, g=gen: self._on_done(track, g, req)
            t.requests.append(self.scheduler.submit(r, timeout_s=0.5))
        self._set_state(t, CueState.QUEUED)

    def _on_done(self, t: CueTrack, generation: int, r: Request) -> None:
        if self.on_request_done is not None:
            self.on_request_done(r)
        if generation != t.generation:
            return  # an older take
        if r.state is State.DONE and r.audio is not None:
            t.audio[r.chunk] = r.audio
            t.fallback |= r.fallback
            if t.known:
                self._replan()
            if t.state in (CueState.QUEUED, CueState.SYNTHESIZING):
                self._set_state(t, CueState.READY)
        elif r.state in (State.FAILED, State.SHED):
            if r.state is State.SHED:
                self._set_state(t, CueState.PENDING)  # asked again when closer
                return
            t.error = r.error
            t.audio[r.chunk] = np.zeros(0, np.float32)  # the show goes on without it
            self.stats.failed[t.cue.index] = r.error
            self._set_state(t, CueState.FAILED)
            self._replan()

    def _set_state(self, t: CueTrack, state: CueState) -> None:
        if t.state is not state:
            t.state = state
            if self.on_cue_changed is not None:
                self.on_cue_changed(t)

    # --- placement -----------------------------------------------------------------
    def _place(self) -> None:
        for t in self.tracks[self._next_place :]:
            if not self._place_track(t):
                break
            self._next_place += 1
        for t in self.tracks:  # slots and re-takes do not wait for the order
            if t.start_s is not None or t.cue.start_s is not None:
                self._place_track(t)

    def _place_track(self, t: CueTrack) -> bool:
        """Place what is ready of `t`; True when the cue's start is fixed."""
        if t.start_s is None:
            if self.cue_stack and t.cue.index > self.go_index:
                return False
            if not t.audio or t.audio[0] is None:
                return t.state is CueState.FAILED or self._behind(t)
            # Earlier lines are placed already; their full length must be known to place this one.
            earlier = self.tracks[max(0, t.cue.index - 3) : t.cue.index]
            if t.cue.start_s is None and not all(p.known or p.skipped or p.state is CueState.FAILED
                                                 for p in earlier):  # fmt: skip
                return False
            self._replan()
            planned = self._planned[t.cue.index]
            start = max(planned, self.write_s)
            if self.cue_stack:
                planned = start  # waiting for GO is not lateness
            if start > planned + 1e-3:
                t.late_ms = (start - planned) * 1000
                self.stats.late += 1
                self.stats.late_ms.append(t.late_ms)
            t.start_s = start
            t.next_chunk_frame = round(start * SR)
            self.stats.placed += 1
        while t.placed_chunks < len(t.audio):
            audio = t.audio[t.placed_chunks]
            if audio is None:
                break
            frame = max(t.next_chunk_frame, self.write_frame)
            if audio.size:
                self.mixer.add(Clip(frame, t.cue.role, audio, t.cue.index))
            t.next_chunk_frame = frame + len(audio)
            t.placed_chunks += 1
        return True

    def _behind(self, t: CueTrack) -> bool:
        """A cue that a seek jumped over is skipped, not waited for."""
        if t.state is CueState.PENDING and self._planned[t.cue.index] + t.est_duration_s < self.write_s:
            t.skipped = True
            return True
        return False

    def _update_play_states(self) -> None:
        head = self.playhead_s
        for t in self.tracks:
            if t.start_s is None or t.state in (CueState.PLAYED, CueState.FAILED):
                continue
            end = t.start_s + t.est_duration_s
            if head >= end and t.placed_chunks >= len(t.chunks):
                self._set_state(t, CueState.PLAYED)
            elif head >= t.start_s and t.state is not CueState.PLAYING:
                self._set_state(t, CueState.FALLBACK if t.fallback else CueState.PLAYING)

    # --- rendering -----------------------------------------------------------------
    def _render_ahead(self) -> None:
        while True:
            want = min(self.target_fill - self.ring.fill_frames, BLOCK_FRAMES)
            if want <= 0:
                return
            if self.loop is not None:
                loop_start, loop_end = self.loop
                to_end = round(loop_end * SR) - self.write_frame
                if to_end <= 0:
                    self.origin = self.ring.write_pos - round(loop_start * SR)  # seamless jump
                    continue
                want = min(want, to_end)
            block = self._block[:want]
            self.mixer.render(self.write_frame, block)
            self.ring.write(block)

    def tick(self) -> None:
        """One engine step (call every few ms): schedule, place, render ahead."""
        now = self.clock()
        if self.scheduler.wake.is_set() or now - self._last_tick >= self.scheduler.config.tick_s:
            self._last_tick = now
            self._submit_window()
            self.scheduler.tick()
        self._place()
        self._update_play_states()
        self._render_ahead()

    # --- director commands (engine thread) -------------------------------------------
    def adlib(self, role: str, text: str, voice: Voice | None = None) -> Request:
        """Speak `text` as `role` as soon as possible, over whatever is playing."""
        r = Request(role, text, voice or self.cast[role], self.deadline(self.write_s), RequestClass.ADLIB)
        r.on_done = self._place_adlib
        self.stats.adlibs.append(r)
        return self.scheduler.submit(r, timeout_s=0.5)

    def _place_adlib(self, r: Request) -> None:
        if r.state is State.DONE and r.audio is not None and r.audio.size:
            self.mixer.add(Clip(self.write_frame, r.role, r.audio, -1))
            r.t_placed = self.clock()
            # heard once the callback has read what was ahead of it, plus the device latency
            r.t_played = r.t_placed + self.ring.fill_frames / SR + self.ring.output_latency_s()

    def retake(self, cue_index: int, text: str | None = None) -> None:
        """Re-voice one cue (edited text or a new voice); nothing else is re-rendered."""
        t = self.tracks[cue_index]
        if t.start_s is not None and t.start_s < self.write_s:
            return  # already (partly) in the ring: too late to replace this take
        t.generation += 1
        self.scheduler.cancel(lambda r: r.cue_index == cue_index)
        self.mixer.remove_cue(cue_index)
        if text is not None:
            t.cue = t.cue.with_text(text)
            t.chunks = split_chunks(text) or [text]
        t.placed_chunks = 0
        t.audio = []
        keep_start = t.start_s
        self._set_state(t, CueState.PENDING)
        self._replan()
        self._submit(t, RequestClass.RETAKE)
        t.start_s = keep_start  # a placed line keeps its place on the timeline
        if keep_start is not None:
            t.next_chunk_frame = round(keep_start * SR)

    def recast(self, role: str, **changes: object) -> Voice:
        """Change a role's voice live: its lines not yet played are re-taken."""
        old = self.cast[role]
        voice = self.cast.set(role, **changes)
        self.mixer.controls = self._controls()
        if "weight" in changes:
            self.scheduler.set_weight(role, voice.weight)
        sound = ("backend", "voice_id", "rate_wpm", "pitch", "pitch_range")
        if any(getattr(old, k) != getattr(voice, k) for k in sound):
            for t in self.tracks:
                if t.cue.role == role and t.state is not CueState.PENDING:
                    self.retake(t.cue.index)
        return voice

    def _controls(self) -> MixControls:
        return MixControls.from_voices({r: self.cast[r] for r in self.script.roles})

    def seek(self, show_s: float) -> None:
        """Jump to `show_s`: queued audio is dropped, deadlines are recomputed."""
        self.ring.reset()
        self.origin = self.ring.write_pos - round(max(0.0, show_s) * SR)
        for t in self.tracks:
            if t.skipped and self._planned[t.cue.index] + t.est_duration_s >= show_s:
                t.skipped = False  # seeking back: voice what was jumped over
        self._next_place = next((k for k, t in enumerate(self.tracks) if t.start_s is None), len(self.tracks))
        self._refresh_deadlines()

    def _refresh_deadlines(self) -> None:
        for t in self.tracks:
            if t.requests and t.state in (CueState.QUEUED, CueState.SYNTHESIZING):
                for r, d in zip(t.requests, self._chunk_deadlines(t), strict=True):
                    r.deadline_s = d
        self.scheduler.reindex()

    def go(self, cue_index: int | None = None) -> int:
        """Theatre GO: release the next cue (or `cue_index`) in cue-stack mode; returns it."""
        self.go_index = self._next_place if cue_index is None else cue_index
        return self.go_index

    def skip(self) -> None:
        """Jump to the next cue after the playhead."""
        head = self.playhead_s
        nxt = next((s for s in sorted(self._planned.values()) if s > head + 0.05), None)
        if nxt is not None:
            self.seek(nxt)

    def loop_scene(self, scene: int | None) -> None:
        """Loop the given scene (None: stop looping) once its lines are placed."""
        if scene is None:
            self.loop = None
            return
        starts = [self._planned[t.cue.index] for t in self.tracks if t.cue.scene == scene]
        ends = [self._planned[t.cue.index] + t.est_duration_s for t in self.tracks if t.cue.scene == scene]
        if starts:
            self.loop = (min(starts), max(ends) + self.pacing.gap_s)

    def pause(self, paused: bool = True) -> None:
        self.ring.set_controls(playing=not paused, gain=self.ring.gain)
        if not paused:
            self._refresh_deadlines()

    def close(self) -> None:
        for t in self.tracks:
            t.generation += 1
        self.scheduler.cancel(lambda r: True)
