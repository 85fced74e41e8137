"""Casting: which voice speaks each role, automatic casting, and the project file."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from engine.core.errors import CastError
from engine.core.limits import VOICE_LIMITS
from engine.core.types import Role, Script, Voice
from engine.script.common import normalise_role

_ACCENTS = ("en-us", "en", "en-gb-x-rp", "en-gb-scotland", "en-029", "en-us-nyc", "en-gb-x-gbclan")
_VARIANTS = {
    "m": ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "adam", "john", "david", "robert", "max"),
    "f": ("f1", "f2", "f3", "f4", "f5", "Annie", "belinda", "linda", "steph", "anika"),
}
_PITCHES = (38, 50, 62)


def _hash(name: str) -> int:
    # Stable across runs and machines (unlike hash()), so a role keeps its voice.
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")


def _candidates(gender: str) -> list[tuple[str, str]]:
    return [(a, v) for v in _VARIANTS[gender] for a in _ACCENTS]


def auto_voice(role: Role, taken: set[str]) -> Voice:
    """A voice for `role` chosen from its name's hash, distinct from the ids in `taken`."""
    h = _hash(role.name)
    gender = role.gender_hint or ("f" if h & 1 else "m")
    options = _candidates(gender)
    start = (h >> 1) % len(options)
    vid = ""
    for k in range(len(options)):
        accent, variant = options[(start + k) % len(options)]
        vid = f"{accent}+{variant}"
        if vid not in taken:
            break
    pitch = _PITCHES[(h >> 40) % len(_PITCHES)]
    pan = 0.0 if role.name in {"NARRATOR", "ANNOUNCER"} else ((h >> 20) % 9 - 4) / 10
    return Voice(backend="espeak", voice_id=vid, pitch=pitch, pan=pan)


BACKENDS = ("espeak", "kokoro")
"""Voice backends a role can be cast to; `kokoro:jf_alpha` picks one in a voice id."""


def validate_voice(voice: Voice, where: str) -> Voice:
    """Raise `CastError` naming `where` if a value is out of range; a `backend:` prefix on
    the voice id moves into `backend`."""
    prefix, colon, rest = voice.voice_id.partition(":")
    if colon:
        voice = replace(voice, backend=prefix, voice_id=rest.strip())
    if voice.backend not in BACKENDS:
        raise CastError(
            f"{where}: unknown voice backend {voice.backend!r}; expected one of {', '.join(BACKENDS)}"
        )
    for name, (lo, hi) in VOICE_LIMITS.items():
        value = getattr(voice, name)
        if not isinstance(value, int | float) or not math.isfinite(value) or not lo <= value <= hi:
            raise CastError(f"{where}: {name} = {value!r}; expected a number from {lo} to {hi}")
    if not voice.voice_id or not voice.backend:
        raise CastError(f"{where}: a voice needs a backend and a voice_id")
    return voice


def voice_from_dict(data: Mapping[str, Any], where: str) -> Voice:
    known = {f.name for f in fields(Voice)}
    unknown = set(data) - known
    if unknown:
        raise CastError(f"{where}: unknown setting(s) {', '.join(sorted(unknown))}")
    try:
        voice = Voice(**dict(data))
    except TypeError as exc:
        raise CastError(f"{where}: {exc}") from exc
    return validate_voice(voice, where)


@dataclass
class Cast:
    """Role name -> Voice; roles not yet cast get an automatic voice on demand."""

    voices: dict[str, Voice] = field(default_factory=dict)

    @classmethod
    def auto(cls, script: Script, keep: Mapping[str, Voice] | None = None) -> Cast:
        """Cast every role of `script`, keeping the voices in `keep` (a saved cast)."""
        cast = cls(dict(keep or {}))
        cast.fill(script.roles.values())
        return cast

    def fill(self, roles: Iterable[Role]) -> None:
        taken = {v.voice_id for v in self.voices.values()}
        for role in roles:
            if role.name not in self.voices:
                voice = auto_voice(role, taken)
                self.voices[role.name] = voice
                taken.add(voice.voice_id)

    def __getitem__(self, role: str) -> Voice:
        if role not in self.voices:
            self.fill([Role(role, role)])
        return self.voices[role]

    def set(self, role: str, **changes: Any) -> Voice:
        voice = validate_voice(replace(self[role], **changes), f"role {role}")
        self.voices[role] = voice
        return voice

    def to_dict(self) -> dict[str, Any]:
        return {role: v.to_dict() for role, v in sorted(self.voices.items())}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "cast") -> Cast:
        if not isinstance(data, Mapping):
            raise CastError(f"{where}: expected a table of roles")
        voices = {}
        for role, entry in data.items():
            if not isinstance(entry, Mapping):
                raise CastError(f"{where}: role {role!r} must be a table of voice settings")
            voices[normalise_role(str(role))] = voice_from_dict(entry, f"{where}, role {role}")
        return cls(voices)


def save_project(
    path: str | Path, script_path: str, cast: Cast, edits: Mapping[int, str] | None = None
) -> None:
    """Write the project file (JSON): script path, cast and line edits. Atomic replace."""
    path = Path(path)
    data = {
        "troupe_project": 1,
        "script": script_path,
        "cast": cast.to_dict(),
        "edits": {str(k): v for k, v in sorted((edits or {}).items())},
    }
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)  # never leave a half-written project behind
