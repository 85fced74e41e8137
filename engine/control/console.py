"""`play` in a terminal: a live status line (clock, now, standby, late, xruns) and single keys
for the director's commands (GO, Stop, Pause, Panic), with the terminal given back as it was."""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TextIO

from engine.control.transport import Transport
from engine.core.clock import clock_text
from engine.snapshot import CueView, EngineSnapshot

KEYS_HELP = "keys: space/g GO · s stop · p pause · esc panic · q quit"


def status_line(snap: EngineSnapshot, width: int = 100) -> str:
    """One line for the terminal: clock, status, the line heard now, Standby (what GO fires),
    late lines and xruns; cut to `width` characters."""
    now = next((c for c in snap.cues if c.state in ("playing", "fallback")), None)
    standby = next((c for c in snap.cues if c.index == snap.go_cue), None) if snap.go_cue >= 0 else None
    f = snap.figures

    def cue(c: CueView | None) -> str:
        return "–" if c is None else f"{c.index + 1} {c.role}"

    clock = f"{clock_text(snap.playhead_s, True)} / {clock_text(snap.end_s, True)}"
    text = (f"{clock}  {snap.status:<8}  now {cue(now)}  standby {cue(standby)}  "
            f"late {f.deadline_misses}  xruns {f.xruns}")  # fmt: skip
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def command_for(key: str, transport: Transport) -> Callable[[], Future[None]] | None:
    """The transport command a key stands for (None: not a command key)."""
    return {
        " ": transport.go, "g": transport.go, "s": transport.stop, "p": transport.toggle,
        "\x1b": transport.panic,
    }.get(key.lower() if key != "\x1b" else key)  # fmt: skip


@contextlib.contextmanager
def keys(stream: TextIO = sys.stdin) -> Iterator[Callable[[], str]]:
    """Single keys from the terminal without Enter (cbreak mode, no echo), restored on the
    way out whatever happens; `read()` gives the keys pressed since the last read ('' when
    none, or when the input is not a terminal)."""
    if not stream.isatty():
        yield lambda: ""
        return
    import termios
    import tty

    fd = stream.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)

        def read() -> str:
            out = ""
            while select.select([fd], [], [], 0)[0]:
                chunk = os.read(fd, 32)
                if not chunk:
                    break
                out += chunk.decode(errors="replace")
            return out

        yield read
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
