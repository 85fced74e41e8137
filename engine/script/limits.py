"""What a script may hold and still play: the limits every way in (window, CLI, server,
project files) checks at `load_script`, set below where playback was measured to break
(benchmarks/bench_limits.py: the engine thread's snapshot, re-plan and heatmap costs
against the number of lines and roles)."""

from __future__ import annotations

import errno
import stat
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import MAX_SCRIPT_BYTES

MAX_LINES = 10_000
"""Spoken lines in one script (a feature film has ~1,500; a long audiobook chapter ~3,000)."""
MAX_ROLES = 1_000
"""Distinct roles in one script."""
MAX_LINE_CHARS = 5_000
"""Characters in one line (also what an edit may make of a line)."""

__all__ = ["MAX_LINES", "MAX_LINE_CHARS", "MAX_ROLES", "MAX_SCRIPT_BYTES", "check_file", "check_script"]


def check_file(path: Path) -> None:
    """Refuse what is not a regular file before reading a byte of it: a folder, a named pipe
    (reading would wait forever), a device such as /dev/zero (it never ends), a socket, a
    missing file or a symbolic-link loop."""
    try:
        st = path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ScriptError(path, "the path is a loop of symbolic links; expected a script file") from exc
        raise ScriptError(path, f"cannot open the file ({exc.strerror or exc})") from exc
    except RuntimeError as exc:  # a loop, as some Python versions report it
        raise ScriptError(path, "the path is a loop of symbolic links; expected a script file") from exc
    if stat.S_ISDIR(st.st_mode):
        raise ScriptError(path, "this is a folder; expected a script file")
    if not stat.S_ISREG(st.st_mode):
        kind = "a named pipe" if stat.S_ISFIFO(st.st_mode) else "a device or socket"
        raise ScriptError(path, f"this is {kind}, not a regular file; expected a script file")


def check_script(path: Path, script: Script) -> Script:
    """Refuse a script too big to play smoothly, saying which limit and what to do."""
    if len(script.cues) > MAX_LINES:
        raise ScriptError(path, f"{len(script.cues):,} lines; a script may have at most {MAX_LINES:,} "
                                "(split it into episodes or acts)")  # fmt: skip
    if len(script.roles) > MAX_ROLES:
        raise ScriptError(path, f"{len(script.roles):,} roles; a script may have at most {MAX_ROLES:,}")
    for cue in script.cues:
        if len(cue.text) > MAX_LINE_CHARS:
            raise ScriptError(path, f"a line of {len(cue.text):,} characters; a line may have at most "
                                    f"{MAX_LINE_CHARS:,} (split it into several)", cue.line)  # fmt: skip
    return script
