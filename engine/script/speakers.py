"""Who speaks a subtitle cue: speaker labels, dialogue dashes and sound descriptions.

A cue's text becomes turns (speaker or None, words, delivery hints) plus descriptions that
are never spoken. Recognised labels, in any script: WebVTT voice spans `<v Name>` (several
in one cue), `[NAME]`, `Name:` / `NAME (V.O.):`, `>> NAME:` and diarisation output
`SPEAKER_00:`; a label alone on its line (`[Victoria]`, `MARY:`) names who says the next
line; a qualified label (`[young Alba]`, `[man]`) names the speaker with a hint (read by
`engine.script.sdh`, and reported as a guess). A dialogue dash (`-` opening a line, or
after a finished sentence) starts a new turn. Parentheses (ASCII or full-width) other than
a lower-case aside inside a sentence, lower-case brackets (`[laughs]`, `[ríen]`), sound
words (`[GLASS SHATTERS]`), sign labels (`WARNING: do not enter.`) and lines with music
notes are descriptions: kept for the timeline as annotations, never spoken, never a role.
Every step is one linear pass.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field

from engine.script.common import TAG, normalise_role, split_extension
from engine.script.sdh import LabelReading, read_label, sound_word, word_set

_VOICE = re.compile(r"<v(?:\.[^\s>]{0,40})?\s{1,4}([^<>]{1,60})>|</v\s*>")
_BRACES = re.compile(r"\{[^{}]*\}")
_DASH = re.compile(r"(?<=[.?!…\"'”»])\s+[-–—]\s+")
_LABEL = re.compile(r"^([^\s:：][^:：]{0,40}?)\s*(?::\s+|：\s*)(?=\S)")
_ALONE = re.compile(r"^([^\s:：\[\]][^:：\[\]]{0,40}?)\s*[:：]$")
_DESCRIPTION = re.compile(r"\[[^\[\]]{0,80}\]|\([^()]{0,80}\)|（[^（）]{0,80}）|#[^#\n]{1,40}#")
_WORD_AFTER = re.compile(r"\s*[^\W\d_]")
_NOT_NAME_WORDS = word_set(
    "A AN THE AND OR BUT IS ARE WAS WERE BE I YOU HE SHE IT WE THEY THIS THAT THESE THOSE TO OF IN "
    "ON AT FOR WITH MY YOUR HIS HER OUR THEIR NOT NO SO IF THEN HERE THERE WHAT WHO HOW WHY"
)
"""Words of a sentence, never of a speaker label alone on its line ('AND THE WINNER IS:')."""
_NOT_ASIDE_FIRST = word_set("in on at to into onto over under from with without by via through")
_SPEAKER_ID = re.compile(r"^SPEAKER[_ ]?\d{1,3}$", re.IGNORECASE)
_MUSIC = ("♪", "♫", "♬", "#")


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
    guesses: list[str] = field(default_factory=list)
    """Readings that may be wrong, with their evidence (for the import report)."""
    pending: str | None = None
    """A speaker label left alone on the cue's last line: it names the next cue's speaker."""
    pending_hints: list[str] = field(default_factory=list)


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
    if sound_word(name):
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
    return html.unescape(TAG.sub("", text))


def _voice_segments(raw: str) -> list[tuple[str | None, str]]:
    """Split a cue at each `<v Name>` span (closed by `</v>` or the next span): (voice
    name or None, text)."""
    segments: list[tuple[str | None, str]] = []
    pos, voice = 0, None
    for m in _VOICE.finditer(raw):
        segments.append((voice, raw[pos : m.start()]))
        voice, pos = (m.group(1).strip() if m.group(1) else None), m.end()
    segments.append((voice, raw[pos:]))
    return [(v, t) for v, t in segments if t.strip() or v]


@dataclass
class _Label:
    name: str | None
    rest: str
    marker: bool
    hints: list[str] = field(default_factory=list)
    sign: bool = False


def _label(line: str, trusted: set[str] | None, guesses: list[str]) -> _Label:
    """Take a leading speaker label off one line."""
    marker = line.startswith(">>")
    if marker:
        line = line[2:].lstrip()
    if line.startswith("["):
        end = line.find("]")
        if 0 < end <= 60:
            who = _bracket_speaker(line[1:end].strip(), trusted, guesses)
            if who is not None:
                return _Label(who.name, line[end + 1 :].strip(), marker, [who.hint] if who.hint else [])
    if line.startswith("("):
        end = line.find(")")
        body, rest = line[1:end].strip(), line[end + 1 :].strip()
        if 0 < end <= 40 and rest and _paren_speaker(body) and _known(body, trusted):
            guesses.append(
                f"'({body})' read as speaker {normalise_role(body)} (a label of the file, in parentheses)"
            )
            return _Label(body, rest, marker)
    m = _LABEL.match(line[:100])  # a label is short: never scan a long line's whitespace
    if m and _colon_label_ok(m.group(1).strip(), trusted):
        label = m.group(1).strip()
        sign = read_label(split_extension(label)[0]).kind == "sign"
        if sign and normalise_role(label) not in (trusted or ()):
            guesses.append(f"{line[:60]!r} read as text on screen ('{label.lower()}' is a sign word)")
            return _Label(None, line, marker, sign=True)
        return _Label(label, line[m.end() :], marker)
    return _Label(None, line, marker)


def _paren_speaker(body: str) -> bool:
    """'(Alice) Hello!': an off-screen speaker as SDH writes one; a description such as
    '(whispering)', '(SIGHS)' or '(Angrily)' is not."""
    words = body.split()
    if not 0 < len(words) <= 2 or not all(w.istitle() for w in words):
        return False
    if any(w.lower().endswith("ly") and len(w) > 6 for w in words):
        return False  # an adverb: how the line is said
    reading = read_label(body)
    return _is_name(body) and reading.kind == "speaker" and not reading.why


def _bracket_speaker(body: str, trusted: set[str] | None, guesses: list[str]) -> LabelReading | None:
    """'[ANN]', '[Victoria]', '[young Alba]', '[man]': who speaks; None for a sound."""
    if not body:
        return None
    if _is_name(body):
        reading = read_label(split_extension(body)[0])
        if reading.kind == "speaker" or normalise_role(body) in (trusted or ()):
            return LabelReading("speaker", body, reading.hint)
        if reading.why:
            guesses.append(f"'[{body}]' read as a sound, not a speaker ({reading.why})")
        return None
    reading = read_label(body)
    if reading.kind == "speaker" and reading.why:
        hint = f" ({reading.hint})" if reading.hint else ""
        guesses.append(f"'[{body}]' read as speaker {normalise_role(reading.name)}{hint}: {reading.why}")
        return reading
    return None


def _alone(line: str, trusted: set[str] | None, guesses: list[str]) -> _Label | None:
    """A speaker label that is the whole line ('[Victoria]', 'MARY:'): it names the next line."""
    marker = line.startswith(">>")
    body = line[2:].strip() if marker else line
    if body.startswith("[") and body.endswith("]") and "[" not in body[1:]:
        who = _bracket_speaker(body[1:-1].strip(), trusted, guesses)
        if who is not None:
            return _Label(who.name, "", marker, [who.hint] if who.hint else [])
    m = _ALONE.match(body[:60])
    if m and _colon_label_ok(m.group(1).strip(), trusted) and read_label(m.group(1)).kind == "speaker":
        name, ext = split_extension(m.group(1).strip())
        words = name.upper().split()
        if _known(name, trusted) or (len(words) <= 2 and not set(words) & _NOT_NAME_WORDS):
            return _Label(name, "", marker, list(ext))
    return None


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


class Labels(set[str]):
    """The file's mixed-case 'Name:' labels that open a line at least twice (the set), and
    `known`: every name the file uses as a label before words ('NAME: ...', '[Name] ...',
    `<v Name>`), which a label alone on its line or a name in parentheses must be."""

    known: frozenset[str] = frozenset()


def trusted_labels(raw_texts: list[str]) -> Labels:
    """The file's labels (see `Labels`), one pass over every cue."""
    counts: Counter[str] = Counter()
    known: set[str] = set()
    for raw in raw_texts:
        known.update(normalise_role(m.group(1)) for m in _VOICE.finditer(raw) if m.group(1))
        for line in clean_text(raw).split("\n"):
            line = line.strip().lstrip(">-–— ")
            if line.startswith("["):
                end = line.find("]")
                if 0 < end <= 60 and line[end + 1 :].strip() and _is_name(line[1:end]):
                    known.add(normalise_role(line[1:end]))
            m = _LABEL.match(line[:100])
            if m and _is_name(m.group(1).strip()):
                counts[normalise_role(m.group(1))] += 1
                known.add(normalise_role(m.group(1)))
    labels = Labels(name for name, n in counts.items() if n >= 2)
    labels.known = frozenset(known)
    return labels


