"""The one exception hierarchy of the engine; the GUI and server show `str(error)`."""

from __future__ import annotations

import re
from pathlib import Path


class TroupeError(Exception):
    """Base of every error the engine raises on purpose (never a bug)."""


class ScriptError(TroupeError):
    """A script file could not be read: names the file, the line and what was expected."""

    def __init__(self, path: str | Path, message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.line = line
        self.reason = message
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class NoDialogueStyle(ScriptError):
    """An ASS/SSA file none of whose styles reads as dialogue: `styles` lists them (names,
    events, why) so the director can choose (the import report, `--styles`)."""

    def __init__(self, path: str | Path, message: str, styles: tuple[object, ...]) -> None:
        super().__init__(path, message)
        self.styles = styles


class CastError(TroupeError):
    """A cast (project file or setting) is invalid."""


class SynthesisError(TroupeError):
    """A voice backend failed to synthesize a line."""


class QueueFull(TroupeError):
    """The synthesis queue stayed full for the whole submit timeout."""

    retry_after_s = 1.0
    """When trying again has a chance (an HTTP client gets it as Retry-After)."""


class Overloaded(QueueFull):
    """Refused or shed by admission control: it could not be voiced in time."""

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class AudioDeviceError(TroupeError):
    """No usable audio output device, or the device refused the stream settings."""


class EngineBusy(TroupeError):
    """The engine thread did not answer a command in time."""


def message_shape(text: str) -> str:
    """A message with its numbers taken out: the same message about another cue, time or
    count (a flood of one refusal is shown once, with a count)."""
    return re.sub(r"\d+(?:[.,]\d+)?", "#", text)
