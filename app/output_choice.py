"""The audio output as the window uses it: opened on the first Play or GO without the
window waiting on it, the devices for the toolbar's chooser, and a switch of device. A
failure reaches the banner as a message, never blocks the GUI thread."""

from __future__ import annotations

from collections.abc import Callable

from app.banner import Banner
from app.pending import Pending
from engine.control import wait
from engine.control.output import Output
from engine.core.errors import TroupeError


class OutputChoice:
    """The window's side of the engine's `Output`: `output` opens and switches, `pending`
    waits for it, `banner` says what went wrong."""

    def __init__(self, output: Output, pending: Pending, banner: Banner) -> None:
        self.output = output
        self.pending = pending
        self.banner = banner

    def when_open(self, then: Callable[[], object]) -> None:
        """Run `then` once the audio output is open (opening it first if needed, without
        waiting on it here: the device may take a while, or fail with a message)."""
        if self.output.is_open:
            then()
            return
        self.pending.watch(self.output.open(), "opening the audio output", self._failed,
                           lambda _: then())  # fmt: skip

    def open_and_wait(self) -> bool:
        """Open the output and wait for it (the --smoke self-test; slots use `when_open`)."""
        if self.output.is_open:
            return True
        try:
            wait(self.output.open(), 30)
        except TroupeError as exc:
            self._failed(str(exc))
            return False
        return True

    def devices(self) -> list[str]:
        """The devices the chooser lists besides its first entry (none if they cannot be read)."""
        try:
            return self.output.devices()
        except TroupeError as exc:
            self._failed(str(exc))
            return []

    def default_label(self) -> str:
        """What the chooser's first entry says: the device the command line chose."""
        device = self.output.device
        return "Default output" if device is None else f"{device} (as started)"

    def choose(self, device: int | None) -> None:
        """Switch to `device`, a chooser entry's index (None: the system's default)."""
        self.pending.watch(self.output.set_device(device), "switching the audio output", self._failed)

    def _failed(self, message: str) -> None:
        self.banner.show_message(f"audio output: {message}")