def _known(name: str, trusted: set[str] | None) -> bool:
    """`name` is a label the file uses elsewhere (None: accept any)."""
    return trusted is None or normalise_role(name) in getattr(trusted, "known", trusted)


def _descriptions(text: str, found: list[str], hints: list[str]) -> str:
    """Take sound descriptions out of spoken text; one at the very start is also a hint.
    A short lower-case aside in parentheses inside a sentence ('I was (fully) aware') is
    speech: its words stay, its parentheses go."""
    out: list[str] = []
    pos, spoken = 0, False
    for m in _DESCRIPTION.finditer(text):
        out.append(text[pos : m.start()])
        spoken = spoken or bool(out[-1].strip())
        body = m.group(0)[1:-1].strip()
        if m.group(0)[0] == "(" and spoken and _aside(body, text, m.end()):
            out.append(body)
        elif body:
            found.append(body)
            if not spoken and m.group(0)[0] in "(（":
                hints.append(body)
        pos = m.end()
    out.append(text[pos:])
    return " ".join("".join(out).split())


def _aside(body: str, text: str, after: int) -> bool:
    """'I was (fully) aware': a few lower-case words inside a sentence, not a description
    ('(sniffing)', '(in Spanish)', '(sighs)')."""
    words = body.split()
    return (
        0 < len(words) <= 4
        and body[:1].islower()
        and not sound_word(body)
        and words[0] not in _NOT_ASIDE_FIRST
        and not any(w.endswith(("ing", "s")) and len(w) > 4 for w in words)
        and _WORD_AFTER.match(text, after) is not None
    )


