"""Ad-libs in a live show: items of their own in the cue list and on the timeline, heard
once (spliced into the audio already queued, a margin ahead of the listener), not heard
again after Stop, Play or a jump unless the director keeps one in the show, and deletable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from engine.audio_io.ring import MixRing
from engine.audio_io.splice import splice
from engine.cast import Cast
from engine.core.errors import TroupeError
from engine.core.types import Cue, RoleKey, Voice
from engine.mixer import Clip, Mixer, soft_limit
from engine.scheduler import Request, RequestClass, Scheduler, State
from engine.show.times import ShowTimes
from engine.show.tracks import SR, Changes, CueState, CueTrack, ShowStats

KEEPABLE = 16
"""How many of the latest ad-libs keep their audio after they are heard, so that the
director can still keep one in the show."""


ADLIB_AHEAD_S = 3.0
"""The most ad-lib speech that may be waiting when another is typed: the voicing time of the
ad-libs queued (at the voice's measured speed) and their spoken length, and what is left to
hear of those already spliced in. An ad-lib is for now: one typed behind more than this
would be heard late, over a pile of others, and a flood would take the voice from the
show's lines; so it is refused, not queued (the message is the same each time, numbers
aside, so the window's banner counts a flood of refusals in one line)."""


PREVIEW_ROLE = "(preview)"
"""The role a voice preview is voiced and mixed as (centre, unity gain)."""


def refusal(ahead_s: float) -> str:
    """Why an ad-lib was not spoken, with the ad-lib speech ahead of it."""
    return (f"ad-lib not spoken: the ad-libs before it still take {ahead_s:.1f} s to voice and hear "
            f"(at most {ADLIB_AHEAD_S:g} s); say it again when they are heard")  # fmt: skip


_AHEAD = (CueState.QUEUED, CueState.READY, CueState.PLAYING)
"""An ad-lib's states until it has been heard."""


class Stage(Protocol):
    """What ad-libs use of the show they are spoken in."""

    tracks: list[CueTrack]
    """The script's lines (ad-libs are numbered after them)."""
    cast: Cast
    scheduler: Scheduler
    ring: MixRing
    mixer: Mixer
    stats: ShowStats
    origin: int
    """The ring position of show time 0."""
    clock: Callable[[], float]
    times: ShowTimes
    """Where the show stands (the writer, the playhead) and when audio is due."""


class Adlibs:
    """The show's ad-libs; cue indices follow the script's (script cues first)."""

    def __init__(self, show: Stage, margin_frames: int, changes: Changes,
                 set_state: Callable[[CueTrack, CueState], None]) -> None:  # fmt: skip
        """`changes`: the show's plan counter (a kept ad-lib is in the plan); `set_state`
        sets a cue's state and tells the show's observers."""
        self.show = show
        self.changes = changes
        self._set_state = set_state
        self.margin_frames = margin_frames
        """How far ahead of the listener an ad-lib is spliced in: at least one callback's
        frames plus the time to mix it, or the callback meets the held frame (an underrun)."""
        self.tracks: list[CueTrack] = []
        self._waiting: list[CueTrack] = []
        """The ad-libs not yet heard to their end (and some that are, until `backlog_s`)."""
        self.refused_until = 0.0
        """Until when (the show's clock) another ad-lib will be refused, as of the last one
        queued: a caller may refuse one sooner than that without asking the engine thread
        (a flood of ad-libs from a script is then answered without taking its turns)."""

    def get(self, cue_index: int) -> CueTrack:
        k = cue_index - len(self.show.tracks)
        if not 0 <= k < len(self.tracks) or self.tracks[k].deleted:
            raise TroupeError(f"cue {cue_index + 1} is not an ad-lib")
        return self.tracks[k]

    def speak(self, role: RoleKey, text: str, voice: Voice | None = None) -> Request:
        """Queue an ad-lib: it is spliced in as soon as it is voiced."""
        show = self.show
        head = show.times.playhead_s
        ahead = self.backlog_s(head)
        if ahead > ADLIB_AHEAD_S:
            raise TroupeError(refusal(ahead))
        voice = voice or show.cast[role]
        index = len(show.tracks) + len(self.tracks)
        t = CueTrack(Cue(index, role, text, self._scene_now(), 0, ("ad-lib",)), [text], voice.rate_wpm,
                     voice.backend, adlib=True, changes=self.changes)  # fmt: skip
        r = Request(role, text, voice, show.times.deadline(show.times.write_s), RequestClass.ADLIB, index)
        r.on_done = lambda req: self._voiced(t, req)
        t.audio, t.requests, t.state = [None], [r], CueState.QUEUED
        show.scheduler.submit(r, timeout_s=0.0)  # QueueFull at once: the engine thread never waits
        self.tracks.append(t)
        self._waiting.append(t)
        show.stats.adlibs.append(r)
        self.refused_until = show.clock() + max(0.0, ahead + self._left_s(t, head) - ADLIB_AHEAD_S)
        return r

    def backlog_s(self, head: float | None = None) -> float:
        """The ad-lib speech still ahead of the listener (at show time `head`, default the
        playhead): the sum of `_left_s` over the ad-libs not yet heard to their end."""
        head = self.show.times.playhead_s if head is None else head
        self._waiting = [t for t in self._waiting if not t.deleted and t.state in _AHEAD
                         and (t.start_s is None or t.start_s + t.est_duration_s > head)]  # fmt: skip
        return sum(self._left_s(t, head) for t in self._waiting)

    def _left_s(self, t: CueTrack, head: float) -> float:
        """What is left of ad-lib `t` for the listener: not yet voiced, the voice's estimated
        time for it and its spoken length; spliced in, what is left of it after `head`."""
        if t.start_s is not None:
            return t.start_s + t.est_duration_s - head
        r = t.requests[0] if t.requests else None
        if r is None:
            return 0.0
        backend = self.show.scheduler.backends.get(r.backend)
        return (backend.cost_s(r) if backend is not None else 0.0) + r.est_audio_s

    def _scene_now(self) -> int:
        head = self.show.times.playhead_s
        started = [t.cue.scene for t in self.show.tracks if t.start_s is not None and t.start_s <= head]
        return started[-1] if started else 0

    def _voiced(self, t: CueTrack, r: Request) -> None:
        if t.deleted:
            return
        if r.state is not State.DONE or r.audio is None or not r.audio.size:
            t.error = r.error or "nothing was voiced"
            self._set_state(t, CueState.FAILED)
            return
        t.audio, t.fallback = [r.audio], r.fallback
        self._place(t, r)

    def _place(self, t: CueTrack, r: Request) -> None:
        """Splice the start into the queued audio, and give the writer the rest."""
        audio = t.audio[0]
        assert audio is not None
        frame = self.splice(t.cue.role, audio, t.cue.index, r)
        t.start_s = frame / SR
        t.placed_chunks = 1
        self._set_state(t, CueState.READY)

    def preview(self, voice: Voice, text: str, on_audio: Callable[[Request], None]) -> Request:
        """Voice `text` in `voice` at ad-lib priority for the director to hear; no cue item.
        `on_audio(request)` runs once it is voiced (or failed)."""
        r = Request(PREVIEW_ROLE, text, voice, self.show.clock(), RequestClass.ADLIB, -1)
        r.on_done = on_audio
        self.show.scheduler.submit(r, timeout_s=0.0)
        return r

    def splice(self, role: str, audio: NDArray[np.float32], cue_index: int, r: Request | None = None) -> int:
        """Mix `audio` into what the listener hears next (the start spliced into the queued
        audio, the rest through the mixer) at the role's gain; its show frame."""
        show, ring = self.show, self.show.ring
        controls = show.mixer.controls
        left, right = controls.gain(role)
        stereo = np.empty((len(audio), ring.channels), np.float32)
        stereo[:, 0] = audio * (left * controls.master_gain)
        stereo[:, 1] = audio * (right * controls.master_gain)
        done = splice(ring, stereo, self.margin_frames, soft_limit if controls.limiter else None)
        start = done.start if done is not None else ring.write_pos
        if r is not None:
            r.t_placed = show.clock()
            # heard once the callback reaches the splice, plus the device latency
            r.t_played = r.t_placed + max(0, start - ring.read_pos) / SR + ring.clock.output_latency_s()
        frame = start - show.origin
        if len(audio):  # whole, though the writer only takes what it has not written (the rest):
            show.mixer.add(Clip(frame, role, audio, cue_index))  # a re-mix of the queue keeps it
        return frame

    def update_states(self, head_s: float) -> None:
        for t in self.tracks:
            if t.kept or t.deleted or t.start_s is None or t.state in (CueState.PLAYED, CueState.FAILED):
                continue
            if head_s >= t.start_s + t.est_duration_s:
                self._set_state(t, CueState.PLAYED)
            elif head_s >= t.start_s and t.state is not CueState.PLAYING:
                self._set_state(t, CueState.PLAYING)

    def release_heard(self, heard_s: float) -> None:
        """Ad-libs heard before `heard_s` leave the mixer; the audio of all but the latest
        `KEEPABLE` is let go (a kept ad-lib is a cue: the show releases it like a line)."""
        recent = len(self.tracks) - KEEPABLE
        for k, t in enumerate(self.tracks):
            if t.kept or t.released or t.start_s is None or not t.known:
                continue
            if t.start_s + t.est_duration_s > heard_s:
                continue
            self.show.mixer.remove_cue(t.cue.index)
            if k < recent or t.deleted:
                t.release()

    def drop_from_mix(self) -> None:
        """A jump or Stop: ad-libs not kept are not heard again (one still playing stops)."""
        for t in self.tracks:
            if not t.kept and not t.deleted and t.start_s is not None:
                self.show.mixer.remove_cue(t.cue.index)
                self._set_state(t, CueState.PLAYED)

    def keep(self, cue_index: int) -> CueTrack:
        """Keep an ad-lib in the show: a cue at the time it was heard, replayed like any other."""
        t = self.get(cue_index)
        audio = t.audio[0] if t.known else None
        if t.released:
            raise TroupeError(f"cue {cue_index + 1}: only the latest {KEEPABLE} ad-libs can be kept "
                              "(older ones' audio is let go); speak it again to keep it")  # fmt: skip
        if t.start_s is None or audio is None:
            raise TroupeError(f"cue {cue_index + 1}: an ad-lib can be kept once it has been voiced")
        if not t.kept:
            t.kept = True
            self.show.mixer.remove_cue(cue_index)
            self.show.mixer.add(Clip(round(t.start_s * SR), t.cue.role, audio, cue_index))
        return t

    def unkeep(self, cue_index: int) -> None:
        """Undo `keep`: the ad-lib is again heard once (it is not replayed)."""
        t = self.get(cue_index)
        if t.kept:
            t.kept = False
            self.show.mixer.remove_cue(cue_index)

    def delete(self, cue_index: int) -> None:
        """Remove an ad-lib from the list, the timeline and the mix (and the queue)."""
        t = self.get(cue_index)
        t.deleted = True
        self.show.scheduler.cancel(lambda r: r.cue_index == cue_index)
        self.show.mixer.remove_cue(cue_index)

    def restore(self, cue_index: int) -> None:
        """Undo `delete`: the ad-lib is listed again; a kept one is back in the mix."""
        k = cue_index - len(self.show.tracks)
        if not 0 <= k < len(self.tracks) or not self.tracks[k].deleted:
            raise TroupeError(f"cue {cue_index + 1}: no deleted ad-lib there")
        t = self.tracks[k]
        t.deleted = False
        audio = t.audio[0] if t.known else None
        if t.kept and t.start_s is not None and audio is not None:
            self.show.mixer.add(Clip(round(t.start_s * SR), t.cue.role, audio, cue_index))

    def close(self) -> None:
        for t in self.tracks:
            t.deleted = True
