"""Plain-text radio script importer: `NAME: line`, `NAME (hint): line`, `#` comments."""

from __future__ import annotations

import re
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import ScriptBuilder, split_extension

LINE = re.compile(r"^\s*([^:#\s][^:]{0,60}?)\s*:\s+(\S.*)$")
"""A speaker line; the name is at most ~60 characters so prose with a colon is not a name."""


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
        m = LINE.match(line)
        if m and not m.group(1).startswith("("):
            flush()
            name, hints = split_extension(m.group(1))
            pending = (name, [m.group(2)], n, hints)
            last_was_cue = True
        elif last_was_cue and pending:
            pending[1].append(line)  # a wrapped line continues the speech
        else:
            raise ScriptError(path, f"expected 'NAME: line' or a '#' comment, got {line[:40]!r}", n)
    flush()
    return builder.build(title=title)
