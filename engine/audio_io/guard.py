"""Keeping the output open through faults: a lost device or a dead audio process is noticed
within 200 ms, reported once, and reopened with a back-off once the device is back.

While the output is lost nothing consumes the ring, so the show's clock (the ring's read
position) holds where the listener last heard it: the show resumes from that place.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.audio_io.output import AudioOutput, AudioProcess, OutputSettings, forget_portaudio, make_output
from engine.audio_io.ring import MixRing
from engine.core.errors import AudioDeviceError

FIRST_RETRY_S = 0.5
MAX_RETRY_S = 5.0
GIVE_UP_S = 1.0
"""Callbacks stopped this long: the stream is given up and reopened. A shorter stall (an
overloaded machine) is reported, and reported over once callbacks come back."""


class OutputGuard:
    """Owns the output stream (in the audio process or here) and brings it back after a fault.

    Runs on the engine thread: `poll` is cheap and never blocks on the child or the device."""

    def __init__(self, ring: MixRing, say: Callable[[str], None], clock: Callable[[], float]) -> None:
        self.ring = ring
        self.say = say
        self.clock = clock
        self.output: AudioOutput | AudioProcess | None = None
        self.lost = ""
        """Why the output was lost (empty while it plays or was closed on purpose)."""
        self.losses = 0
        self.reopened = 0
        self.false_losses = 0
        """Losses that passed by themselves: the same stream played on (a stall, not a loss)."""
        self.held_s = 0.0
        """Show time held while the output was lost (the clock does not run)."""
        self._pending: AudioOutput | AudioProcess | None = None
        self._next_try = 0.0
        self._lost_at = 0.0
        self._backoff = FIRST_RETRY_S
        self._settings = OutputSettings()
        self._audio_process = True

    def open(self, settings: OutputSettings, audio_process: bool) -> None:
        """Open now (blocking until the stream runs, or `AudioDeviceError`)."""
        self.close()
        self._settings, self._audio_process = settings, audio_process
        out = make_output(self.ring, settings, audio_process)
        out.start()
        self.output = out

    def close(self) -> None:
        """Close on purpose (no reopening); never waits on a dead child or device for long."""
        self.lost = ""
        for out in (self.output, self._pending):
            if out is not None:
                out.stop()
        self.output = self._pending = None

    def poll(self) -> None:
        """Watch the open output, or work towards reopening a lost one."""
        now = self.clock()
        if self.output is not None:
            fault = self.output.fault()
            if fault is None:
                if self.lost:  # a stall that passed: the same stream plays on
                    self.lost = ""
                    self.false_losses += 1
                    self.held_s += now - self._lost_at
                    self.say("audio output is back: the show goes on from where it was")
                return
            if not self.lost:
                self.losses += 1
                self._lost_at = now
                self.lost = fault.reason
                self.say(f"audio output lost: {fault.reason}. The show is held where it was; Troupe "
                         "reopens the output as soon as the device is back")  # fmt: skip
            if fault.final or now - self._lost_at >= GIVE_UP_S:
                # PortAudio here is left alone unless the device itself went away (a stall,
                # or this process's own stream stopped): a killed audio process is not that
                device_gone = not fault.final or isinstance(self.output, AudioOutput)
                self._give_up(now, device_gone)
            return
        if not self.lost:
            return
        if self._pending is None:
            if now >= self._next_try:
                self._try_reopen()
            return
        try:
            started = self._pending.poll_started()
        except AudioDeviceError:
            self._pending = None
            self._retry_later(now)
            return
        if started:
            self.output, self._pending = self._pending, None
            self.lost, self._backoff = "", FIRST_RETRY_S
            self.reopened += 1
            self.held_s += now - self._lost_at
            self.say("audio output is back: the show goes on from where it was")

    def _give_up(self, now: float, device_gone: bool) -> None:
        """Drop the stream without waiting on it; reopening starts after a back-off."""
        assert self.output is not None
        self.output.abandon()
        self.output = None
        if device_gone:
            forget_portaudio()
        self._backoff = FIRST_RETRY_S
        self._next_try = now + FIRST_RETRY_S

    def _try_reopen(self) -> None:
        # NB: always in the audio process: PortAudio here may hold a dead server's client
        out = AudioProcess(self.ring, self._settings)
        try:
            out.launch()
        except AudioDeviceError:
            self._retry_later(self.clock())
            return
        self._pending = out

    def _retry_later(self, now: float) -> None:
        self._next_try = now + self._backoff
        self._backoff = min(MAX_RETRY_S, self._backoff * 2)
