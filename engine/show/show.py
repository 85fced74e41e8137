"""A show playing in real time: cue deadlines on the show clock, scheduled synthesis,
placement of each line (chunk by chunk) on the timeline, and render-ahead into the ring.

The show clock is the ring itself: show frame = ring position - origin. The frame being
written now is `times.write_frame`; a cue starting at show time t must be placed in the
mixer before the writer reaches it, i.e. by wall time now + (t - write_s): its deadline.
Seek, loop and skip move `origin`; pause stops the callback consuming, so the clock stops.
What the clock reads (the writer, the playhead, the end, the Standby cue, planned starts,
deadlines) is worked out in one place, `ShowTimes` (engine/show/times.py), as `show.times`.

Director commands (see DESIGN.md, "Live-show semantics"): Stop returns to the top with every
cue pending; in cue-stack mode every cue waits for GO and the clock holds while it waits;
ad-libs are items of their own, heard once unless kept; at the end the clock stops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from engine.audio_io.ring import MixRing
from engine.audio_io.splice import remix
from engine.cast import Cast
from engine.core.clock import Clock, monotonic
from engine.core.errors import QueueFull, TroupeError
from engine.core.types import RoleKey, Script, Voice
from engine.mixer import Clip, MixControls, Mixer, Pacing
from engine.mixer.levelling import RoleLeveller, speech_level_db
from engine.scheduler import Request, RequestClass, Scheduler, State
from engine.show.adlibs import Adlibs
from engine.show.fit import LiveFit
from engine.show.planner import Planner, chunk_deadlines
from engine.show.prepare import MAX_PREPARE_S, Readiness, readiness
from engine.show.revoice import StandInRevoicer
from engine.show.times import ShowTimes
from engine.show.tracks import HEARD, SR, Changes, CueState, CueTrack, ShowStats
from engine.synthesis.delivery import delivered_audio, delivered_voice
from engine.synthesis.text import split_chunks

if TYPE_CHECKING:
    from engine.show.listen import LiveListener

BLOCK_FRAMES = 1024
REFIT_AHEAD_S = 0.5
"""A timed line is voiced again to fit its slot only if its slot starts at least this far
ahead of the writer (a take comes back in well under that on every shipped voice)."""
MIX_FIELDS = ("mute", "solo", "gain_db", "pan")
"""A role's settings that change the mix, not the take."""
RELEASE_AFTER_S = 1.0
"""A line's audio is let go this long after the listener heard its end (see `_release_heard`)."""
__all__ = ["BLOCK_FRAMES", "CueState", "CueTrack", "Show", "ShowStats"]


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
        splice_margin_ms: float = 15.0,
        fit: bool = True,
        remix_margin_ms: float = 8.0,
    ) -> None:
        """`splice_margin_ms`: how far ahead of the listener an ad-lib is spliced in;
        `remix_margin_ms`: how far ahead a mute, solo, gain or pan change starts (a callback
        block, 5.3 ms at 256 frames, plus the time to mix the queue again)."""
        self.script, self.cast, self.scheduler, self.ring = script, cast, scheduler, ring
        self.pacing = pacing
        self.clock = clock
        self.render_ahead_s = render_ahead_ms / 1000
        self.target_fill = min(ring.capacity, round(self.render_ahead_s * SR))
        self.lookahead_s, self.prefetch_s = lookahead_s, prefetch_s
        self.mixer = Mixer(self._controls())
        changes = Changes()
        self.tracks = [CueTrack(c, split_chunks(c.text) or [c.text], cast[c.role].rate_wpm,
                                cast[c.role].backend, changes=changes) for c in script.cues]  # fmt: skip
        self.planner = Planner(lambda: self.timeline, pacing, changes)
        """Every cue's planned start, recomputed whenever a track changes what it reads."""
        self.stats = ShowStats()
        timed = any(c.start_s is not None and c.end_s is not None for c in script.cues)
        self.fit: LiveFit | None = LiveFit(script.cues) if fit and timed else None
        """Timed lines voiced to fit their slots (None: no timed lines, or fitting off)."""
        self._levels = RoleLeveller()
        """Each role's speech to one level (per voice: a stand-in or a recast voice apart)."""
        self.revoicer = StandInRevoicer(scheduler)
        """A stand-in's line voiced again in its cast voice, in the background."""
        self._refit: list[tuple[int, int]] = []
        """(cue, take) heard past its slot, to be voiced again at the next tick."""
        self._remix_margin = round(remix_margin_ms / 1000 * SR)
        self.adlibs = Adlibs(self, round(splice_margin_ms / 1000 * SR), changes, self._set_state)
        self.origin = ring.write_pos
        """The ring position of show time 0: seek, loop and skip move it."""
        self.times = ShowTimes(self)
        """Where the show stands and when things in it happen (the writer, the playhead, the
        end, the Standby cue, planned starts, deadlines), worked out from the state here."""
        self.loop: tuple[float, float] | None = None
        self.cue_stack = False
        """Theatre mode: each cue waits for GO; the clock holds while one waits."""
        self.go_index = -1
        self.stopped = True
        """At the top, not started (or sent back there by Stop)."""
        self.ended = False
        self.holding = False
        """Cue-stack mode: the clock is held until GO."""
        self.running = False
        """What the director asked for: playing (True) or paused."""
        self.preparing: Readiness | None = None
        """Play was asked for, and the clock waits until the lines ahead can be voiced in
        their cast voices in time (engine/show/prepare.py); None when not waiting."""
        self._prepare_since = 0.0
        self.on_cue_changed: Callable[[CueTrack], None] | None = None
        self.on_request_done: Callable[[Request], None] | None = None
        """Observer of every finished request (metrics), called on the engine thread."""
        self.listener: LiveListener | None = None
        """Checks each voiced line off the real-time path (None: no line check)."""
        self.next_place = 0
        """The first script line not yet placed in script order (those before it have their
        start fixed, or were skipped or failed)."""
        self._block = np.zeros((BLOCK_FRAMES, ring.channels), np.float32)
        self._last_tick = -1e9
        self._release_from = 0
        self._last_release = -1e9
        for role in script.roles:
            self.scheduler.set_weight(role, self.scheduler.weights.get(role, cast[role].weight))
        self._apply_transport()

    # --- the timeline and the transport's state --------------------------------------
    @property
    def timeline(self) -> list[CueTrack]:
        """The cues on the show's timeline: the script's, then ad-libs kept in the show."""
        return self.tracks + [t for t in self.adlibs.tracks if t.scripted]

    @property
    def status(self) -> str:
        """'ended', 'stopped', 'waiting for GO', 'playing' or 'paused'."""
        if self.ended:
            return "ended"
        if self.stopped:
            return "stopped"
        if self.holding:
            return "waiting for GO"
        if self.running and self.preparing is not None and self.preparing.judged:
            return "preparing"  # (not before the first turn has judged the lines ahead)
        return "playing" if self.running else "paused"

    # --- planning ------------------------------------------------------------------
    def _chunk_deadlines(self, t: CueTrack) -> list[float]:
        return chunk_deadlines(t, self.planner.starts[t.cue.index], self.times.now())

    def _submit_window(self) -> None:
        write_s = self.times.write_s
        horizon = write_s + self.lookahead_s
        for t in self.tracks:
            if t.state is not CueState.PENDING or t.in_flight:
                continue
            start = self.planner.starts[t.cue.index]
            if start > horizon:
                break
            if start + t.est_duration_s < write_s and t.start_s is None:
                continue  # already behind the playhead (after a seek)
            if t.known:  # voiced before a Stop: ready again once playing, without a new take
                if not self.stopped:
                    self._set_state(t, CueState.READY)
                continue
            klass = RequestClass.SCRIPTED if start - write_s < self.prefetch_s else RequestClass.PREFETCH
            if not self._submit(t, klass):
                return  # the queue is full: the rest waits for the next turn

    def _submit(self, t: CueTrack, klass: RequestClass) -> bool:
        """Queue every chunk of `t`; False (nothing queued) when the queue is full: the
        engine thread never waits for room, and the line is asked for again next turn."""
        voice = delivered_voice(self.cast[t.cue.role], t.cue.hints)
        if self.fit is not None and not t.adlib:
            voice = self.fit.voice_for(t.cue, voice)
        gen = t.generation
        t.audio = [None] * len(t.chunks)
        t.requests = []
        for k, (text, deadline) in enumerate(zip(t.chunks, self._chunk_deadlines(t), strict=True)):
            r = Request(t.cue.role, text, voice, deadline, klass, t.cue.index, k, len(t.chunks))
            r.on_done = lambda req, track=t, g=gen: self._on_done(track, g, req)
            try:
                t.requests.append(self.scheduler.submit(r, timeout_s=0.0))
            except QueueFull:
                self.scheduler.cancel_requests(t.requests)
                t.requests, t.audio = [], []
                self.stats.queue_full += 1
                return False
        self._set_state(t, CueState.QUEUED)
        return True

    def _on_done(self, t: CueTrack, generation: int, r: Request) -> None:
        if self.on_request_done is not None:
            self.on_request_done(r)
        if generation != t.generation:
            return  # an older take
        if r.state is State.DONE and r.audio is not None:
            v = r.voice
            key = f"{t.cue.role}\0{v.backend}:{v.voice_id}:{v.pitch}:{r.fallback}"
            level = np.float32(self._levels.gain(key, speech_level_db(r.audio, SR)))
            t.set_chunk(r.chunk, delivered_audio(r.audio * level, t.cue.hints, SR, r.chunk == 0))
            t.fallback |= r.fallback
            if r.fallback and not t.adlib:
                self.revoicer.offer(r)
            if t.known:
                if self.fit is not None and not t.adlib:
                    own = delivered_voice(self.cast[t.cue.role], t.cue.hints)
                    if self.fit.heard(t.cue, own, [a for a in t.audio if a is not None]):
                        self._refit.append((t.cue.index, t.generation))
                if self.listener is not None and not t.adlib:
                    backend = "espeak" if t.fallback else self.cast[t.cue.role].backend
                    chunks = [a for a in t.audio if a is not None]
                    self.listener.offer(t.cue.index, t.generation, chunks, t.cue.text, backend)
            if t.state in (CueState.QUEUED, CueState.SYNTHESIZING):
                self._set_state(t, CueState.READY)
        elif r.state in (State.FAILED, State.SHED):
            if r.state is State.SHED:
                self._set_state(t, CueState.PENDING)  # asked again when closer
                return
            t.error = r.error
            t.set_chunk(r.chunk, np.zeros(0, np.float32))  # the show goes on without it
            self.stats.failed[t.cue.index] = r.error
            self._set_state(t, CueState.FAILED)

    def _set_state(self, t: CueTrack, state: CueState) -> None:
        if t.state is not state:
            t.state = state
            if self.on_cue_changed is not None:
                self.on_cue_changed(t)

    # --- placement -----------------------------------------------------------------
    def _place(self) -> None:
        for t in self.tracks[self.next_place :]:
            if not self._place_track(t):
                break
            self.next_place += 1
        for t in self.tracks:  # slots and re-takes do not wait for the order
            if t.start_s is not None or t.cue.start_s is not None:
                self._place_track(t)

    def _waits_for_go(self, t: CueTrack) -> bool:
        return self.cue_stack and t.start_s is None and t.cue.index > self.go_index

    def _place_track(self, t: CueTrack) -> bool:
        """Place what is ready of `t`; True when the cue's start is fixed."""
        if t.start_s is None:
            if self._waits_for_go(t):
                return False
            if not t.audio or t.audio[0] is None:
                return t.state is CueState.FAILED or self._behind(t)
            # Earlier lines are placed already; their full length must be known to place this one.
            earlier = self.tracks[max(0, t.cue.index - 3) : t.cue.index]
            if t.cue.start_s is None and not all(p.known or p.released or p.skipped
                                                 or p.state is CueState.FAILED for p in earlier):  # fmt: skip
                return False
            planned = self.planner.starts[t.cue.index]
            start = max(planned, self.times.write_s)
            if self.cue_stack:
                start = planned = self.times.write_s  # GO starts it at once; waiting is not lateness
            if start > planned + 1e-3:
                t.late_ms = (start - planned) * 1000
                self.stats.late += 1
                self.stats.late_ms.append(t.late_ms)
            t.start_s = start
            t.next_chunk_frame = round(start * SR)
            self.stats.placed += 1
        self._place_chunks(t)
        return True

    def _place_chunks(self, t: CueTrack) -> None:
        while t.placed_chunks < len(t.audio):
            audio = t.audio[t.placed_chunks]
            if audio is None:
                break
            frame = max(t.next_chunk_frame, self.times.write_frame)
            if audio.size:
                self.mixer.add(Clip(frame, t.cue.role, audio, t.cue.index))
            t.next_chunk_frame = frame + len(audio)
            t.placed_chunks += 1

    def _behind(self, t: CueTrack) -> bool:
        """A cue that a seek jumped over is skipped, not waited for."""
        if (
            t.state is CueState.PENDING
            and self.planner.starts[t.cue.index] + t.est_duration_s < self.times.write_s
        ):
            t.skipped = True
            return True
        return False

    def _take_checks(self) -> None:
        """The listener's results, for the takes still in the show."""
        assert self.listener is not None
        for heard in self.listener.results():
            t = self.tracks[heard.cue_index] if heard.cue_index < len(self.tracks) else None
            if t is not None and t.generation == heard.generation and t.cue.index == heard.cue_index:
                t.wer, flagged = heard.check.wer, heard.check.flagged
                if flagged != t.check:
                    t.check = flagged
                    if self.on_cue_changed is not None:
                        self.on_cue_changed(t)

    def _update_play_states(self) -> None:
        if self.listener is not None:
            self._take_checks()
        if self.stopped:
            return  # nothing is heard: a jump while stopped stands its line by, it does not play it
        head = self.times.playhead_s
        for t in self.timeline:
            if t.state is CueState.FAILED:
                continue
            if t.start_s is None:
                standby = self.cue_stack and t.known and self.next_place == t.cue.index
                if standby or t.state is CueState.STANDBY:
                    self._set_state(t, CueState.STANDBY if standby else CueState.READY)
                continue
            end = t.start_s + t.est_duration_s
            if head >= end and t.placed_chunks >= len(t.chunks):
                self._set_state(t, CueState.PLAYED)
            elif t.start_s < head < end and t.state not in (CueState.PLAYING, CueState.FALLBACK):
                self._set_state(t, CueState.FALLBACK if t.fallback else CueState.PLAYING)
        self.adlibs.update_states(head)

    # --- rendering -----------------------------------------------------------------
    def _render_ahead(self) -> None:
        times = self.times
        while True:
            want = min(self.target_fill - self.ring.fill_frames, BLOCK_FRAMES)
            if want <= 0:
                return
            if self.loop is not None:
                loop_start, loop_end = self.loop
                to_end = round(loop_end * SR) - times.write_frame
                if to_end <= 0:
                    self.origin = self.ring.write_pos - round(loop_start * SR)  # seamless jump
                    continue
                want = min(want, to_end)
            block = self._block[:want]
            self.mixer.render(times.write_frame, block)
            self.ring.write(block)

    def tick(self) -> None:
        """One engine step (call every few ms): schedule, place, render ahead."""
        now = self.clock()
        if self.scheduler.wake.is_set() or now - self._last_tick >= self.scheduler.config.tick_s:
            self._last_tick = now
            self._submit_window()
            self.scheduler.tick()
            self.revoicer.tick()
        if self._refit:
            self._voice_again()
        if self.preparing is not None:
            self._prepare(now)
        self._place()
        self._update_play_states()
        self._hold_for_go()
        self._check_end()
        self._render_ahead()
        if now - self._last_release >= 0.25:
            self._last_release = now
            self._release_heard()

    def _voice_again(self) -> None:
        """Timed lines heard past their slots: voiced again at the corrected rate while the
        slot is still far enough ahead of the writer for a take to come back in time."""
        refit, self._refit = self._refit, []
        for index, generation in refit:
            t = self.tracks[index]
            start = t.start_s if t.start_s is not None else self.planner.starts[index]
            if t.generation == generation and start - self.times.write_s >= REFIT_AHEAD_S:
                self.retake(index, refit=True)

    def _release_heard(self) -> None:
        """Flat memory for any show length: a line the listener has passed leaves the mixer
        and its audio is let go (a jump back voices it again); ad-libs likewise, but for the
        latest few, which the director may still keep."""
        if self.loop is not None:
            return  # the loop replays its scene's clips
        heard = (self.ring.read_pos - self.origin) / SR - RELEASE_AFTER_S
        k = self._release_from
        while k < self.next_place and k < len(self.tracks):
            t = self.tracks[k]
            if not (t.released or t.skipped or t.state is CueState.FAILED or t.start_s is None):
                if not t.known or t.placed_chunks < len(t.chunks) or t.start_s + t.est_duration_s > heard:
                    break
                self.mixer.remove_cue(t.cue.index)
                t.release()
            k += 1
        self._release_from = k
        self.adlibs.release_heard(heard)

    # --- transport -------------------------------------------------------------------
    def _readiness(self) -> Readiness:
        """How ready the lines ahead of the playhead are (see engine/show/prepare.py)."""
        backends = self.scheduler.backends

        def cost(r: Request) -> float:
            b = backends.get(r.backend)
            return b.cost_s(r) if b is not None else 0.0

        planned = self.planner.starts
        return readiness(self.tracks, lambda i: planned.get(i, 0.0), self.times.playhead_s,
                         self.times.playhead_s + self.lookahead_s, cost)  # fmt: skip

    def _prepare(self, now: float) -> None:
        """While preparing: start the clock once the lines ahead can be on time (or after
        `MAX_PREPARE_S`), with their deadlines counted from now."""
        self.preparing = self._readiness()
        if self.preparing.ready or now - self._prepare_since >= MAX_PREPARE_S:
            self.preparing = None
            self._refresh_deadlines()
            self._apply_transport()

    def _apply_transport(self) -> None:
        playing = self.running and not self.holding and not self.ended and self.preparing is None
        controls = self.ring.controls
        if playing != controls.playing:
            controls.set(playing=playing, gain=controls.gain)

    def pause(self, paused: bool = True) -> None:
        """Pause or play from where the clock is (Play after the end starts at the top)."""
        if not paused and self.ended:
            self.stop()
        self.running = not paused
        self.preparing = None
        if not paused:
            self.stopped = False
            # the next tick asks for the lines ahead, then starts the clock once they can be
            # on time (`_prepare`): until then it holds
            self.preparing, self._prepare_since = Readiness(float("inf"), 0, -1), self.clock()
        self._apply_transport()

    def stop(self) -> None:
        """Back to the top: clock 0, every cue pending, ad-libs not kept are gone from the mix."""
        self.running = False
        self.ended = self.holding = False
        self.preparing = None
        self.go_index = -1
        self._apply_transport()
        for t in self.tracks:
            if t.fallback:  # a stand-in's take is not kept: the cast voice speaks it next time
                self.mixer.remove_cue(t.cue.index)
                t.audio, t.requests, t.fallback = [], [], False
                t.revoice()
        self.seek(0.0)
        for t in self.timeline:
            t.late_ms = 0.0  # a late mark was about the take heard then, not the next run
            if t.state is not CueState.FAILED:
                self._set_state(t, CueState.PENDING)
        self.stopped = True

    def _check_end(self) -> None:
        """The end: every line voiced and placed, and the playhead past the last sample."""
        if self.ended or self.stopped or not self.times.finished or self.loop is not None:
            return
        if (self.ring.read_pos - self.origin) / SR >= self.times.end_s:
            self.ended = True
            self._apply_transport()
            for t in self.timeline:  # the list agrees with the status: nothing is playing now
                if t.state in (CueState.PLAYING, CueState.FALLBACK):
                    self._set_state(t, CueState.PLAYED)

    def _hold_for_go(self) -> None:
        """Cue-stack mode: hold the clock once everything placed has been heard and the next
        cue waits for GO."""
        waiting = (self.cue_stack and not self.stopped and self.next_place < len(self.tracks)
                   and self._waits_for_go(self.tracks[self.next_place])
                   and self.ring.read_pos - self.origin >= self.mixer.end_frame)  # fmt: skip
        if waiting != self.holding:
            self.holding = waiting
            self._apply_transport()

    # --- director commands (engine thread) -------------------------------------------
    def adlib(self, role: RoleKey, text: str, voice: Voice | None = None) -> Request:
        """Speak `text` as `role` as soon as possible, over whatever is playing."""
        return self.adlibs.speak(role, text, voice)

    def retake(self, cue_index: int, text: str | None = None, refit: bool = False) -> None:
        """Re-voice one cue (edited text or a new voice); nothing else is re-rendered.
        (`refit`: the show's own second take of a timed line, at its corrected rate.)"""
        if not 0 <= cue_index < len(self.tracks):
            raise TroupeError(f"cue {cue_index + 1} is not a line of the script (an ad-lib is spoken "
                              "again rather than re-taken)")  # fmt: skip
        t = self.tracks[cue_index]
        if t.start_s is not None and t.start_s < self.times.write_s:
            return  # already (partly) in the ring: too late to replace this take
        t.generation += 1
        self.scheduler.cancel(lambda r: r.cue_index == cue_index)
        self.mixer.remove_cue(cue_index)
        if self.fit is not None and not refit:
            self.fit.forget(cue_index)
        if text is not None:
            t.cue = t.cue.with_text(text)
            t.chunks = split_chunks(text) or [text]
        t.placed_chunks = 0
        t.audio = []
        t.released, t.duration_s = False, None
        t.check, t.wer = False, None
        keep_start = t.start_s
        self._set_state(t, CueState.PENDING)
        self._submit(t, RequestClass.RETAKE)
        t.start_s = keep_start  # a placed line keeps its place on the timeline
        if keep_start is not None:
            t.next_chunk_frame = round(keep_start * SR)

    def recast(self, role: RoleKey, **changes: object) -> Voice:
        """Change a role's voice live: its lines not yet played are re-taken."""
        old = self.cast[role]
        voice = self.cast.set(role, **changes)
        self.mixer.controls = self._controls()
        if any(getattr(old, k) != getattr(voice, k) for k in MIX_FIELDS):
            self._remix_ahead()
        if "weight" in changes:
            self.scheduler.set_weight(role, voice.weight)
        for t in self.tracks:
            if t.cue.role == role:
                t.rate_wpm, t.backend = voice.rate_wpm, voice.backend
        sound = ("backend", "voice_id", "rate_wpm", "pitch", "pitch_range")
        if any(getattr(old, k) != getattr(voice, k) for k in sound):
            for t in self.tracks:
                if t.cue.role == role and t.state is not CueState.PENDING:
                    self.retake(t.cue.index)
        return voice

    def _remix_ahead(self) -> None:
        """Mix again what is queued ahead of the listener, so a mute, solo, gain or pan change
        is heard within a block or two, not after the render-ahead (engine/audio_io/splice.py)."""
        if self.loop is not None:
            return  # a loop's queued frames come from two places on the timeline
        origin = self.origin
        remix(self.ring, lambda frame, out: self.mixer.render(frame - origin, out), self._remix_margin)

    def _controls(self) -> MixControls:
        return MixControls.from_voices({r: self.cast[r] for r in self.script.roles})

    def seek(self, show_s: float) -> None:
        """Jump to `show_s`: queued audio is dropped, deadlines are recomputed; cues from
        there on will play again, and ad-libs not kept are not heard again."""
        show_s = max(0.0, show_s)
        self.ring.reset()
        self.origin = self.ring.write_pos - round(show_s * SR)
        self.ended = False
        self.adlibs.drop_from_mix()
        for t in self.tracks:
            if t.released and show_s < (t.start_s or 0.0) + t.est_duration_s:
                t.revoice()  # heard and let go: voiced again to be heard again
                self._set_state(t, CueState.PENDING)
        self._release_from = 0
        self.scheduler.wake.set()  # lines to voice again are asked for at the next turn
        for t in self.timeline:
            if t.skipped and self.planner.starts[t.cue.index] + t.est_duration_s >= show_s:
                t.skipped = False  # seeking back: voice what was jumped over
            if t.state in HEARD and t.start_s is not None and show_s < t.start_s + t.est_duration_s:
                self._set_state(t, CueState.READY)  # to be heard again
        self.next_place = next((k for k, t in enumerate(self.tracks) if t.start_s is None), len(self.tracks))
        self._refresh_deadlines()
        self._apply_transport()  # a jump after the end plays on

    def _refresh_deadlines(self) -> None:
        for t in self.tracks:
            if t.requests and t.state in (CueState.QUEUED, CueState.SYNTHESIZING):
                for r, d in zip(t.requests, self._chunk_deadlines(t), strict=True):
                    r.deadline_s = d
        self.scheduler.reindex()

    def set_cue_stack(self, on: bool) -> None:
        """Cue-stack mode on: every cue not yet started waits for GO (lines already voiced
        and placed ahead of the playhead are taken back off the timeline)."""
        self.cue_stack = on
        if not on:
            self._hold_for_go()
            return
        head = self.times.playhead_s
        for t in self.tracks:
            if t.start_s is not None and t.start_s > head:
                self.mixer.remove_cue(t.cue.index)
                t.unplace()
                if t.state is not CueState.FAILED:
                    self._set_state(t, CueState.READY if t.known else t.state)
        started = [t.cue.index for t in self.tracks if t.start_s is not None]
        self.go_index = max(started, default=-1)
        self.seek(head)  # what was rendered ahead of those cues is dropped

    def go(self) -> int:
        """GO fires the Standby cue (`times.standby`) and returns it (-1: none left, nothing
        happens). In cue-stack mode the cue is released at once; in free play the playhead
        jumps to its start (lines voiced ahead of it are placed again) and the show plays on.
        After a jump while stopped it starts at the jump's line."""
        target = self.times.standby
        if target < 0:
            return -1
        if self.cue_stack:
            self.go_index = target
            if self.holding or self.ring.fill_frames:
                self.seek(self.times.playhead_s)  # start now, not after the silence rendered ahead
            self.holding = False
        else:
            self.seek(self.times.planned_start_s(target))
        self.pause(False)
        return target

    def skip(self) -> None:
        """Jump to the next cue after the playhead."""
        head = self.times.playhead_s
        nxt = next((s for s in sorted(self.planner.starts.values()) if s > head + 0.05), None)
        if nxt is not None:
            self.seek(nxt)

    def loop_scene(self, scene: int | None) -> None:
        """Loop the given scene (None: stop looping) once its lines are placed."""
        if scene is None:
            self.loop = None
            return
        planned = self.planner.starts
        starts = [planned[t.cue.index] for t in self.tracks if t.cue.scene == scene]
        ends = [planned[t.cue.index] + t.est_duration_s for t in self.tracks if t.cue.scene == scene]
        if starts:
            self.loop = (min(starts), max(ends) + self.pacing.gap_s)

    def close(self) -> None:
        for t in self.tracks:
            t.generation += 1
        self.adlibs.close()
        self.scheduler.cancel(lambda r: True)
