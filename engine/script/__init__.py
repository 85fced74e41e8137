"""Script import: `load_script(path)` detects the format and returns a `Script`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import MAX_LINES, Decoded, line_limit, read_text
from engine.script.detect import sniff
from engine.script.fdx import parse_fdx
from engine.script.fountain import parse_fountain
from engine.script.limits import check_file, check_script
from engine.script.options import ImportOptions
from engine.script.plaintext import match_line, parse_plaintext
from engine.script.subtitles import parse_subtitles
from engine.script.tabular import parse_tabular

BY_SUFFIX = {
    ".fountain": "fountain", ".spmd": "fountain", ".fdx": "fdx", ".srt": "srt", ".vtt": "vtt",
    ".ass": "ass", ".ssa": "ssa", ".sbv": "sbv", ".sub": "microdvd", ".csv": "csv", ".tsv": "tsv",
}  # fmt: skip
SUFFIXES = (*BY_SUFFIX, ".txt")
_SNIFFED = {".txt", ".text", ".md"}
_SUBTITLES = {"srt", "vtt", "ass", "ssa", "sbv", "microdvd"}
_WHAT_TO_DO = (
    "export it from your writing app as Fountain (.fountain) or Final Draft (.fdx), "
    "or from your subtitle editor as SRT, WebVTT or ASS"
)


def load_script(path: str | Path, options: ImportOptions | None = None) -> Script:
    """Import a script file of any supported format; raise `ScriptError` on bad input, on
    what is not a regular file, and on a script past the limits of `engine.script.limits`.
    What the import skipped, guessed or split is in `Script.facts` (the import report)."""
    path = Path(path)
    check_file(path)
    with line_limit(MAX_LINES):  # a script past the limit is refused where its parsing reaches it
        return check_script(path, import_unchecked(path, options))


def import_unchecked(path: Path, options: ImportOptions | None = None) -> Script:
    """The importers without the entry checks (benchmarks measure past the limits)."""
    options = options or ImportOptions()
    decoded = _read(path, options)
    script = _parse(path, decoded.text, options)
    first = _telling_line(decoded.text)
    facts = replace(script.facts, encoding=decoded.encoding, confidence=decoded.confidence,
                    how=decoded.how, first_line=first[:120])  # fmt: skip
    return replace(script, facts=facts)


def _telling_line(text: str) -> str:
    """The first line that shows whether the decoding is right: one with a non-ASCII letter
    (among the first 500 lines), else the first with words."""
    lines = text.split("\n", 500)[:500]
    worded = [ln.strip() for ln in lines if any(ch.isalpha() for ch in ln) and "-->" not in ln]
    return next((ln for ln in worded if not ln.isascii()), worded[0] if worded else "")


def _read(path: Path, options: ImportOptions) -> Decoded:
    suffix = path.suffix.lower()
    if suffix and suffix not in BY_SUFFIX and suffix not in _SNIFFED:
        raise ScriptError(
            path, f"Troupe cannot read {suffix!r} files; {_WHAT_TO_DO} (read: {', '.join(SUFFIXES)})"
        )
    return read_text(path, options.encoding)


def _parse(path: Path, text: str, options: ImportOptions) -> Script:
    suffix = path.suffix.lower()
    fmt = BY_SUFFIX.get(suffix) or sniff(text)
    if fmt is None and any(match_line(ln) for ln in text.split("\n")):
        fmt = "text"  # mostly 'NAME: line': let that parser name the line that is not
    if fmt is None:
        raise ScriptError(
            path,
            "could not recognise the format; expected Fountain, Final Draft, 'NAME: line' text, "
            f"subtitles or CSV; {_WHAT_TO_DO}",
        )
    if fmt == "fountain":
        return parse_fountain(path, text)
    if fmt == "fdx":
        return parse_fdx(path, text)
    if fmt == "text":
        return parse_plaintext(path, text)
    if fmt in _SUBTITLES:
        return parse_subtitles(path, text, fmt, options.styles)
    return parse_tabular(path, text, "\t" if fmt == "tsv" else ",")


__all__ = ["ImportOptions", "ScriptError", "load_script", "sniff"]
