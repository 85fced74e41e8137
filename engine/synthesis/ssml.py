"""An SSML subset for the speech server: `<speak>`, `<break time strength>`, `<prosody rate
pitch volume>`, `<say-as interpret-as="characters">`, `<phoneme alphabet="ipa" ph>`, `<sub
alias>`, and `<p>`/`<s>` as plain containers.

Parsed with the standard library's expat parser; a document type declaration is refused, so
no entity is ever declared or expanded (only XML's five predefined ones). Bad SSML raises
`SsmlError` naming the element (the server answers 400 with its message)."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any
from xml.parsers import expat

from engine.core.errors import TroupeError
from engine.core.limits import clamp
from engine.core.types import Voice

MAX_BREAK_S = 10.0
_RATES = {"x-slow": 0.5, "slow": 0.75, "medium": 1.0, "default": 1.0, "fast": 1.25, "x-fast": 1.6}
_PITCHES = {"x-low": -12, "low": -6, "medium": 0, "default": 0, "high": 6, "x-high": 12}
_VOLUMES = {"silent": -60.0, "x-soft": -12.0, "soft": -6.0, "medium": 0.0, "default": 0.0,
            "loud": 4.0, "x-loud": 8.0}  # fmt: skip
_STRENGTHS = {"none": 0.0, "x-weak": 0.1, "weak": 0.25, "medium": 0.4, "strong": 0.75, "x-strong": 1.2}
_ALLOWED = {
    "speak": set(), "p": set(), "s": set(), "break": {"time", "strength"},
    "prosody": {"rate", "pitch", "volume"}, "say-as": {"interpret-as", "format", "detail"},
    "phoneme": {"alphabet", "ph"}, "sub": {"alias"},
}  # fmt: skip
_SPEAK_ATTRS = {"version", "xmlns", "xml:lang", "xmlns:xsi", "xsi:schemaLocation"}


class SsmlError(TroupeError):
    """SSML the server cannot read; the message names the element."""


@dataclass(frozen=True)
class Prosody:
    """Changes in force for a stretch of text (relative to the role's voice)."""

    rate: float = 1.0
    pitch_st: float = 0.0
    """Semitones up (or down)."""
    volume_db: float = 0.0


@dataclass(frozen=True)
class Speech:
    text: str
    prosody: Prosody = Prosody()


@dataclass(frozen=True)
class Pause:
    seconds: float


Part = Speech | Pause


def _rate(value: str, where: str) -> float:
    if value in _RATES:
        return _RATES[value]
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", value)
    if m and 20 <= float(m.group(1)) <= 400:
        return float(m.group(1)) / 100
    raise SsmlError(f"{where}: rate {value!r}; expected x-slow..x-fast or a percentage (20%-400%)")


def _pitch(value: str, where: str) -> float:
    if value in _PITCHES:
        return float(_PITCHES[value])
    m = re.fullmatch(r"([+-]\d+(?:\.\d+)?)(st|%)", value)
    if m:
        n = float(m.group(1))
        semis = n if m.group(2) == "st" else 12 * math.log2(max(0.05, 1 + n / 100))
        if -24 <= semis <= 24:
            return semis
    raise SsmlError(f"{where}: pitch {value!r}; expected x-low..x-high, +Nst or +N%")


def _volume(value: str, where: str) -> float:
    if value in _VOLUMES:
        return _VOLUMES[value]
    m = re.fullmatch(r"([+-]\d+(?:\.\d+)?)dB", value)
    if m and -60 <= float(m.group(1)) <= 12:
        return float(m.group(1))
    raise SsmlError(f"{where}: volume {value!r}; expected silent..x-loud or +NdB (-60 to +12)")


def _break_s(attrs: dict[str, str], where: str) -> float:
    if "time" in attrs:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s)", attrs["time"].strip())
        if not m:
            raise SsmlError(f"{where}: time {attrs['time']!r}; expected e.g. 500ms or 1.5s")
        seconds = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
        if seconds > MAX_BREAK_S:
            raise SsmlError(f"{where}: time {attrs['time']!r}; at most {MAX_BREAK_S:g}s")
        return seconds
    strength = attrs.get("strength", "medium")
    if strength not in _STRENGTHS:
        raise SsmlError(f"{where}: strength {strength!r}; expected one of {', '.join(_STRENGTHS)}")
    return _STRENGTHS[strength]


