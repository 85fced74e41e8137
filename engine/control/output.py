"""Output: the audio device the show plays on, watched and reopened after a fault."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import replace

from engine.audio_io.output import list_output_devices
from engine.service import Engine


class Output:
    """Open, close and switch the output device; what plays now."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def devices(self) -> list[str]:
        """Output devices as '<index>: <name> (<host API>)' for a device chooser."""
        return [f"{d['index']}: {d['name']} ({d['hostapi']})" for d in list_output_devices()]

    @property
    def device(self) -> str | int | None:
        """The chosen device (None: the system's default)."""
        return self._engine.settings.output.device

    @property
    def is_open(self) -> bool:
        return self._engine.guard.output is not None  # NB: one reference read

    @property
    def lost(self) -> str:
        """Why the output was lost while Troupe reopens it ('' when it plays or is closed)."""
        return self._engine.guard.lost

    @property
    def losses(self) -> tuple[int, int, float]:
        """(losses, of which false: stalls that passed by themselves, show seconds held while lost)."""
        guard = self._engine.guard
        return guard.losses, guard.false_losses, guard.held_s

    @property
    def block_frames(self) -> int:
        """Frames per callback."""
        return self._engine.settings.output.block_frames

    def open(self) -> Future[None]:
        """Open the audio device (in the audio process by default, or in this process)."""
        engine = self._engine

        def open_() -> None:
            if engine.guard.output is None:
                engine.guard.open(engine.settings.output, engine.settings.audio_process)

        return engine.submit(open_)

    def close(self) -> Future[None]:
        return self._engine.submit(self._engine.guard.close)

    def set_device(self, device: str | int | None) -> Future[None]:
        """Switch the output device (reopened at once if it was open)."""
        engine = self._engine

        def switch() -> None:
            was_open = engine.guard.output is not None or bool(engine.guard.lost)
            engine.guard.close()
            engine.settings = replace(engine.settings, output=replace(engine.settings.output, device=device))
            if was_open:
                engine.guard.open(engine.settings.output, engine.settings.audio_process)

        return engine.submit(switch)
