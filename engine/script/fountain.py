"""Fountain screenplay importer (https://fountain.io syntax), dialogue-focused.

Kept: title page, scene headings (incl. forced '.'), character cues with extensions,
parentheticals (as delivery hints), dual dialogue ('^', as overlap). Ignored: action,
transitions, centered text, sections, synopses, notes [[...]], boneyard /* */.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.core.types import Script
from engine.script.common import ScriptBuilder, split_extension

_SCENE = re.compile(r"^(INT|EXT|EST|INT\.?/EXT|I/E)[.\s]", re.IGNORECASE)
_SCENE_NUMBER = re.compile(r"\s*#[^#]+#\s*$")
_TITLE_KEY = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*(.*)$")
_TRANSITION = re.compile(r"^[A-Z0-9 .'\-]+TO:$")


def _blank_out(text: str, pattern: str) -> str:
    # Replace a span by its newlines only, so line numbers stay true.
    return re.sub(pattern, lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL)


def _title_page(lines: list[str]) -> tuple[dict[str, str], int]:
    """Parse the title page; return its keys and the index of the first body line."""
    if not lines or not _TITLE_KEY.match(lines[0].strip()):
        return {}, 0
    meta: dict[str, str] = {}
    key = ""
    i = 0
    while i < len(lines) and lines[i].strip():
        raw = lines[i]
        m = _TITLE_KEY.match(raw.strip())
        if m and not raw[:1].isspace():
            key = m.group(1).strip().lower()
            meta[key] = m.group(2).strip()
        elif key and raw[:1].isspace():
            meta[key] = (meta[key] + "\n" + raw.strip()).strip()
        else:
            return {}, 0  # not a title page after all: body text starts at line 1
        i += 1
    return meta, i


def _is_character(line: str, prev_blank: bool, next_line: str | None) -> bool:
    if not prev_blank or next_line is None or not next_line.strip():
        return False
    if line.startswith("@"):
        return True
    if line.startswith(("!", ">", ".", "#", "=", "~", "[[")) or _SCENE.match(line):
        return False
    name, _ = split_extension(line.rstrip("^").strip())
    if not re.search(r"[A-Z]", name) or name != name.upper():
        return False
    return not _TRANSITION.match(line) and not line.endswith(":")


def parse_fountain(path: Path, text: str) -> Script:
    text = _blank_out(text, r"/\*.*?\*/")
    text = _blank_out(text, r"\[\[.*?\]\]")
    lines = text.split("\n")
    meta, body_start = _title_page(lines)
    builder = ScriptBuilder(path=path, format="fountain")
    i = body_start
    prev_blank = True
    while i < len(lines):
        line = lines[i].strip()
        line_no = i + 1
        if not line:
            prev_blank = True
            i += 1
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if prev_blank and (_SCENE.match(line) or re.match(r"^\.[^.]", line)):
            heading = _SCENE_NUMBER.sub("", line[1:] if line.startswith(".") else line)
            builder.scene(heading.strip(), line_no)
        elif _is_character(line, prev_blank, nxt):
            i = _dialogue_block(builder, lines, i)
            prev_blank = False
            continue
        prev_blank = False
        i += 1
    return builder.build(title=_title(meta), metadata=meta)


def _dialogue_block(builder: ScriptBuilder, lines: list[str], i: int) -> int:
    """Read one character cue and its dialogue starting at `lines[i]`; return the next index."""
    cue_line = lines[i].strip()
    dual = cue_line.endswith("^")
    name, extensions = split_extension(cue_line.lstrip("@").rstrip("^").strip())
    hints = [e for e in extensions if e.upper().replace("’", "'") not in {"CONT'D", "CONT"}]
    spoken: list[str] = []
    j = i + 1
    while j < len(lines) and lines[j].strip():
        part = lines[j].strip()
        if part.startswith("(") and part.endswith(")"):
            hints.append(part[1:-1].strip())
        else:
            spoken.append(part)
        j += 1
    if spoken:
        builder.cue(name, " ".join(spoken), i + 1, tuple(hints), overlaps_previous=dual)
    return j


def _title(meta: dict[str, str]) -> str:
    raw = meta.get("title", "")
    lines = [re.sub(r"[*_]", "", ln).strip() for ln in raw.split("\n")]
    return " — ".join(ln for ln in lines if ln)
