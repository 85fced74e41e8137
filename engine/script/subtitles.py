"""Subtitle importers: SRT, WebVTT, ASS/SSA, SBV and MicroDVD become timed lines.

SRT, WebVTT and SBV are read here, one pass over the lines that keeps every source line
number: a timing line opens a cue (a number just before it is its identifier), so a cue
number where words should be, a cue with no timing line or a malformed timing line is an
error naming the line, never spoken; `-->` inside a cue's words is words; text after a
stray blank line joins its cue with a warning in the import report; a zero-length cue is
skipped (reported). WebVTT header lines (`Kind:`, `Language:`), NOTE, STYLE and REGION
blocks are not speech. pysubs2 reads ASS/SSA and MicroDVD; every ASS/SSA event is
classified as dialogue or not (karaoke tags and effects, drawings, comments, and each
style by its name and use: see `_classify_styles`), and the director may choose the
dialogue styles (`ImportOptions.styles`).

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
from dataclasses import dataclass, field
from pathlib import Path

import pysubs2
from pysubs2.formats.microdvd import MICRODVD_LINE

from engine.core.errors import NoDialogueStyle, ScriptError
from engine.core.timecode import format_srt_time
from engine.core.types import Script, StyleUse
from engine.script.common import ScriptBuilder, normalise_role
from engine.script.speakers import Turn, clean_text, read_cue, trusted_labels

DEFAULT_SPEAKER = "NARRATOR"
SECOND_VOICE = "VOICE 2"
_SRT_TIME = r"(\d{1,2}):(\d{1,2}):(\d{1,2})[,.](\d{1,3})"
_VTT_TIME = r"(?:(\d{1,4}):)?(\d{2}):(\d{2})\.(\d{2,3})"
_SBV_TIME = r"(\d{1,2}):(\d{2}):(\d{2})\.(\d{1,3})"
_TIMING = {
    "srt": re.compile(rf"^\s*{_SRT_TIME}\s*-->\s*{_SRT_TIME}(?:\s.*)?$"),
    "vtt": re.compile(rf"^\s*{_VTT_TIME}\s*-->\s*{_VTT_TIME}(?:\s.*)?$"),
    "sbv": re.compile(rf"^\s*{_SBV_TIME}\s*,\s*{_SBV_TIME}\s*$"),
}
_SBV_LIKE = re.compile(r"^\s*\d{1,2}:\d{2}")
"""An SBV line at a cue's start that tries to be a timing line."""
_ARROW = re.compile(r"-->|\d\s*-{1,2}>")
_EXPECTED = {
    "srt": "'HH:MM:SS,mmm --> HH:MM:SS,mmm'",
    "vtt": "'[HH:]MM:SS.mmm --> [HH:]MM:SS.mmm'",
    "sbv": "'H:MM:SS.mmm,H:MM:SS.mmm'",
}
_WORD_TIMING = re.compile(r"<\d{2}:\d{2}[:.]|<c[.>]")
_BRACES = re.compile(r"\{[^{}]*\}")
_DRAWING = re.compile(r"\{[^{}]*\\p[1-9]")
_KARAOKE = re.compile(r"\{[^{}]*\\(?:k|K|kf|ko)\d")
_POSITIONED = re.compile(r"\{[^{}]*\\(?:pos|move|org)\(")
_SENTENCE_END = tuple(".?!…\"'”»)]♪-—")
_TIMED = ("srt", "vtt", "sbv")
_NOT_SPEECH_EFFECTS = ("karaoke", "kara", "fx", "template", "code", "banner", "scroll")
_NOT_SPEECH_STYLE_WORDS = {
    "sign", "signs", "song", "songs", "karaoke", "kara", "lyric", "lyrics", "op", "ed", "opening",
    "ending", "title", "titles", "romaji", "kanji", "translation", "tl", "note", "notes", "credit",
    "credits", "staff", "logo", "insert", "eyecatch", "preview", "screen", "text", "caption",
}  # fmt: skip
_DIALOGUE_STYLE_WORDS = {
    "default", "main", "dialogue", "dialog", "italic", "italics", "alt", "top", "flashback",
    "narrator", "narration", "thought", "thoughts", "overlap", "speech", "internal", "phone",
}  # fmt: skip


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
    style: str = ""
    effect: str = ""


@dataclass
class _Loaded:
    events: list[_Event]
    notes: list[tuple[str, int, str, str]] = field(default_factory=list)
    """(kind, line, message, reason) for the import report."""
    styles: list[StyleUse] = field(default_factory=list)


def _seconds(h: str | None, m: str, s: str, frac: str) -> float:
    return int(h or 0) * 3600 + int(m) * 60 + int(s) + int(frac.ljust(3, "0")[:3]) / 1000


