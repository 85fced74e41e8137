"""Guess a script's format from its content: one pass over the lines, no backtracking regex."""

from __future__ import annotations

import re

from engine.script.plaintext import match_line

_SRT_TIMING = re.compile(r"^\s*\d{1,2}:\d{1,2}:\d{1,2}[,.]\d{1,3}\s*-->")
_SBV_TIMING = re.compile(r"^\d{1,2}:\d{2}:\d{2}\.\d{3},\d{1,2}:\d{2}:\d{2}\.\d{3}\s*$")
_MICRODVD = re.compile(r"^\{\d{1,12}\}\{\d{1,12}\}")
_SCENE = re.compile(r"^(INT|EXT|EST|INT\.?/EXT|I/E)[.\s]")
_HEAD_LINES = 200


def _fountain_like(lines: list[str]) -> bool:
    for k, line in enumerate(lines):
        s = line.strip()
        if not s or (k and lines[k - 1].strip()):
            continue
        if _SCENE.match(s):
            return True
        name = s.rstrip("^").strip().split("(", 1)[0].strip()
        nxt = lines[k + 1].strip() if k + 1 < len(lines) else ""
        if nxt and name.isupper() and not s.endswith(":") and not s.startswith((">", "!", "#", "=")):
            return True
    return False


def sniff(text: str) -> str | None:
    """Guess a format from content alone; None when nothing fits."""
    head = text.lstrip("\ufeff").lstrip()
    if head.startswith("WEBVTT"):
        return "vtt"
    start = head[:2000]
    if head.startswith("<?xml") or "<FinalDraft" in start:
        return "fdx" if "<FinalDraft" in start else None
    if "[Script Info]" in start or "[V4+ Styles]" in start:
        return "ssa" if "[V4 Styles]" in start else "ass"
    lines = head.split("\n")
    first = lines[0].strip()
    if _MICRODVD.match(first):
        return "microdvd"
    if _SBV_TIMING.match(first):
        return "sbv"
    if any(_SRT_TIMING.match(ln) for ln in lines[:_HEAD_LINES]):
        return "srt"
    body = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if body and sum(match_line(ln) is not None for ln in body) >= 0.6 * len(body):
        return "text"
    if _fountain_like(lines):
        return "fountain"
    for delim, name in ((",", "csv"), ("\t", "tsv")):
        if "role" in first.lower() and delim in first:
            return name
    return None
