"""The reference stream for xrun comparisons: a PortAudio stream in its own process whose
callback only writes zeros, so the xruns it counts are what the machine and the device
cause by themselves (a loaded shared machine flags some underflows even then)."""

from __future__ import annotations

import multiprocessing
from typing import Any


def _zero_main(device: str, block: int, xruns: Any, callbacks: Any, ready: Any, stop: Any) -> None:
    import sounddevice as sd

    from engine.audio_io.output import raise_process_priority, resolve_device

    def callback(outdata: Any, frames: int, t: Any, status: Any) -> None:
        outdata.fill(0.0)
        callbacks.value += 1
        if status.output_underflow:
            xruns.value += 1

    with sd.OutputStream(samplerate=48_000, blocksize=block, channels=2, dtype="float32",
                         device=resolve_device(device), latency="low", callback=callback):  # fmt: skip
        raise_process_priority()  # the same footing as the audio process it is compared with
        ready.set()
        stop.wait()
    sd._terminate()


class ZeroStream:
    """Start it, read `xruns`/`callbacks` around a measured window, stop it."""

    def __init__(self, device: str, block: int = 256) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._xruns = ctx.Value("q", 0, lock=False)
        self._callbacks = ctx.Value("q", 0, lock=False)
        self._ready, self._stop = ctx.Event(), ctx.Event()
        self._proc = ctx.Process(target=_zero_main, daemon=True, args=(
            device, block, self._xruns, self._callbacks, self._ready, self._stop))  # fmt: skip

    def start(self) -> None:
        self._proc.start()
        if not self._ready.wait(30):
            raise RuntimeError("the reference stream did not start")

    @property
    def xruns(self) -> int:
        return int(self._xruns.value)

    @property
    def callbacks(self) -> int:
        return int(self._callbacks.value)

    def stop(self) -> None:
        self._stop.set()
        self._proc.join(10)
