"""What a script may hold and still play: the limits every way in (window, CLI, server,
project files) checks at `load_script`, set below where playback was measured to break
(benchmarks/bench_limits.py: the engine thread's snapshot, re-plan and heatmap costs
against the number of lines and roles)."""

from __future__ import annotations

import errno
import re
import stat
from dataclasses import replace
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Cue, ImportNote, Script
from engine.script.common import MAX_LINES, MAX_SCRIPT_BYTES, SPLIT_LONG_SCRIPT

MAX_ROLES = 1_000
"""Distinct roles in one script."""
MAX_LINE_CHARS = 5_000
"""Characters in one line: an imported paragraph longer than this becomes several lines
of the same role (`split_long`); an edit may not make a line longer."""

_SENTENCE = re.compile(r"(?<=[.!?…])[\"'”’»)\]]*\s+|(?<=[。！？])[」』）]*\s*")
_NO_SPACE_AFTER = tuple("。！？」』）")
_CLAUSE = re.compile(r"(?<=[,;:，；：—–])\s+")

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
    """Refuse a script too big to play smoothly, saying which limit and what to do; a line
    past `MAX_LINE_CHARS` is split, never refused (a writing app may make such a paragraph)."""
    script = _split_long_lines(script)
    if len(script.cues) > MAX_LINES:
        n = len(script.cues)
        raise ScriptError(path, f"{n:,} lines; a script may have at most {MAX_LINES:,} ({SPLIT_LONG_SCRIPT})")
    if len(script.roles) > MAX_ROLES:
        what = "split it into episodes, or give walk-on parts one shared name"
        n = len(script.roles)
        raise ScriptError(path, f"{n:,} roles; a script may have at most {MAX_ROLES:,} ({what})")
    return script


def split_long(text: str, limit: int = MAX_LINE_CHARS) -> list[str]:
    """`text` as consecutive pieces of at most `limit` characters, cut at sentence ends,
    else at clause marks, else between words, else (one 'word' past the limit) anywhere.
    Linear: each cut is found by one forward scan."""
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    current: list[str] = []  # the piece being filled, joined once it is full
    size = 0
    for sentence in _cut(text, _SENTENCE):
        parts = [sentence] if len(sentence) <= limit else _fine(sentence, limit)
        for part in parts:
            sep = "" if current and current[-1].endswith(_NO_SPACE_AFTER) else " "
            if current and size + len(sep) + len(part) <= limit:
                current += [sep, part]
                size += len(sep) + len(part)
            else:
                if current:
                    pieces.append("".join(current))
                current, size = [part], len(part)
    if current:
        pieces.append("".join(current))
    return pieces


def _cut(text: str, at: re.Pattern[str]) -> list[str]:
    out, pos = [], 0
    for m in at.finditer(text):
        out.append(text[pos : m.start()] + m.group(0).rstrip())
        pos = m.end()
    out.append(text[pos:])
    return [p.strip() for p in out if p.strip()]


def _fine(sentence: str, limit: int) -> list[str]:
    """A sentence past the limit: clauses, then words, then fixed-size cuts."""
    out: list[str] = []
    for clause in _cut(sentence, _CLAUSE):
        if len(clause) <= limit:
            out.append(clause)
            continue
        for word in clause.split():
            out.extend(word[k : k + limit] for k in range(0, len(word), limit))
    return out


def _split_long_lines(script: Script) -> Script:
    if all(len(c.text) <= MAX_LINE_CHARS for c in script.cues):
        return script
    cues: list[Cue] = []
    notes = list(script.facts.notes)
    for cue in script.cues:
        pieces = split_long(cue.text)
        if len(pieces) == 1:
            cues.append(replace(cue, index=len(cues)))
            continue
        what = f"{cue.role}'s paragraph of {len(cue.text):,} characters is {len(pieces)} lines"
        notes.append(ImportNote(cue.line, "split", f"{what} (at most {MAX_LINE_CHARS:,} characters each)"))
        total, done = sum(len(p) for p in pieces), 0
        for k, piece in enumerate(pieces):
            start = end = None
            if cue.start_s is not None and cue.end_s is not None:  # the slot shared by characters
                start = cue.start_s + (cue.end_s - cue.start_s) * done / total
                end = cue.start_s + (cue.end_s - cue.start_s) * (done + len(piece)) / total
            elif k == 0:
                start = cue.start_s
            done += len(piece)
            cues.append(replace(cue, index=len(cues), text=piece, start_s=start, end_s=end,
                                overlaps_previous=cue.overlaps_previous and k == 0))  # fmt: skip
    notes.sort(key=lambda n: n.line)
    return replace(script, cues=tuple(cues), facts=replace(script.facts, notes=tuple(notes)))