def _read_timed(path: Path, text: str, fmt: str) -> _Loaded:
    """SRT, WebVTT or SBV cues with the line of each timing line; one pass."""
    lines = text.split("\n")
    timing = _TIMING[fmt]
    out = _Loaded([])
    k = 0
    if fmt == "vtt":
        if not lines[0].lstrip("\ufeff").startswith("WEBVTT"):
            raise ScriptError(path, "a WebVTT file must start with 'WEBVTT'", 1)
        while k < len(lines) and lines[k].strip() and "-->" not in lines[k]:
            k += 1  # header lines: 'Kind: captions', 'Language: en'
    current: _Event | None = None
    parts: list[str] = []
    at_start, skipping, after_blank = True, False, False

    def close() -> None:
        if current is not None:
            current.text = "\n".join(parts)
            out.events.append(current)

    for n in range(k, len(lines)):
        line = lines[n]
        stripped = line.strip()
        if not stripped:
            at_start, skipping = True, False
            after_blank = current is not None
            continue
        if skipping:
            continue
        if fmt == "vtt" and at_start and (line.split(None, 1) or [""])[0] in ("NOTE", "STYLE", "REGION"):
            skipping = True
            continue
        m = timing.match(line)
        if m:
            close()
            g = m.groups()
            start, end = _seconds(*g[:4]), _seconds(*g[4:])
            current, parts = _Event(start, end, "", n + 1, "", 1), []
            at_start = after_blank = False
            continue
        following = lines[n + 1] if n + 1 < len(lines) else ""
        if fmt != "sbv" and (at_start or stripped.isdigit()) and timing.match(following):
            continue  # a cue identifier
        if fmt == "srt" and at_start and stripped.isdigit() and _ARROW.search(following):
            continue  # an identifier; the timing line after it is checked next
        attempt = _SBV_LIKE.search(line) if fmt == "sbv" else _ARROW.search(line)
        if at_start and attempt:
            raise ScriptError(path, f"bad timing {stripped[:60]!r}; expected {_EXPECTED[fmt]}", n + 1)
        if fmt == "srt" and at_start and stripped.isdigit():
            raise ScriptError(
                path,
                f"cue {stripped[:12]} has no timing line; expected {_EXPECTED[fmt]} on line {n + 2}",
                n + 2,
            )
        if current is None:
            what = f"text before the first timing line: {stripped[:60]!r}"
            out.notes.append(("skipped", n + 1, what, "no timing"))
            at_start = False
            continue
        if after_blank:
            out.notes.append(("warning", n + 1, f"text after a blank line joined to the cue timed at line "
                              f"{current.line}: {stripped[:60]!r}", ""))  # fmt: skip
            after_blank = False
        at_start = False
        if fmt == "sbv":
            line = line.replace("[br]", "\n").replace("[BR]", "\n")
        if not parts:
            current.text_offset = n + 1 - current.line  # where the words start
        parts.append(line)  # word timings go with the markup (`common.TAG`)
    close()
    return out


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


def _load(path: Path, text: str, fmt: str, styles: frozenset[str] | None) -> _Loaded:
    if fmt in _TIMED:
        return _read_timed(path, text, fmt)
    if fmt in ("ass", "ssa"):
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
        where = _ass_bad_line(text) if parser != "microdvd" else None
        raise ScriptError(path, f"not a readable {fmt.upper()} file ({str(exc)[:80]})", where) from None
    if len(subs.events) != len(lines):
        lines = [0] * len(subs.events)  # the library skipped or added a line: no numbers
    events = [
        _Event(ev.start / 1000, ev.end / 1000, ev.text, n, ev.name.strip(), 0, ev.style, ev.effect.strip())
        for ev, n in zip(subs.events, lines, strict=True)
    ]
    out = _Loaded([])
    if parser == "microdvd":
        out.events = events
        return out
    comments = [ev for ev, raw in zip(events, subs.events, strict=True) if raw.type != "Dialogue"]
    for ev in comments:
        out.notes.append(("skipped", ev.line, "a comment line", "comment"))
    spoken = [ev for ev, raw in zip(events, subs.events, strict=True) if raw.type == "Dialogue"]
    dialogue_styles, out.styles = _classify_styles(spoken, styles)
    for ev in spoken:
        why = _not_speech(ev, dialogue_styles)
        if why:
            out.notes.append(("skipped", ev.line, f"{ev.style}: {clean_text(ev.text)[:50]!r}", why))
        else:
            out.events.append(ev)
    return out


def _not_speech(ev: _Event, dialogue_styles: set[str]) -> str:
    """Why an ASS/SSA event is not spoken ('' if it is)."""
    if _DRAWING.search(ev.text):
        return "drawing"
    if _KARAOKE.search(ev.text):
        return "karaoke"
    effect = ev.effect.lower()
    if any(effect.startswith(e) or e in effect.split(";")[0].split() for e in _NOT_SPEECH_EFFECTS):
        return "karaoke" if "kara" in effect or "template" in effect or "fx" in effect else "effect"
    if ev.style.casefold() not in dialogue_styles:
        return "not a dialogue style"
    return ""


def _style_words(name: str) -> set[str]:
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)  # 'SignTitle' -> 'Sign Title'
    return {w for w in re.split(r"[^a-z]+", spaced.lower()) if w}


