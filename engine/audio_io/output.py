"""Real-time output: a PortAudio stream (sounddevice) that plays the MixRing.

`AudioOutput` runs the stream in this process; `AudioProcess` runs the same stream in a
dedicated child process that maps the ring by name, so GUI redraws and synthesis in this
process never hold the GIL the callback needs.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, NamedTuple

import numpy as np
import sounddevice as sd
from numpy.typing import NDArray

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import TIMING_SLOTS, MixRing
from engine.audio_io.watch import StallWatch
from engine.core.errors import AudioDeviceError
from engine.core.process import die_with_parent


@dataclass(frozen=True)
class OutputSettings:
    """Which device and how to open it."""

    device: str | int | None = None
    """Name (substring, case-insensitive), index, or None for the default output."""
    block_frames: int = 256
    sample_rate_hz: int = 48_000
    latency: str | float = "low"


class Fault(NamedTuple):
    """Why an output stopped playing; `final` when it cannot come back by itself (a dead
    process, a stopped stream), not when callbacks merely stopped (a stall may pass)."""

    reason: str
    final: bool


def list_output_devices() -> list[dict[str, Any]]:
    """Every device with output channels: index, name, host API, channels, default rate."""
    try:
        devices = sd.query_devices()
        apis = sd.query_hostapis()
    except sd.PortAudioError as exc:
        raise AudioDeviceError(f"PortAudio cannot list devices: {exc}") from exc
    return [
        {
            "index": d["index"],
            "name": d["name"],
            "hostapi": apis[d["hostapi"]]["name"],
            "channels": d["max_output_channels"],
            "default_rate_hz": d["default_samplerate"],
        }
        for d in devices
        if d["max_output_channels"] > 0
    ]


def resolve_device(device: str | int | None) -> int | None:
    """Turn a name or index into a PortAudio output device index, with a clear error."""
    outputs = list_output_devices()
    if not outputs:
        raise AudioDeviceError("no audio output device found (is a sound server or JACK running?)")
    if device is None or device == "":
        return None
    if isinstance(device, int) or str(device).isdigit():
        idx = int(device)
        if any(d["index"] == idx for d in outputs):
            return idx
        raise AudioDeviceError(f"no output device with index {idx}; have {_names(outputs)}")
    spec = str(device).lower()
    by_api = [d for d in outputs if spec in d["hostapi"].lower()]
    if by_api:  # 'JACK', 'ALSA', 'PulseAudio': that host API's first output device
        return int(by_api[0]["index"])
    matches = [d for d in outputs if spec in d["name"].lower()]
    if not matches:
        raise AudioDeviceError(f"no output device matching {device!r}; have {_names(outputs)}")
    return int(matches[0]["index"])


def _names(outputs: list[dict[str, Any]]) -> str:
    return ", ".join(f"{d['index']}: {d['name']}" for d in outputs)


class AudioOutput:
    """A sounddevice OutputStream whose callback is `render` over a MixRing."""

    def __init__(self, ring: MixRing, settings: OutputSettings = OutputSettings()) -> None:
        self.ring = ring
        self.settings = settings
        self._stats, self._clock = ring.stats, ring.clock  # bound once, for the callback
        self.state = RenderState(ring.controls.playing, ring.controls.gain)
        self._control_seq = ring.controls.seq
        self._stream: sd.OutputStream | None = None
        self._watch = StallWatch(ring.stats)
        self._detached = False

    def _callback(self, outdata: NDArray[np.float32], frames: int, t: Any, status: Any) -> None:
        t0 = time.perf_counter_ns()
        ring, stats = self.ring, self._stats
        if self._detached:  # given up or closing: this stream no longer touches the ring
            outdata.fill(0.0)
            return
        try:
            if status.output_underflow:
                stats.count_xrun()  # PortAudio says the device ran dry: an audible glitch
            render(outdata, ring, self.state)
            self._clock.stamp(t.outputBufferDacTime, t.currentTime, ring.read_pos)
            stats.block_times_ns[stats.callbacks & (TIMING_SLOTS - 1)] = time.perf_counter_ns() - t0
        except Exception:  # an exception would stop the stream: play silence and count it
            outdata.fill(0.0)
            stats.count_callback_error()

    def sync_controls(self) -> None:
        """Pick up pause/gain changes from the ring header (swap the snapshot if changed)."""
        controls = self.ring.controls
        seq = controls.seq
        if seq != self._control_seq:
            self._control_seq = seq
            self.state = RenderState(controls.playing, controls.gain)  # one reference store

    def start(self) -> None:
        s = self.settings
        try:
            device = resolve_device(s.device)
            self.ring.consumer.set_attached(True)
            self._stream = sd.OutputStream(
                samplerate=s.sample_rate_hz,
                blocksize=s.block_frames,
                channels=self.ring.channels,
                dtype="float32",
                device=device,
                latency=s.latency,
                callback=self._callback,
            )
            self._stream.start()
            self._watch.restart()
        except sd.PortAudioError as exc:
            self.ring.consumer.set_attached(False)
            raise AudioDeviceError(f"cannot open the audio output ({exc})") from exc

    def launch(self) -> None:
        """Open the stream (in this process this is all of starting)."""
        self.start()

    def poll_started(self) -> bool:
        return self._stream is not None

    @property
    def active(self) -> bool:
        return self._stream is not None and self._stream.active

    def fault(self) -> Fault | None:
        """Why the stream no longer plays (no callback lately, or stopped), or None."""
        if self._stream is None:
            return None
        if self._watch.stalled():  # NB: first: asking PortAudio may block while its server dies
            return Fault("the audio device stopped playing", final=False)
        if not self._stream.active:
            return Fault("the audio stream stopped", final=True)
        return None

    def stop(self) -> None:
        """Stop and close the stream; one that does not stop within 5 s is left to a
        background thread (a device that vanished is `abandon`ed, never stopped)."""
        stream, self._stream = self._stream, None
        if stream is None:
            return
        self._detached = True
        done = threading.Event()

        def close() -> None:
            with contextlib.suppress(Exception):
                stream.stop()
                stream.close()
            done.set()

        threading.Thread(target=close, name="troupe-stream-close", daemon=True).start()
        done.wait(5.0)
        self.ring.consumer.set_attached(False)

    def abandon(self) -> None:
        """Drop a stream whose device is gone without touching it (stopping or closing it
        would abort inside PortAudio's JACK host API); it is kept referenced until exit."""
        self._detached = True
        if self._stream is not None:
            _ABANDONED.append(self._stream)
            self._stream = None
        self.ring.consumer.set_attached(False)


_ABANDONED: list[Any] = []
"""Streams on a vanished device: never closed, never collected (their finaliser would close)."""


AUDIO_PRIORITY = 20
"""SCHED_FIFO priority of the audio process where the system allows it (below JACK's own
real-time threads, which default to 70 and up)."""


def raise_priority(thread_id: int = 0, fifo: bool = True, nice: int = -10) -> str:
    """Ask the OS to run `thread_id` (0: the calling thread; threads it creates inherit it)
    ahead of ordinary work: a lower nice value (kept by threads that set their own policy,
    as the JACK client's does) and real-time FIFO scheduling, each where permitted.
    Returns what was granted, e.g. 'nice+fifo', or ''."""
    granted = []
    try:
        os.setpriority(os.PRIO_PROCESS, thread_id, nice)
        granted.append("nice")
    except OSError:
        pass
    if fifo:
        try:
            os.sched_setscheduler(thread_id, os.SCHED_FIFO, os.sched_param(AUDIO_PRIORITY))
            granted.append("fifo")
        except (OSError, AttributeError):
            pass
    return "+".join(granted)


def raise_process_priority() -> None:
    """Raise every thread of this process, once its stream runs: in the audio process every
    thread serves the stream, and the JACK client sets its own thread's policy (so nothing is
    inherited). Other processes' work (synthesis, the GUI, a busy machine) then cannot delay
    the callback."""
    tasks = os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else []
    for task in tasks:
        raise_priority(int(task))


def _audio_main(ring_name: str, settings: OutputSettings, conn: Connection, parent_pid: int) -> None:
    die_with_parent(parent_pid)  # never plays on (or keeps the ring) after the engine is gone
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal's hang-up, Ctrl+C and a
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # SIGTERM to the process group are the engine's
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # to handle: it stops this process as it closes
    ring = MixRing.attach(ring_name)
    out = AudioOutput(ring, settings)
    try:
        out.start()
    except AudioDeviceError as exc:
        conn.send(str(exc))
        return
    raise_process_priority()
    conn.send("")
    while not conn.poll(0.01):  # NB: a pipe, not an Event: a killed peer cannot wedge a pipe
        out.sync_controls()
    out.stop()
    sd._terminate()


class AudioProcess:
    """The output stream in a dedicated child process mapping the same ring.

    The engine talks to it through one pipe and watches it by process liveness and the
    ring's callback counter; it never waits on anything the child could hold."""

    def __init__(self, ring: MixRing, settings: OutputSettings = OutputSettings()) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.ring = ring
        self._conn, self._child_end = ctx.Pipe(duplex=True)
        self._proc = ctx.Process(
            target=_audio_main,
            args=(ring.name, settings, self._child_end, os.getpid()),
            name="troupe-audio",
            daemon=True,
        )
        self._watch = StallWatch(ring.stats)
        self._started = False

    def launch(self) -> None:
        """Start the child; `poll_started` says when its stream runs."""
        self._proc.start()
        self._child_end.close()

    def poll_started(self) -> bool:
        """True once the stream runs; raises `AudioDeviceError` if it could not start."""
        if self._started:
            return True
        if self._conn.poll(0):
            try:
                message = self._conn.recv()  # "" once the stream runs, else the error
            except (EOFError, OSError):
                message = "the audio process ended while starting"
            if message:
                self.abandon()
                raise AudioDeviceError(message)
            self._started = True
            self._watch.restart()
            return True
        if not self._proc.is_alive():
            self.abandon()
            code = self._proc.exitcode
            raise AudioDeviceError(f"the audio process ended while starting (exit code {code})")
        return False

    def start(self, timeout_s: float = 20.0) -> None:
        self.launch()
        give_up = time.monotonic() + timeout_s
        while not self.poll_started():
            if time.monotonic() > give_up:
                self.abandon()
                raise AudioDeviceError("the audio process did not start in time")
            time.sleep(0.01)

    @property
    def active(self) -> bool:
        return self._proc.is_alive()

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def fault(self) -> Fault | None:
        """Why the output no longer plays (the child died, or its stream stopped), or None."""
        if not self._proc.is_alive():
            return Fault(f"the audio process ended (exit code {self._proc.exitcode})", final=True)
        if self._started and self._watch.stalled():
            if wait([self._proc.sentinel], 0.02):  # a child dying this moment says why
                return Fault(f"the audio process ended (exit code {self._proc.exitcode})", final=True)
            return Fault("the audio device stopped playing", final=False)
        return None

    def sync_controls(self) -> None:
        pass  # the child polls the ring header itself

    def stop(self) -> None:
        """Ask the child to close its stream; one that does not (a lost device) is killed."""
        with contextlib.suppress(OSError, ValueError):
            self._conn.send("stop")
        self._proc.join(1.0)
        self.abandon()

    def abandon(self) -> None:
        """End the child now without asking it anything."""
        if self._proc.pid is not None and self._proc.is_alive():
            self._proc.kill()
        if self._proc.pid is not None:
            self._proc.join(1.0)
        self._conn.close()
        if not self._proc.is_alive():
            self.ring.consumer.set_attached(False)  # a killed child could not say so itself


def play_once(audio: NDArray[np.float32], settings: OutputSettings) -> None:
    """Play a short mono clip on the output device by itself, without waiting (a voice
    preview while the show is not playing)."""
    sd.play(
        np.ascontiguousarray(audio, np.float32),
        settings.sample_rate_hz,
        device=resolve_device(settings.device),
    )


def make_output(ring: MixRing, settings: OutputSettings, audio_process: bool) -> AudioOutput | AudioProcess:
    return AudioProcess(ring, settings) if audio_process else AudioOutput(ring, settings)


def forget_portaudio() -> None:
    """After an output fault: PortAudio in this process may hold a client of a JACK server
    that died, which can be neither used nor terminated (terminating aborts in PortAudio's
    JACK host API). Leave it to the OS at exit; streams are reopened in the audio process."""
    sd._initialized = 0


def terminate_portaudio() -> None:
    """Release PortAudio (needed before a JACK server goes away)."""
    if sd._initialized:
        sd._terminate()