class _Reader:
    """Expat callbacks building the parts list."""

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.stack: list[tuple[str, Prosody, dict[str, str]]] = []
        self.skip = 0
        """Inside <sub> or <phoneme>: the text is replaced, not spoken."""

    def start(self, name: str, attrs: dict[str, str]) -> None:
        where = f"<{name}>"
        if name not in _ALLOWED:
            raise SsmlError(f"{where}: not supported; expected one of {', '.join(sorted(_ALLOWED))}")
        if not self.stack and name != "speak":
            raise SsmlError(f"{where}: SSML starts with <speak>")
        if self.stack and name == "speak":
            raise SsmlError(f"{where}: <speak> inside <speak>")
        extra = set(attrs) - _ALLOWED[name] - (_SPEAK_ATTRS if name == "speak" else set())
        if extra:
            raise SsmlError(f"{where}: unknown attribute(s) {', '.join(sorted(extra))}")
        prosody = self.stack[-1][1] if self.stack else Prosody()
        if name == "prosody":
            prosody = Prosody(
                prosody.rate * (_rate(attrs["rate"], where) if "rate" in attrs else 1.0),
                prosody.pitch_st + (_pitch(attrs["pitch"], where) if "pitch" in attrs else 0.0),
                prosody.volume_db + (_volume(attrs["volume"], where) if "volume" in attrs else 0.0),
            )
        elif name == "break":
            self.parts.append(Pause(_break_s(attrs, where)))
        elif name == "sub":
            if not attrs.get("alias", "").strip():
                raise SsmlError(f"{where}: needs an alias")
            self.parts.append(Speech(attrs["alias"], prosody))
        elif name == "phoneme":
            if attrs.get("alphabet", "ipa") != "ipa" or not attrs.get("ph", "").strip():
                raise SsmlError(f'{where}: needs alphabet="ipa" and a ph')
        elif name == "say-as" and attrs.get("interpret-as") not in ("characters", "spell-out"):
            raise SsmlError(f"{where}: interpret-as {attrs.get('interpret-as')!r}; expected characters")
        self.stack.append((name, prosody, attrs))
        self.skip += name in ("sub", "phoneme")

    def end(self, name: str) -> None:
        _, prosody, attrs = self.stack.pop()
        self.skip -= name in ("sub", "phoneme")
        if name == "phoneme":
            shown = attrs.get("_text", "").strip() or "word"
            self.parts.append(Speech(f"[{shown}](/{attrs['ph'].strip().strip('/')}/)", prosody))

    def text(self, data: str) -> None:
        if not self.stack or not data:
            return
        name, prosody, attrs = self.stack[-1]
        if name == "phoneme":
            attrs["_text"] = attrs.get("_text", "") + data
            return
        if self.skip:
            return
        if name == "say-as":
            data = " ".join(ch for ch in data if not ch.isspace())
        self.parts.append(Speech(data, prosody))


def _refuse_doctype(*_args: Any) -> None:
    raise SsmlError("<!DOCTYPE>: not allowed in SSML (no entity declarations)")


def parse(document: str) -> list[Part]:
    """The document as speech and pauses in order (adjacent speech of one prosody merged)."""
    reader = _Reader()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_doctype
    parser.EntityDeclHandler = _refuse_doctype
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.text
    try:
        parser.Parse(document, True)
    except expat.ExpatError as exc:
        raise SsmlError(
            f"line {exc.lineno}: not well-formed SSML ({expat.errors.messages[exc.code]})"
        ) from exc
    return _merge(reader.parts)


def _merge(parts: list[Part]) -> list[Part]:
    out: list[Part] = []
    for p in parts:
        last = out[-1] if out else None
        if isinstance(p, Speech) and isinstance(last, Speech) and last.prosody == p.prosody:
            out[-1] = Speech(last.text + p.text, p.prosody)
        else:
            out.append(p)
    return [
        dataclasses.replace(p, text=" ".join(p.text.split())) if isinstance(p, Speech) else p
        for p in out
        if not isinstance(p, Speech) or p.text.strip()
    ]


_SSML_START = re.compile(r"\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<speak[\s>/]", re.DOTALL)
"""A `<speak>` root, after an XML declaration and comments if any."""


def looks_like_ssml(text: str) -> bool:
    """A document whose root is `<speak>` (an XML declaration and comments before it are
    fine: editors and SSML tools write them), not text that mentions one."""
    return _SSML_START.match(text) is not None


def voice_for(voice: Voice, prosody: Prosody) -> Voice:
    """The role's voice under `prosody` (rate and pitch; volume is `gain_db`, for the caller)."""
    rate = int(clamp("rate_wpm", voice.rate_wpm * prosody.rate))
    pitch = int(clamp("pitch", voice.pitch + prosody.pitch_st * 50 / 6))
    return dataclasses.replace(voice, rate_wpm=rate, pitch=pitch)
