"""Plain-text radio script importer: `NAME: line`, `NAME (hint): line`, `#` comments."""

from __future__ import annotations

import re
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import ScriptBuilder, split_extension

LINE = re.compile(r"^\s*([^:#\s][^:]{0,60}?)\s*:\s+(\S.*)$")
"""A speaker line; the name is at most ~60 characters so prose with a colon is not a name."""
_LABEL_SPAN = 120
"""LINE is tried on a line's first characters only: a label is short, and a long run of
blanks after a word would otherwise be scanned once per candidate name length."""


def match_line(line: str) -> tuple[str, str] | None:
    """('NAME (hint)', 'the line') for a 'NAME: line' line, else None. Linear in the line."""
    m = LINE.match(line[:_LABEL_SPAN])
    if not m:
        return None
    return m.group(1), line[m.start(2) :].strip()


def parse_plaintext(path: Path, text: str) -> Script:
    builder = ScriptBuilder(path=path, format="text")
    title = ""
    last_was_cue = False
    pending: tuple[str, list[str], int, tuple[str, ...]] | None = None

    def flush() -> None:
        nonlocal pending
        if pending:
            name, parts, line_no, hints = pending
            builder.cue(name, " ".join(parts), line_no, hints)
        pending = None

    for n, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line:
            flush()
            last_was_cue = False
            continue
        if line.startswith("#"):
            if line.lower().startswith("# title:"):
                title = line.split(":", 1)[1].strip()
            continue
        m = match_line(line)
        if m and not m[0].startswith("("):
            flush()
            name, hints = split_extension(m[0])
            pending = (name, [m[1]], n, hints)
            last_was_cue = True
        elif last_was_cue and pending:
            pending[1].append(line)  # a wrapped line continues the speech
        else:
            raise ScriptError(path, f"expected 'NAME: line' or a '#' comment, got {line[:40]!r}", n)
    flush()
    return builder.build(title=title)
