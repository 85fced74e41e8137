"""Who speaks a subtitle cue: speaker labels, dialogue dashes and sound descriptions.

A cue's text becomes turns (speaker or None, words, delivery hints) plus descriptions that
are never spoken. Recognised labels, in any script: WebVTT voice spans `<v Name>` (several
in one cue), `[NAME]`, `Name:` / `NAME (V.O.):`, `>> NAME:` and diarisation output
`SPEAKER_00:`. A dialogue dash (`-` opening a line, or after a finished sentence) starts a
new turn. Parentheses, lower-case brackets (`[laughs]`, `[ríen]`), known sound words
(`[DOOR SLAMS]`) and lines with music notes are descriptions: kept for the timeline as
annotations, never spoken, never a role. Every step is one linear pass.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field

from engine.script.common import normalise_role, split_extension

_VOICE = re.compile(r"<v(?:\.[^\s>]{0,40})?\s{1,4}([^<>]{1,60})>")
_TAG = re.compile(r"</?[A-Za-z0-9][^<>]{0,60}>")
_BRACES = re.compile(r"\{[^{}]*\}")
_DASH = re.compile(r"(?<=[.?!…\"'”»])\s+[-–—]\s+")
_LABEL = re.compile(r"^([^\s:：][^:：]{0,40}?)\s*(?::\s+|：\s*)(?=\S)")
_DESCRIPTION = re.compile(r"\[[^\[\]]{0,80}\]|\([^()]{0,80}\)|#[^#\n]{1,40}#")
_SPEAKER_ID = re.compile(r"^SPEAKER[_ ]?\d{1,3}$", re.IGNORECASE)
_MUSIC = ("♪", "♫", "♬", "#")
_SOUND_WORDS = {
    "LAUGHS", "LAUGHING", "LAUGHTER", "SIGHS", "SIGHING", "GASPS", "SCREAMS", "SCREAMING",
    "CRIES", "CRYING", "SOBS", "SOBBING", "CHUCKLES", "GIGGLES", "GROANS", "GRUNTS", "COUGHS",
    "SNIFFS", "WHISPERS", "WHISPERING", "SHOUTS", "SHOUTING", "YELLS", "SCOFFS", "EXHALES",
    "INHALES", "MUSIC", "APPLAUSE", "CHEERING", "CHEERS", "SILENCE", "THUNDER", "SLAMS",
    "SLAM", "KNOCKING", "KNOCKS", "RINGS", "RINGING", "BEEPS", "BEEPING", "BARKS", "BARKING",
    "GUNSHOT", "GUNSHOTS", "EXPLOSION", "FOOTSTEPS", "DOOR", "PHONE", "SIREN", "CRASH",
    "INAUDIBLE", "INDISTINCT", "CHATTER", "MUTTERS", "MUMBLES", "HUMS", "HUMMING", "PANTING",
    "BREATHING", "SNORES", "WIND", "RAIN", "ENGINE", "HORN", "BELL", "STATIC", "NOISE",
}  # fmt: skip


@dataclass
class Turn:
    """One speaker's words within a cue; `speaker` None where the cue does not say."""

    speaker: str | None
    parts: list[str]
    """The turn's words, line by line (joined once: a long cue stays linear)."""
    hints: list[str] = field(default_factory=list)
    new_turn: bool = False
    """Opened by a dialogue dash or '>>': a change of speaker even without a name."""

    @property
    def text(self) -> str:
        return " ".join(self.parts)


@dataclass
class CueReading:
    turns: list[Turn]
    descriptions: list[str]


def _is_name(label: str) -> bool:
    """A short label that reads as a name in any cased script: 'John', 'JOHN', 'Иван',
    'Dr. Ruth', 'SPEAKER_00'; not a sentence or a lower-case word."""
    name, _ = split_extension(label)
    name = name.strip()
    if not name or _SPEAKER_ID.match(name):
        return bool(name)
    words = name.split()
    if len(words) > 4 or not any(ch.isalpha() for ch in name):
        return False
    if any(w.strip(".'-").upper() in _SOUND_WORDS for w in words):
        return False
    for w in words:
        first = next((ch for ch in w if ch.isalpha()), "")
        if first and first.islower():
            return False
    return all(ch.isalnum() or ch in " .'-_’&/" for ch in name)


def _caseless(label: str) -> bool:
    return any(ch.isalpha() for ch in label) and not any(ch.isupper() or ch.islower() for ch in label)


