"""Fountain screenplay importer (https://fountain.io syntax), dialogue-focused.

The text is read as paragraphs separated by blank lines; a line of two spaces is not
blank (the spec's way to keep a blank line inside a speech or an action paragraph).
Kept: title page, scene headings (incl. forced '.'), character cues in any alphabet with
letter case (forced with '@' in any script), extensions, parentheticals (also over several
lines) as delivery hints, lyrics '~' (sung by the speaker), dual dialogue '^' as overlap.
Ignored: action, transitions, centered text, sections, synopses, notes [[...]], boneyard
/* */, page breaks, (MORE) and (CONT'D). Emphasis and escape characters are never spoken.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import ScriptBuilder, is_continuation, split_extension

_SCENE = re.compile(r"^(INT|EXT|EST|INT\.?/EXT|I/E)[.\s]", re.IGNORECASE)
_TITLE_KEY = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*(.*)$")
_NOT_CHARACTER = ("!", ">", ".", "#", "=", "~", "[[")
Paragraph = list[tuple[int, str]]
"""(1-based line number, line) pairs."""


def _blank_spans(text: str, open_mark: str, close_mark: str) -> str:
    """Replace each `open ... close` span by its newlines only, so line numbers stay true.

    One left-to-right pass: an unclosed mark ends the search (nothing after it can close).
    """
    out: list[str] = []
    pos = 0
    while True:
        start = text.find(open_mark, pos)
        if start < 0:
            break
        end = text.find(close_mark, start + len(open_mark))
        if end < 0:
            break
        out.append(text[pos:start])
        out.append("\n" * text.count("\n", start, end))
        pos = end + len(close_mark)
    out.append(text[pos:])
    return "".join(out)


def _is_blank(line: str) -> bool:
    return line in ("", " ")


def _paragraphs(lines: list[str], start: int, builder: ScriptBuilder) -> list[Paragraph]:
    paragraphs: list[Paragraph] = []
    current: Paragraph = []
    for k in range(start, len(lines)):
        line = lines[k].rstrip("\r")
        if _is_blank(line) or (not line.strip() and line != "  " and _cue_follows(lines, k)):
            if current and line:
                builder.note("warning", k + 1, "a line of only spaces or tabs read as a blank line "
                             "(a character cue follows it); the Fountain way to keep a blank line "
                             "inside a speech is exactly two spaces")  # fmt: skip
            if current:
                paragraphs.append(current)
            current = []
        else:
            if not line.strip() and line != "  " and current:
                builder.note("warning", k + 1, "a line of only spaces or tabs keeps the paragraph "
                             "together; leave it empty to end the paragraph")  # fmt: skip
            current.append((k + 1, line))
    if current:
        paragraphs.append(current)
    return paragraphs


def _cue_follows(lines: list[str], k: int) -> bool:
    """A character cue with words under it starts on the next line."""
    nxt = lines[k + 1].strip() if k + 1 < len(lines) else ""
    after = lines[k + 2].strip() if k + 2 < len(lines) else ""
    return bool(nxt and after) and _is_character(nxt)


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


def _name_part(line: str) -> str:
    return line.rstrip("^").strip().split("(", 1)[0].strip()


def _is_character(line: str) -> bool:
    """A line in upper case (any cased alphabet), or forced with '@'."""
    if line.startswith("@"):
        return len(_name_part(line[1:])) > 0
    if line.startswith(_NOT_CHARACTER) or _SCENE.match(line) or line.endswith(":"):
        return False
    return _name_part(line).isupper()


def _is_caseless_name(line: str) -> bool:
    """A short line of letters without case (CJK, Arabic, ...): a name only with '@'."""
    name = _name_part(line)
    return (
        0 < len(name) <= 40
        and any(ch.isalpha() for ch in name)
        and not any(ch.isupper() or ch.islower() for ch in name)
        and not line.startswith(_NOT_CHARACTER)
    )


def _heading(line: str) -> str:
    heading = line[1:] if line.startswith(".") else line
    heading = heading.strip()
    if heading.endswith("#"):  # scene number: '#12A#'
        start = heading.rfind("#", 0, len(heading) - 1)
        if start >= 0:
            heading = heading[:start].rstrip()
    return heading


def parse_fountain(path: Path, text: str) -> Script:
    text = _blank_spans(_blank_spans(text, "/*", "*/"), "[[", "]]")
    lines = text.split("\n")
    meta, body_start = _title_page(lines)
    builder = ScriptBuilder(path=path, format="fountain")
    caseless_line = 0
    for para in _paragraphs(lines, body_start, builder):
        line_no, first = para[0][0], para[0][1].strip()
        if first.startswith("#"):  # sections: '# Act One', '## The Raid' (never spoken)
            for n, text in para:
                stripped = text.strip()
                marks = len(stripped) - len(stripped.lstrip("#"))
                if marks:
                    builder.section(stripped[marks:], marks, n)
        elif _SCENE.match(first) or (first.startswith(".") and not first.startswith("..")):
            builder.scene(_heading(first), line_no)
        elif len(para) >= 2 and _is_character(first):
            _dialogue(builder, para)
        elif len(para) >= 2 and not caseless_line and _is_caseless_name(first):
            caseless_line = line_no
    if not builder.cues and caseless_line:
        raise ScriptError(
            path,
            "no dialogue found; character names in a script without capital letters (Chinese, "
            "Japanese, Korean, Arabic, ...) must be marked with '@', e.g. '@李雷'",
            caseless_line,
        )
    return builder.build(title=_title(meta), metadata=meta)


def _dialogue(builder: ScriptBuilder, para: Paragraph) -> None:
    """One character cue, its parentheticals and speech (a whole paragraph)."""
    line_no, cue_line = para[0][0], para[0][1].strip()
    dual = cue_line.endswith("^")
    name, extensions = split_extension(cue_line.removeprefix("@").rstrip("^").strip())
    hints = [e for e in extensions if not is_continuation(e)]
    spoken: list[str] = []
    paren: list[str] | None = None
    for _, raw in para[1:]:
        part = raw.strip()
        if paren is not None:  # inside a parenthetical that spans lines
            paren.append(part)
            if part.endswith((")", "）")):
                hints.append(" ".join(paren)[1:-1].strip())
                paren = None
        elif part.startswith(("(", "（")) and part.endswith((")", "）")):
            hints.append(part[1:-1].strip())  # full-width ones as well, as Japanese scripts write them
        elif part.startswith(("(", "（")) and ")" not in part and "）" not in part:
            paren = [part]
        elif part:
            spoken.append(part.removeprefix("~"))
    if paren is not None:  # never closed: it was speech that starts with '('
        spoken.extend(paren)
    hints = [h for h in hints if h and not is_continuation(h)]
    if spoken:
        builder.cue(name, " ".join(spoken), line_no, tuple(hints), overlaps_previous=dual)


def _title(meta: dict[str, str]) -> str:
    raw = meta.get("title", "")
    lines = [re.sub(r"[*_]", "", ln).strip() for ln in raw.split("\n")]
    return " — ".join(ln for ln in lines if ln)
