"""Delivery from a line's parentheticals: one table maps a hint (`(whispering)`, `(O.S.)`,
`(beat)`) to what each voice backend can do with it: rate, pitch, gain, espeak-ng's whisper
variant, a filter after synthesis (telephone, another room), a pause before the line.

The table lives here; a project overrides or adds entries (`use_table`). The voice changes
apply when a line is sent to its backend; filters and pauses apply to the voiced clip, in
the synthesis threads (never on the real-time path)."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from engine.core.errors import CastError
from engine.core.limits import clamp
from engine.core.types import Cue, Voice
from engine.synthesis.base import Mono, SynthRequest, Take, retimed
from engine.synthesis.effects import FILTERS


@dataclass(frozen=True)
class Delivery:
    """What one hint does to a line."""

    rate: float = 1.0
    """Speaking rate factor."""
    pitch: int = 0
    """Added to the role's pitch (0..100 scale)."""
    gain_db: float = 0.0
    whisper: bool = False
    """espeak-ng's whisper variant; other backends get the gain only."""
    filter: str = ""
    """'telephone', 'room' or '' (none)."""
    pause_s: float = 0.0
    """Silence before the line (`(beat)`, `(pause)`)."""

    def then(self, other: Delivery) -> Delivery:
        """Both hints at once (rates multiply, the rest adds; the later filter wins)."""
        return Delivery(self.rate * other.rate, self.pitch + other.pitch, self.gain_db + other.gain_db,
                        self.whisper or other.whisper, other.filter or self.filter,
                        self.pause_s + other.pause_s)  # fmt: skip


_WHISPER = Delivery(rate=0.92, gain_db=-8.0, whisper=True)
_SHOUT = Delivery(rate=1.1, pitch=12, gain_db=5.0)
DEFAULT_TABLE: dict[str, Delivery] = {
    "whispering": _WHISPER, "whispers": _WHISPER, "whisper": _WHISPER, "whispered": _WHISPER,
    "shouting": _SHOUT, "shouts": _SHOUT, "yelling": _SHOUT, "yells": _SHOUT, "screaming": _SHOUT,
    "softly": Delivery(rate=0.92, pitch=-3, gain_db=-4.0), "quietly": Delivery(rate=0.95, gain_db=-5.0),
    "angrily": Delivery(rate=1.08, pitch=5, gain_db=3.0), "angry": Delivery(rate=1.08, pitch=5, gain_db=3.0),
    "sadly": Delivery(rate=0.85, pitch=-6, gain_db=-2.0), "excited": Delivery(rate=1.12, pitch=8),
    "on phone": Delivery(filter="telephone"), "on the phone": Delivery(filter="telephone"),
    "into phone": Delivery(filter="telephone"), "filtered": Delivery(filter="telephone"),
    "over radio": Delivery(filter="telephone"), "into the radio": Delivery(filter="telephone"),
    "os": Delivery(filter="room", gain_db=-3.0), "o s": Delivery(filter="room", gain_db=-3.0),
    "off": Delivery(filter="room", gain_db=-3.0), "vo": Delivery(),
    "beat": Delivery(pause_s=0.6), "pause": Delivery(pause_s=1.0), "long pause": Delivery(pause_s=2.0),
}  # fmt: skip
"""Hint (lower case, letters and spaces only: `(O.S.)` is 'os') -> delivery."""


def hint_key(hint: str) -> str:
    """'(On Phone)', 'O.S.', 'whispering:' -> 'on phone', 'os', 'whispering'."""
    return " ".join(re.sub(r"[^a-z ]", "", hint.lower().replace("-", " ")).split())


