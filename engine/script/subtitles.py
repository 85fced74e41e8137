"""Subtitle importers: SRT, WebVTT, ASS/SSA, SBV and MicroDVD become timed lines.

pysubs2 reads the formats. Troupe's own layer around it: a linear pre-pass over SRT/WebVTT
that checks every timing line (pysubs2 would silently cut a 3-digit hour), drops what
WebVTT allows but is not speech (header lines such as `Kind:`/`Language:`, NOTE, STYLE
and REGION blocks, cue identifiers) and keeps source line numbers; a tiny SBV reader;
then speaker detection (`engine.script.speakers`) and timing slots.

Who speaks an untagged cue (the rule, in order): a label in the cue names the speaker; an
ASS event's actor field names it; a cue that continues an unfinished sentence of the
previous cue keeps its speaker; in a file that marks speaker changes with `>>` the speaker
stays until the next `>>`; otherwise the cue goes to NARRATOR, never silently to whoever
spoke last. Within a cue, each dialogue dash is a new turn: an unnamed one is spoken by the
other voice of the conversation (the previous different speaker, or VOICE 2), never merged.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import pysubs2
from pysubs2.formats.microdvd import MICRODVD_LINE
from pysubs2.formats.subrip import SubripFormat

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import ScriptBuilder, normalise_role
from engine.script.speakers import Turn, clean_text, read_cue, trusted_labels

DEFAULT_SPEAKER = "NARRATOR"
SECOND_VOICE = "VOICE 2"
_SRT_TIME = r"\d{1,2}:\d{1,2}:\d{1,2}[,.]\d{1,3}"
_VTT_TIME = r"(?:\d{1,4}:)?\d{2}:\d{2}\.\d{2,3}"
_TIMING = {
    "srt": re.compile(rf"^\s*{_SRT_TIME}\s*-->\s*{_SRT_TIME}(?:\s.*)?$"),
    "vtt": re.compile(rf"^\s*{_VTT_TIME}\s*-->\s*{_VTT_TIME}(?:\s.*)?$"),
}
_SBV_TIMING = re.compile(r"^\s*(\d{1,2}:\d{2}:\d{2}\.\d{3})\s*,\s*(\d{1,2}:\d{2}:\d{2}\.\d{3})\s*$")
_SRT_STAMP = SubripFormat.TIMESTAMP
_WORD_TIMING = re.compile(r"<\d{2}:\d{2}[:.]|<c[.>]")
_INLINE_TIME = re.compile(r"<\d{1,4}(?::\d{2}){1,2}[.,]\d{1,3}>")
_BRACES = re.compile(r"\{[^{}]*\}")
_DRAWING = re.compile(r"\{[^{}]*\\p[1-9]")
_SENTENCE_END = tuple(".?!…\"'”»)]♪-—")
_NOT_SPEECH_STYLES = ("sign", "song", "karaoke", "lyric")
_TIMED = ("srt", "vtt", "sbv")
_EXPECTED = {
    "srt": "'HH:MM:SS,mmm --> HH:MM:SS,mmm'",
    "vtt": "'[HH:]MM:SS.mmm --> [HH:]MM:SS.mmm'",
}


@dataclass
class _Event:
    start_s: float
    end_s: float
    text: str
    line: int
    """The timing line (SRT, WebVTT, SBV) or the event line (ASS, MicroDVD); 0 if unknown."""
    actor: str
    text_offset: int = 0
    """Lines from `line` to where the words start."""


def format_srt_time(t: float) -> str:
    """Seconds as an SRT timestamp, HH:MM:SS,mmm."""
    ms = round(t * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def _prepare_timed(path: Path, text: str, fmt: str) -> tuple[str, list[int]]:
    """SRT/WebVTT as pysubs2 should see it, and the line number of each cue's timing line."""
    lines = text.split("\n")
    timing = _TIMING[fmt]
    keep: list[str] = []
    timing_lines: list[int] = []
    k = 0
    if fmt == "vtt":
        if not lines[0].lstrip("\ufeff").startswith("WEBVTT"):
            raise ScriptError(path, "a WebVTT file must start with 'WEBVTT'", 1)
        while k < len(lines) and lines[k].strip() and "-->" not in lines[k]:
            k += 1  # header lines: 'Kind: captions', 'Language: en'
    skipping = False
    for n in range(k, len(lines)):
        line = lines[n]
        block_start = n == 0 or not lines[n - 1].strip()
        if not line.strip():
            skipping = False
            if keep and keep[-1]:  # one blank line: pysubs2 backtracks over a long run of them
                keep.append("")
        elif skipping:
            continue
        elif fmt == "vtt" and block_start and line.split(" ", 1)[0] in ("NOTE", "STYLE", "REGION"):
            skipping = True
        elif "-->" in line:
            if not timing.match(line):
                raise ScriptError(path, f"bad timing {line.strip()[:60]!r}; expected {_EXPECTED[fmt]}", n + 1)
            timing_lines.append(n + 1)
            keep.append(line)
        elif n + 1 < len(lines) and "-->" in lines[n + 1] and (block_start or line.strip().isdigit()):
            continue  # a cue identifier
        else:
            line = _INLINE_TIME.sub("", line)  # word timings: pysubs2 would take them for a cue
            if len(_SRT_STAMP.findall(line)) < 2:
                keep.append(line)
    return "\n".join(keep), timing_lines