def clean_text(raw: str) -> str:
    """ASS/SSA line breaks and override blocks, HTML tags and entities out; '\\n' kept."""
    text = raw.replace("\\N", "\n").replace("\\n", "\n").replace("\\h", " ")
    text = _BRACES.sub("", text)
    return html.unescape(_TAG.sub("", text))


def _voice_segments(raw: str) -> list[tuple[str | None, str]]:
    """Split a cue at each `<v Name>` span: (voice name or None, text)."""
    segments: list[tuple[str | None, str]] = []
    pos, voice = 0, None
    for m in _VOICE.finditer(raw):
        segments.append((voice, raw[pos : m.start()]))
        voice, pos = m.group(1).strip(), m.end()
    segments.append((voice, raw[pos:]))
    return [(v, t) for v, t in segments if t.strip() or v]


def _label(line: str, trusted: set[str] | None) -> tuple[str | None, str, bool]:
    """Take a leading speaker label off one line: (name or None, rest, '>>' marker)."""
    marker = line.startswith(">>")
    if marker:
        line = line[2:].lstrip()
    if line.startswith("["):
        end = line.find("]")
        if 0 < end <= 60 and line[end + 1 :].strip() and _is_name(line[1:end]):
            return line[1:end].strip(), line[end + 1 :].strip(), marker
    m = _LABEL.match(line[:100])  # a label is short: never scan a long line's whitespace
    if m and _colon_label_ok(m.group(1).strip(), trusted):
        return m.group(1).strip(), line[m.end() :], marker
    return None, line, marker


def _colon_label_ok(label: str, trusted: set[str] | None) -> bool:
    """'JOHN:', 'SPEAKER_00:', '李雷：' always; a mixed-case 'John:' only where the file uses
    it as a label at least twice (so a one-off 'Thus: what we call' stays speech)."""
    if _caseless(label):
        return len(label) <= 12
    if not _is_name(label):
        return False
    name, _ = split_extension(label)
    if name.isupper() or _SPEAKER_ID.match(name):
        return True
    return trusted is None or normalise_role(name) in trusted


def trusted_labels(raw_texts: list[str]) -> set[str]:
    """Mixed-case 'Name:' labels that open a line at least twice in the whole file."""
    counts: Counter[str] = Counter()
    for raw in raw_texts:
        for line in clean_text(raw).split("\n"):
            m = _LABEL.match(line.strip().lstrip(">-–— ")[:100])
            if m and _is_name(m.group(1).strip()):
                counts[normalise_role(m.group(1))] += 1
    return {name for name, n in counts.items() if n >= 2}


def _descriptions(text: str, found: list[str], hints: list[str]) -> str:
    """Take sound descriptions out of spoken text; one at the very start is also a hint."""
    out: list[str] = []
    pos, spoken = 0, False
    for m in _DESCRIPTION.finditer(text):
        out.append(text[pos : m.start()])
        spoken = spoken or bool(out[-1].strip())
        body = m.group(0)[1:-1].strip()
        if body:
            found.append(body)
            if not spoken and m.group(0).startswith("("):
                hints.append(body)
        pos = m.end()
    out.append(text[pos:])
    return " ".join("".join(out).split())


def _lines_to_turns(voice: str | None, text: str, found: list[str], trusted: set[str] | None) -> list[Turn]:
    turns: list[Turn] = []
    for raw_line in text.split("\n"):
        line = raw_line.strip()
        if not line:
            continue
        if any(mark in line for mark in _MUSIC[:3]) or (line.startswith("#") and line.endswith("#")):
            found.append(line)  # sung or background music: never spoken
            continue
        dash = line[0] in "-–—"
        pieces = _DASH.split(line[1:].lstrip() if dash else line)
        for k, piece in enumerate(pieces):
            name, rest, marker = _label(piece.strip(), trusted)
            new = dash or k > 0 or marker
            hints: list[str] = []
            if name:
                name, ext = split_extension(name)
                hints.extend(ext)
            words = _descriptions(rest, found, hints)
            if not words:
                continue
            if turns and not (new or name):
                turns[-1].parts.append(words)  # a wrapped line of the same turn
                continue
            turns.append(Turn(name or voice, [words], hints, new_turn=new))
    return turns


def read_cue(raw: str, trusted: set[str] | None = None) -> CueReading:
    """Turns and non-spoken descriptions of one cue's raw text (tags and all); `trusted`:
    the file's repeated mixed-case labels (`trusted_labels`), None to accept any."""
    found: list[str] = []
    turns: list[Turn] = []
    for voice, segment in _voice_segments(raw):
        for turn in _lines_to_turns(voice, clean_text(segment), found, trusted):
            turns.append(turn)
    return CueReading(turns, found)
