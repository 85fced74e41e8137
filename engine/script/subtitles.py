"""SRT and WebVTT importers: subtitle cues with speaker tags become timed lines.

Speaker tags: `[NAME] text`, `NAME: text` and WebVTT's `<v NAME>text`. A cue without a
tag keeps the previous speaker (a subtitle split over two cues), or NARRATOR at the start.
The cue's start/end times are kept as slots on the show timeline.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import ScriptBuilder

_TIME = r"(?:(\d+):)?(\d{1,2}):(\d{2})[,.](\d{1,3})"
_TIMING = re.compile(rf"^\s*{_TIME}\s*-->\s*{_TIME}(?:\s+.*)?$")
_BRACKET = re.compile(r"^\s*\[([^\]]{1,40})\]\s*(.*)$")
_COLON = re.compile(r"^\s*([A-Z][A-Z0-9 .'\-]{0,39}):\s+(.*)$")
_VOICE = re.compile(r"<v(?:\.[^\s>]+)?\s+([^>]{1,40})>")
DEFAULT_SPEAKER = "NARRATOR"


def _seconds(groups: tuple[str | None, ...]) -> float:
    hours, minutes, secs, millis = groups
    frac = int((millis or "0").ljust(3, "0"))
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(secs or 0) + frac / 1000


def format_srt_time(t: float) -> str:
    """Seconds as an SRT timestamp, HH:MM:SS,mmm."""
    ms = round(t * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def _speaker(text: str, previous: str) -> tuple[str, str]:
    for pattern in (_BRACKET, _COLON):
        m = pattern.match(text)
        if m:
            return m.group(1).strip(), m.group(2)
    v = _VOICE.search(text)
    if v:
        return v.group(1).strip(), _VOICE.sub("", text)
    return previous, text


def parse_subtitles(path: Path, text: str, fmt: str) -> Script:
    """Parse SRT (`fmt='srt'`) or WebVTT (`fmt='vtt'`)."""
    lines = text.split("\n")
    builder = ScriptBuilder(path=path, format=fmt)
    start = 0
    if fmt == "vtt":
        if not lines[0].lstrip("\ufeff").startswith("WEBVTT"):
            raise ScriptError(path, "a WebVTT file must start with 'WEBVTT'", 1)
        start = 1
    speaker = DEFAULT_SPEAKER
    i = start
    while i < len(lines):
        block_start = i
        while i < len(lines) and lines[i].strip():
            i += 1
        block = lines[block_start:i]
        if block:
            speaker = _block(builder, path, fmt, block, block_start + 1, speaker)
        i += 1
    return builder.build()


def _block(
    builder: ScriptBuilder, path: Path, fmt: str, block: list[str], first_line: int, speaker: str
) -> str:
    head = block[0].strip()
    if fmt == "vtt" and head.startswith(("NOTE", "STYLE", "REGION")):
        return speaker
    timing_at = next((k for k, ln in enumerate(block) if "-->" in ln), None)
    if timing_at is None:
        raise ScriptError(path, f"expected a timing line 'start --> end', got {head[:40]!r}", first_line)
    line_no = first_line + timing_at
    m = _TIMING.match(block[timing_at])
    if not m:
        raise ScriptError(
            path, f"bad timing {block[timing_at].strip()!r}; expected 'HH:MM:SS,mmm --> HH:MM:SS,mmm'",
            line_no,
        )  # fmt: skip
    start_s, end_s = _seconds(m.groups()[:4]), _seconds(m.groups()[4:])
    if end_s < start_s:
        raise ScriptError(
            path,
            f"cue ends ({format_srt_time(end_s)}) before it starts ({format_srt_time(start_s)})",
            line_no,
        )
    body = [ln.strip() for ln in block[timing_at + 1 :] if ln.strip()]
    if not body:
        return speaker
    speaker, first = _speaker(body[0], speaker)
    words = " ".join([first, *body[1:]])
    words = re.sub(r"^-\s*", "", words)
    builder.cue(speaker, words, line_no + 1, start_s=start_s, end_s=end_s)
    return speaker
