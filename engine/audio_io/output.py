"""Real-time output: a PortAudio stream (sounddevice) that plays the MixRing.

`AudioOutput` runs the stream in this process; `AudioProcess` runs the same stream in a
dedicated child process that maps the ring by name, so GUI redraws and synthesis in this
process never hold the GIL the callback needs.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import sounddevice as sd
from numpy.typing import NDArray

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import TIMING_SLOTS, MixRing
from engine.core.errors import AudioDeviceError


@dataclass(frozen=True)
class OutputSettings:
    """Which device and how to open it."""

    device: str | int | None = None
    """Name (substring, case-insensitive), index, or None for the default output."""
    block_frames: int = 256
    sample_rate_hz: int = 48_000
    latency: str | float = "low"


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
        self.state = RenderState(ring.playing, ring.gain)
        self._control_seq = ring.control_seq
        self._stream: sd.OutputStream | None = None

    def _callback(self, outdata: NDArray[np.float32], frames: int, t: Any, status: Any) -> None:
        t0 = time.perf_counter_ns()
        ring = self.ring
        try:
            if status.output_underflow:
                ring.count_xrun()  # PortAudio says the device ran dry: an audible glitch
            render(outdata, ring, self.state)
            ring.stamp(t.outputBufferDacTime, t.currentTime, ring.read_pos)
            ring.block_times_ns[ring.callbacks & (TIMING_SLOTS - 1)] = time.perf_counter_ns() - t0
        except Exception:  # an exception would stop the stream: play silence and count it
            outdata.fill(0.0)
            ring.count_callback_error()

    def sync_controls(self) -> None:
        """Pick up pause/gain changes from the ring header (swap the snapshot if changed)."""
        seq = self.ring.control_seq
        if seq != self._control_seq:
            self._control_seq = seq
            self.state = RenderState(self.ring.playing, self.ring.gain)  # one reference store

    def start(self) -> None:
        s = self.settings
        try:
            device = resolve_device(s.device)
            self.ring.set_consumer_attached(True)
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
        except sd.PortAudioError as exc:
            self.ring.set_consumer_attached(False)
            raise AudioDeviceError(f"cannot open the audio output ({exc})") from exc

    @property
    def active(self) -> bool:
        return self._stream is not None and self._stream.active

    def stop(self) -> None:
        if self._stream is not None:
            self._stream.stop()
            self._stream.close()
            self._stream = None
            self.ring.set_consumer_attached(False)


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


def _audio_main(ring_name: str, settings: OutputSettings, status: Any, stop: Any) -> None:
    ring = MixRing.attach(ring_name)
    out = AudioOutput(ring, settings)
    try:
        out.start()
    except AudioDeviceError as exc:
        status.send(str(exc))
        return
    raise_process_priority()
    status.send("")
    while not stop.wait(0.01):
        out.sync_controls()
    out.stop()
    sd._terminate()


class AudioProcess:
    """The output stream in a dedicated child process mapping the same ring."""

    def __init__(self, ring: MixRing, settings: OutputSettings = OutputSettings()) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.ring = ring
        self._status, child_end = ctx.Pipe(duplex=False)
        self._stop = ctx.Event()
        self._proc = ctx.Process(
            target=_audio_main,
            args=(ring.name, settings, child_end, self._stop),
            name="troupe-audio",
            daemon=True,
        )

    def start(self, timeout_s: float = 20.0) -> None:
        self._proc.start()
        if not self._status.poll(timeout_s):
            self.stop()
            raise AudioDeviceError("the audio process did not start in time")
        message = self._status.recv()  # "" once the stream runs, else the error
        if message:
            self._proc.join(2)
            raise AudioDeviceError(message)

    @property
    def active(self) -> bool:
        return self._proc.is_alive()

    def sync_controls(self) -> None:
        pass  # the child polls the ring header itself

    def stop(self) -> None:
        self._stop.set()
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(2)
        if not self._proc.is_alive():
            self.ring.set_consumer_attached(False)  # a killed child could not say so itself


def make_output(ring: MixRing, settings: OutputSettings, audio_process: bool) -> AudioOutput | AudioProcess:
    return AudioProcess(ring, settings) if audio_process else AudioOutput(ring, settings)


def terminate_portaudio() -> None:
    """Release PortAudio (needed before a JACK server goes away)."""
    sd._terminate()