def parse_table(data: object, where: str = "delivery") -> dict[str, Delivery]:
    """A project's `[delivery]` table: hint -> {rate, pitch, gain_db, whisper, filter, pause_s}."""
    if not isinstance(data, Mapping):
        raise CastError(f"{where}: expected a table of hint = {{rate, pitch, gain_db, ...}}")
    known = {f.name: f.type for f in dataclasses.fields(Delivery)}
    out: dict[str, Delivery] = {}
    for hint, entry in data.items():
        at = f"{where}, hint {hint!r}"
        if not isinstance(entry, Mapping):
            raise CastError(f"{at}: expected a table of settings ({', '.join(known)})")
        unknown = set(entry) - set(known)
        if unknown:
            raise CastError(
                f"{at}: unknown setting(s) {', '.join(sorted(unknown))}; expected {', '.join(known)}"
            )
        out[hint_key(str(hint))] = _checked(Delivery(**dict(entry)), at)
    return out


def _checked(d: Delivery, where: str) -> Delivery:
    numbers = {"rate": (0.25, 4.0), "pitch": (-100, 100), "gain_db": (-60.0, 12.0), "pause_s": (0.0, 30.0)}
    for name, (lo, hi) in numbers.items():
        value = getattr(d, name)
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            raise CastError(f"{where}: {name} = {value!r}; expected a number from {lo} to {hi}")
    if not isinstance(d.whisper, bool):
        raise CastError(f"{where}: whisper = {d.whisper!r}; expected true or false")
    if d.filter not in ("", *FILTERS):
        raise CastError(f"{where}: filter = {d.filter!r}; expected one of {', '.join(FILTERS)} or ''")
    return d


_lock = threading.Lock()
_table: dict[str, Delivery] = dict(DEFAULT_TABLE)


def use_table(overrides: Mapping[str, Delivery]) -> None:
    """The default table with the open project's entries added or replacing defaults."""
    global _table
    with _lock:
        _table = {**DEFAULT_TABLE, **overrides}


def delivery_for(hints: Iterable[str]) -> Delivery:
    """Every known hint of a line, combined; unknown hints ('beer raised') do nothing."""
    with _lock:
        table = _table
    out = Delivery()
    for hint in hints:
        found = table.get(hint_key(hint))
        if found is not None:
            out = out.then(found)
    return out


def delivered_request(cue: Cue, voice: Voice) -> SynthRequest:
    """What a cue asks its backend for: its text in its role's `voice`, delivered as its
    hints say (a render's lines and its passes ahead alike: one take cache key)."""
    return SynthRequest(cue.text, delivered_voice(voice, cue.hints), cue.index, cue.role)


def delivered_voice(voice: Voice, hints: Iterable[str]) -> Voice:
    """The role's voice for a line with these hints: rate, pitch; whisper on espeak-ng."""
    d = delivery_for(hints)
    if d == Delivery():
        return voice
    voice_id = voice.voice_id
    if d.whisper and voice.backend == "espeak":
        voice_id = voice_id.split("+")[0] + "+whisper"
    return dataclasses.replace(
        voice,
        voice_id=voice_id,
        rate_wpm=int(clamp("rate_wpm", voice.rate_wpm * d.rate)),
        pitch=int(clamp("pitch", voice.pitch + d.pitch)),
    )


def delivered_audio(audio: Mono, hints: Iterable[str], sample_rate_hz: int, first: bool = True) -> Mono:
    """The voiced clip with the hints' gain and filter, and (on a line's first chunk) its
    pause before."""
    d = delivery_for(hints)
    if d.gain_db:
        audio = (audio * np.float32(10 ** (d.gain_db / 20))).astype(np.float32)
    if d.filter:
        audio = FILTERS[d.filter](audio, sample_rate_hz)
    if d.pause_s > 0 and first:
        audio = np.concatenate([np.zeros(int(d.pause_s * sample_rate_hz), np.float32), audio])
    return audio


def delivered_take(take: Take, hints: Iterable[str], sample_rate_hz: int) -> Take:
    """`delivered_audio` of a take, its word times moved by the pause put before it."""
    audio = delivered_audio(take.audio, hints, sample_rate_hz)
    pause_s = max(0, len(audio) - len(take.audio)) / sample_rate_hz
    return Take(audio, retimed(take.words, shift_s=pause_s))