def _sbv_as_srt(text: str) -> tuple[str, list[int]]:
    """SBV ('0:00:01.000,0:00:03.000' timing lines) rewritten line for line as SRT."""
    out, timing_lines = [], []
    for n, line in enumerate(text.split("\n"), start=1):
        m = _SBV_TIMING.match(line)
        if m:
            timing_lines.append(n)
            line = f"{m.group(1)} --> {m.group(2)}"
        out.append(line)
    return "\n".join(out), timing_lines


def _ass_event_lines(text: str) -> list[int]:
    lines, section = [], ""
    for n, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if line.startswith("[") and line.endswith("]") and any(ch.islower() for ch in line):
            section = line.lower()
        elif line.startswith(("Dialogue:", "Comment:")) and "events" in section:
            lines.append(n)
    return lines


def _microdvd_lines(text: str) -> list[int]:
    pattern = MICRODVD_LINE
    found = [n for n, ln in enumerate(text.split("\n"), start=1) if pattern.match(ln)]
    first = pattern.match(text.split("\n")[found[0] - 1]) if found else None
    if first and first.group(1) == "1" and first.group(2) == "1":
        return found[1:]  # '{1}{1}23.976' gives the frame rate, not a line
    return found


def _guard_microdvd(text: str) -> str:
    # pysubs2's style-code patterns ('{Y:i}', '{f:...}') are quadratic on codes left open;
    # styles are not spoken, so every '{...}' after the frame numbers goes before it parses.
    out = []
    for line in text.split("\n"):
        m = MICRODVD_LINE.match(line)
        if m:
            body = _BRACES.sub("", m.group(3)).replace("{", "").replace("}", "")
            line = line[: m.start(3)] + (body or " ")
        out.append(line)
    return "\n".join(out)


def _guard_ass(text: str) -> str:
    # pysubs2's section-heading pattern is quadratic on a '[' line with no ']': such a
    # line can never be a heading, so it is blanked before pysubs2 sees it.
    lines = text.split("\n")
    return "\n".join("" if "[" in ln[:4] and "]" not in ln else ln for ln in lines)


def _load(path: Path, text: str, fmt: str) -> list[_Event]:
    if fmt in ("srt", "vtt"):
        source, lines = _prepare_timed(path, text, fmt)
        parser = fmt
    elif fmt == "sbv":
        (source, lines), parser = _sbv_as_srt(text), "srt"
    elif fmt in ("ass", "ssa"):
        source, lines, parser = _guard_ass(text), _ass_event_lines(text), fmt
    else:
        source, lines, parser = _guard_microdvd(text), _microdvd_lines(text), "microdvd"
    try:
        with warnings.catch_warnings():  # a style pysubs2 falls back on is no concern of ours
            warnings.simplefilter("ignore")
            subs = pysubs2.SSAFile.from_string(source, format_=parser, keep_html_tags=True)
    except pysubs2.exceptions.UnknownFPSError:
        raise ScriptError(
            path, "MicroDVD file without a frame rate; add '{1}{1}23.976' (its fps) as line 1", 1
        ) from None
    except Exception as exc:  # any failure inside the library means a bad file
        raise ScriptError(path, f"not a readable {fmt.upper()} file ({str(exc)[:80]})") from None
    if len(subs.events) != len(lines):
        lines = [0] * len(subs.events)  # the library skipped or added a line: no numbers
    return [
        _Event(ev.start / 1000, ev.end / 1000, ev.text, n, ev.name.strip(), int(fmt in _TIMED and n > 0))
        for ev, n in zip(subs.events, lines, strict=True)
        if ev.type == "Dialogue"
        and not _DRAWING.search(ev.text)
        and not any(s in ev.style.lower() for s in _NOT_SPEECH_STYLES)
    ]