def _lines_to_turns(voice: str | None, text: str, reading: CueReading, trusted: set[str] | None) -> None:
    turns, found = reading.turns, reading.descriptions
    start = len(turns)
    for raw_line in text.split("\n"):
        line = raw_line.strip()
        if not line:
            continue
        if any(mark in line for mark in _MUSIC[:3]) or (line.startswith("#") and line.endswith("#")):
            found.append(line)  # sung or background music: never spoken
            continue
        alone = _alone(line, trusted, reading.guesses)
        if alone is not None:
            alone_name, ext = split_extension(alone.name or "")
            reading.pending, reading.pending_hints = alone_name or None, [*alone.hints, *ext]
            continue
        dash = line[0] in "-–—"
        pieces = _DASH.split(line[1:].lstrip() if dash else line)
        for k, piece in enumerate(pieces):
            label = _label(piece.strip(), trusted, reading.guesses)
            if label.sign:
                found.append(piece.strip())
                continue
            name: str | None = label.name
            new = dash or k > 0 or label.marker
            hints: list[str] = list(label.hints)
            if name:
                name, ext = split_extension(name)
                hints.extend(ext)
            elif reading.pending:
                name, new = reading.pending, True
                hints.extend(reading.pending_hints)
            words = _descriptions(label.rest, found, hints)
            if not words:
                continue
            reading.pending = None
            if len(turns) > start and not (new or name):
                turns[-1].parts.append(words)  # a wrapped line of the same turn
                continue
            turns.append(Turn(name or voice, [words], hints, new_turn=new))


def read_cue(
    raw: str, trusted: set[str] | None = None, pending: tuple[str, list[str]] | None = None
) -> CueReading:
    """Turns and non-spoken descriptions of one cue's raw text (tags and all); `trusted`:
    the file's labels (`trusted_labels`), None to accept any; `pending`: a label (and its
    hints) the previous cue left alone on its last line."""
    reading = CueReading([], [])
    if pending is not None:
        reading.pending, reading.pending_hints = pending[0], list(pending[1])
    for voice, segment in _voice_segments(raw):
        _lines_to_turns(voice, clean_text(segment), reading, trusted)
    return reading
