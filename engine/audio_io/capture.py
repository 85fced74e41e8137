"""Recording what the engine sends to a JACK server (the dummy device in tests and
benchmarks): a JACK client whose inputs are connected to the output ports the engine's
stream opened. For checks of what is heard, not for the live show itself."""

from __future__ import annotations

import time

import numpy as np

RATE = 48_000


class Recorder:
    """Records both channels of the engine's output from the moment `connect` is called."""

    def __init__(self, max_seconds: float = 120.0) -> None:
        """Start recording nothing yet; `connect` picks the ports opened after this."""
        import jack  # the test extra (JACK-Client); only this tool needs it

        self.client = jack.Client("troupe-recorder", no_start_server=True)
        self.inputs = [self.client.inports.register(f"in_{k}") for k in range(2)]
        self.audio = np.zeros((int(max_seconds * RATE), 2), np.float32)
        self.frames = 0
        self.stamps: list[tuple[int, float]] = []
        """(recorded frame, monotonic time) at the start of each JACK cycle."""
        self.client.set_process_callback(self._process)
        self.client.activate()
        self._before = self._output_ports()

    def _output_ports(self) -> set[str]:
        return {p.name for p in self.client.get_ports(is_output=True, is_audio=True)}

    def _process(self, frames: int) -> None:
        n = self.frames
        if n + frames > len(self.audio):
            return
        self.stamps.append((n, time.monotonic()))
        for k, port in enumerate(self.inputs):
            self.audio[n : n + frames, k] = port.get_array()
        self.frames = n + frames

    def connect(self) -> None:
        """Connect the output ports opened since this recorder started (the engine's)."""
        new = sorted(self._output_ports() - self._before)
        assert len(new) == 2, f"expected the engine's two output ports, found {new}"
        for src, dst in zip(new, self.inputs, strict=True):
            self.client.connect(src, dst)

    def since(self, frame: int) -> np.ndarray:
        return self.audio[frame : self.frames].copy()

    def frame_at(self, t: float) -> int:
        """The recorded frame that was captured at monotonic time `t` (to a JACK cycle)."""
        earlier = [f for f, s in self.stamps if s <= t]
        return earlier[-1] if earlier else 0

    def close(self) -> None:
        self.client.deactivate()
        self.client.close()