def _drop_rolled(events: list[_Event]) -> None:
    """Auto-captions (YouTube via yt-dlp: inline word timings `<00:00:01.000><c>`) repeat
    the previous cue's last line at the top of the next one, and flash 10 ms cues of what
    was just shown: each line is spoken once. Other files may repeat a line on purpose."""
    if not any(_WORD_TIMING.search(ev.text) for ev in events):
        return
    shown: list[str] = []
    for ev in events:
        pairs = [(ln, " ".join(clean_text(ln).split())) for ln in ev.text.replace("\\N", "\n").split("\n")]
        lines = [ln for ln, p in pairs if p]
        plain = [p for _, p in pairs if p]
        skip = 0
        for j in range(min(len(plain), len(shown), 3), 0, -1):  # a caption window is short
            if plain[:j] == shown[-j:]:
                skip = j
                break
        ev.text = "\n".join(lines[skip:])
        shown = plain or shown


def parse_subtitles(path: Path, text: str, fmt: str) -> Script:
    """Parse a subtitle file: fmt is 'srt', 'vtt', 'ass', 'ssa', 'sbv' or 'microdvd'."""
    events = _load(path, text, fmt)
    _drop_rolled(events)
    builder = ScriptBuilder(path=path, format=fmt)
    sticky = any(">>" in ev.text for ev in events)
    state = _Speakers(sticky)
    trusted = trusted_labels([ev.text for ev in events])
    for ev in events:
        if ev.end_s < ev.start_s:
            raise ScriptError(
                path,
                f"cue ends ({format_srt_time(ev.end_s)}) before it starts ({format_srt_time(ev.start_s)})",
                ev.line or None,
            )
        reading = read_cue(ev.text, trusted)
        for found in reading.descriptions:
            builder.annotate(found, ev.line + ev.text_offset, ev.start_s, ev.end_s)
        _add_turns(builder, state, ev, reading.turns)
    return builder.build()


class _Speakers:
    """The untagged-cue rule's memory: who spoke last, who before, was a sentence open."""

    def __init__(self, sticky: bool) -> None:
        self.sticky = sticky
        self.last: str | None = None
        self.before: str | None = None
        self.open_sentence = False

    def first_turn(self, ev: _Event) -> str:
        if ev.actor:
            return ev.actor
        if self.last and (self.sticky or self.open_sentence):
            return self.last
        return DEFAULT_SPEAKER

    def other(self, current: str) -> str:
        if self.before and self.before != current:
            return self.before
        return SECOND_VOICE if current != SECOND_VOICE else DEFAULT_SPEAKER

    def spoke(self, speaker: str, text: str) -> None:
        speaker = normalise_role(speaker)
        if speaker != self.last:
            self.before, self.last = self.last, speaker
        self.open_sentence = not text.rstrip().endswith(_SENTENCE_END)


def _add_turns(builder: ScriptBuilder, state: _Speakers, ev: _Event, turns: list[Turn]) -> None:
    total = sum(len(t.text.split()) for t in turns) or 1
    start, done = ev.start_s, 0
    for k, turn in enumerate(turns):
        if turn.speaker:
            speaker = turn.speaker
        elif k == 0 and not (turn.new_turn and state.sticky):
            speaker = state.first_turn(ev)
        else:
            speaker = state.other(state.last or DEFAULT_SPEAKER)
        done += len(turn.text.split())
        end = ev.start_s + (ev.end_s - ev.start_s) * done / total  # a slot share per turn
        line = ev.line + ev.text_offset or 1
        builder.cue(speaker, turn.text, line, tuple(turn.hints), start_s=start, end_s=end)
        state.spoke(speaker, turn.text)
        start = end