def _classify_styles(events: list[_Event], chosen: frozenset[str] | None) -> tuple[set[str], list[StyleUse]]:
    """Which styles are dialogue: the director's choice if made; else by the style's name
    ('Default', 'Main', 'Italics' are; 'Sign', 'OP', 'Title1', 'Romaji' are not) and, for
    other names, by use (mostly karaoke, or mostly placed with \\pos/\\move and no speaker
    names: signs)."""
    by_style: dict[str, list[_Event]] = {}
    for ev in events:
        by_style.setdefault(ev.style, []).append(ev)
    dialogue: set[str] = set()
    uses: list[StyleUse] = []
    chosen_keys = {c.casefold() for c in chosen} if chosen is not None else None
    for name, evs in by_style.items():
        n = len(evs)
        karaoke = sum(1 for e in evs if _KARAOKE.search(e.text) or "kara" in e.effect.lower())
        placed = sum(1 for e in evs if _POSITIONED.search(e.text))
        named = sum(1 for e in evs if e.actor)
        words = _style_words(name)
        if chosen_keys is not None:
            is_dialogue, reason = name.casefold() in chosen_keys, "chosen"
        elif karaoke * 2 > n:
            is_dialogue, reason = False, f"karaoke ({karaoke} of {n} lines)"
        elif named * 2 > n:
            is_dialogue, reason = True, f"speaker names ({named} of {n} lines)"
        elif words & _DIALOGUE_STYLE_WORDS:
            is_dialogue, reason = True, "its name"
        elif words & _NOT_SPEECH_STYLE_WORDS:
            is_dialogue, reason = False, f"its name ('{sorted(words & _NOT_SPEECH_STYLE_WORDS)[0]}')"
        elif placed * 2 > n and named * 2 < n:
            is_dialogue, reason = False, f"placed on screen ({placed} of {n} lines): signs"
        else:
            is_dialogue, reason = True, "used like dialogue"
        if is_dialogue:
            dialogue.add(name.casefold())
        uses.append(StyleUse(name=name, events=n, dialogue=is_dialogue, reason=reason))
    return dialogue, uses


def _ass_bad_line(text: str) -> int | None:
    """The first event line pysubs2 cannot read: too few fields or a bad timestamp."""
    stamp = re.compile(r"^\s*\d{1,2}:\d{1,2}:\d{1,2}(?:[.:]\d{1,3})?\s*$")
    names = ["layer", "start", "end", "style", "name", "marginl", "marginr", "marginv", "effect", "text"]
    for n, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if line.lower().startswith("format:") and "text" in line.lower():
            names = [f.strip().lower() for f in line.split(":", 1)[1].split(",")]
        if not line.startswith(("Dialogue:", "Comment:")):
            continue
        parts = line.split(":", 1)[1].split(",", max(0, len(names) - 1))
        if len(parts) < len(names):
            return n
        for key in ("start", "end"):
            if key in names and not stamp.match(parts[names.index(key)]):
                return n
    return None


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


def parse_subtitles(path: Path, text: str, fmt: str, styles: frozenset[str] | None = None) -> Script:
    """Parse a subtitle file: fmt is 'srt', 'vtt', 'ass', 'ssa', 'sbv' or 'microdvd';
    `styles`: the ASS/SSA styles to speak (None: classified)."""
    loaded = _load(path, text, fmt, styles)
    events = loaded.events
    _drop_rolled(events)
    builder = ScriptBuilder(path=path, format=fmt)
    for kind, line, message, reason in loaded.notes:
        builder.note(kind, line, message, reason)
    builder.styles.extend(loaded.styles)
    sticky = any(">>" in ev.text for ev in events)
    state = _Speakers(sticky)
    trusted = trusted_labels([ev.text for ev in events])
    pending: tuple[str, list[str]] | None = None
    for ev in events:
        if ev.end_s < ev.start_s:
            raise ScriptError(
                path,
                f"cue ends ({format_srt_time(ev.end_s)}) before it starts ({format_srt_time(ev.start_s)})",
                ev.line or None,
            )
        line = ev.line + ev.text_offset
        if ev.end_s == ev.start_s and clean_text(ev.text).strip():
            builder.note("skipped", line, f"a cue of no length at {format_srt_time(ev.start_s)}: "
                         f"{clean_text(ev.text).strip()[:50]!r}", "zero length")  # fmt: skip
            continue
        reading = read_cue(ev.text, trusted, pending)
        pending = (reading.pending, reading.pending_hints) if reading.pending else None
        for found in reading.descriptions:
            builder.annotate(found, line, ev.start_s, ev.end_s)
        for guess in reading.guesses:
            builder.note("guess", line, guess)
        _add_turns(builder, state, ev, reading.turns)
    if not builder.cues and any(n.reason == "not a dialogue style" for n in builder.notes):
        names = ", ".join(u.name for u in builder.styles)
        what = f"no dialogue style found among {names}; choose the dialogue styles"
        where = "(--styles, or the import report in the window)"
        raise NoDialogueStyle(path, f"{what} {where}", tuple(builder.styles))
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
