"""Script import: `load_script(path)` detects the format and returns a `Script`."""

from __future__ import annotations

import re
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import read_text
from engine.script.fountain import parse_fountain
from engine.script.plaintext import LINE, parse_plaintext
from engine.script.subtitles import parse_subtitles
from engine.script.tabular import parse_tabular

SUFFIXES = (".fountain", ".spmd", ".txt", ".srt", ".vtt", ".csv", ".tsv")


def sniff(text: str) -> str | None:
    """Guess a format from content alone; None when nothing fits."""
    head = text.lstrip("\ufeff").lstrip()
    if head.startswith("WEBVTT"):
        return "vtt"
    if re.search(r"^\s*\d+\s*\n\s*[\d:,.]+\s*-->", head, re.MULTILINE):
        return "srt"
    body = [ln for ln in head.split("\n") if ln.strip() and not ln.lstrip().startswith("#")]
    if body and sum(bool(LINE.match(ln)) for ln in body) >= 0.6 * len(body):
        return "text"
    if re.search(r"^\n?[A-Z][A-Z .'\-]+\s*(\(.*\))?\s*\^?\n\S", "\n" + head, re.MULTILINE):
        return "fountain"
    first = head.split("\n", 1)[0]
    for delim, name in ((",", "csv"), ("\t", "tsv")):
        if "role" in first.lower() and delim in first:
            return name
    return None


def load_script(path: str | Path) -> Script:
    """Import a script file of any supported format; raise `ScriptError` on bad input."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix and suffix not in SUFFIXES and suffix not in {".text", ".md"}:
        raise ScriptError(path, f"unknown format {suffix!r}; expected one of {', '.join(SUFFIXES)}")
    text = read_text(path)
    fmt = {".fountain": "fountain", ".spmd": "fountain", ".srt": "srt", ".vtt": "vtt",
           ".csv": "csv", ".tsv": "tsv"}.get(suffix)  # fmt: skip
    if fmt is None:
        fmt = sniff(text)
    if fmt is None and any(LINE.match(ln) for ln in text.split("\n")):
        fmt = "text"  # mostly 'NAME: line': let that parser name the line that is not
    if fmt is None:
        raise ScriptError(
            path,
            "could not recognise the format; expected Fountain, 'NAME: line' text, SRT, WebVTT or CSV",
        )
    if fmt == "fountain":
        return parse_fountain(path, text)
    if fmt == "text":
        return parse_plaintext(path, text)
    if fmt in ("srt", "vtt"):
        return parse_subtitles(path, text, fmt)
    return parse_tabular(path, text, "\t" if fmt == "tsv" else ",")


__all__ = ["ScriptError", "load_script", "sniff"]
