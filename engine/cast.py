"""Casting: which voice speaks each role, automatic casting, and the project file."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from engine.core.errors import CastError
from engine.core.limits import VOICE_LIMITS
from engine.core.types import Role, RoleKey, Script, Voice
from engine.gender import GENDER_WORDS, guess_all_with_evidence
from engine.script.common import normalise_role
from engine.synthesis.base import VoiceInfo
from engine.synthesis.effects import semitones_for

_ACCENTS = ("en-us", "en", "en-gb-x-rp", "en-gb-scotland", "en-029", "en-us-nyc", "en-gb-x-gbclan")
_VARIANTS = {
    "m": ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "adam", "john", "david", "robert", "max"),
    "f": ("f1", "f2", "f3", "f4", "f5", "Annie", "belinda", "linda", "steph", "anika"),
}
_PITCHES = (38, 50, 62)


def _hash(name: str) -> int:
    # Stable across runs and machines (unlike hash()), so a role keeps its voice.
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")


def _candidates(gender: str | None) -> list[tuple[str, str]]:
    variants = _VARIANTS[gender] if gender else _VARIANTS["m"] + _VARIANTS["f"]
    return [(a, v) for v in variants for a in _ACCENTS]


def auto_voice(role: Role, taken: set[str], gender: str | None = None) -> Voice:
    """An espeak-ng voice for `role` chosen from its name's hash, distinct from the ids in
    `taken`: of `gender` ('f', 'm'; else the script's hint), from either when unknown."""
    h = _hash(role.name)
    options = _candidates(gender or role.gender_hint)
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


BACKENDS = ("espeak", "kokoro", "piper")
"""Voice backends a role can be cast to; `kokoro:ada` or `piper:en_US-joe-medium` picks one
in a voice id."""
DISTINCT_ROLES = 12
"""The most-spoken roles that never share a voice while the natural voices go round."""
_SHARED_PITCH = (50, 42, 58, 36, 64, 30, 70)
"""Offsets (0..100, 50 = as voiced; a step is 0.12 semitone) that keep roles sharing one
natural voice apart: on a library voice of pitch and timbre together (another size of
speaker: the take resampled, no pitch shifter heard), else of pitch alone."""


MAX_SHARED_RESAMPLE_ST = 6.0
"""No sharer of a resampled voice is resampled further than this in all (the voices designed
on joe were judged up to +6 semitones; hugo, +5.0, would otherwise reach +7.4)."""


def shared_offsets(resampled_st: float) -> list[int]:
    """`_SHARED_PITCH` for a voice already resampled by `resampled_st`: the voice as designed
    first, then, for a voice resampled by at least the smallest sharing offset (8 steps,
    0.96 semitone), the sizes back toward its voicing before those further from it (a deep
    library voice's roles sized up before down: Whisper misheard takes resampled past 3
    semitones down); as given for the others. None that takes a sharer past
    `MAX_SHARED_RESAMPLE_ST` in all."""
    first, *rest = _SHARED_PITCH
    step = min(abs(semitones_for(o)) for o in rest)
    if abs(resampled_st) < step:
        return list(_SHARED_PITCH)
    within = [o for o in rest if abs(resampled_st + semitones_for(o)) <= MAX_SHARED_RESAMPLE_ST]
    return [first, *sorted(within, key=lambda o: ((o - 50) * resampled_st > 0, abs(o - 50)))]


def _english(natural: Sequence[VoiceInfo]) -> list[VoiceInfo]:
    english = [v for v in natural if v.language.lower().replace("_", "-").startswith("en")]
    return sorted(english, key=lambda v: (v.backend, v.voice_id))


def natural_voice(role: Role, gender: str | None, natural: Sequence[VoiceInfo], taken: set[str]) -> Voice:
    """A natural English voice for `role`: one of its gender (any, for an unknown gender)
    that no role has yet, picked by the role's name among those free; once every such voice
    is taken, one of those fewest roles share yet, at a size (pitch and timbre) no other role
    on it has (the `DISTINCT_ROLES` most-spoken roles are cast first, so they share only when
    the voices run out). Where no voice of the gender exists, another is moved toward it in
    pitch and timbre."""
    english = _english(natural)
    want = GENDER_WORDS.get(gender or "", "")
    same = [v for v in english if v.gender == want] if want else english
    pool = same or english
    h = _hash(role.name)
    free = [v for v in pool if f"{v.backend}:{v.voice_id}" not in taken]
    if not free:  # shared: among the voices fewest roles share yet, so no voice carries many
        shares = [sum(1 for t in taken if t.startswith(f"{v.backend}:{v.voice_id}@")) for v in pool]
        free = [v for v, n in zip(pool, shares, strict=True) if n == min(shares)]
    info = free[h % len(free)]
    pitch, timbre = 50, 50
    moved = bool(want and info.gender and info.gender != want)
    if moved:  # e.g. a female role on a male voice (its own size counted: hugo is +5 already)
        pitch, timbre = (80, 64) if want == "female" else (22, 38)
        low, high = (
            (sign * MAX_SHARED_RESAMPLE_ST - info.resampled_st) / semitones_for(51) + 50 for sign in (-1, 1)
        )
        timbre = max(0, math.ceil(low - 1e-9), min(100, math.floor(high + 1e-9), timbre))
    # NB: a Piper voice's stand-in reads the role's gender from its timbre (`espeak.stand_in`),
    # so roles sharing one move in pitch alone; a library voice's stand-in has its own gender,
    # as has a designed Piper voice's (one resampled: `piper.library`)
    sized = not moved and (info.backend == "kokoro" or info.resampled_st != 0.0)
    for offset in shared_offsets(info.resampled_st) if sized else _SHARED_PITCH:
        candidate = max(0, min(100, pitch + offset - 50))
        if f"{info.backend}:{info.voice_id}@{candidate}" not in taken:
            timbre = max(0, min(100, timbre + candidate - pitch)) if sized else timbre
            pitch = candidate
            break
    taken.add(f"{info.backend}:{info.voice_id}")
    taken.add(f"{info.backend}:{info.voice_id}@{pitch}")
    pan = 0.0 if role.name in {"NARRATOR", "ANNOUNCER"} else ((h >> 20) % 9 - 4) / 10
    return Voice(backend=info.backend, voice_id=info.voice_id, pitch=pitch, pitch_range=timbre, pan=pan)


def speaking_order(script: Script) -> list[RoleKey]:
    """Role names, the most lines first (ties: the most words, then the name)."""
    size = {n: (len(cs), sum(len(c.text.split()) for c in cs))
            for n in script.roles for cs in [script.cues_for(n)]}  # fmt: skip
    return sorted(script.roles, key=lambda n: (-size[n][0], -size[n][1], n))


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
    """Role key -> Voice; roles not yet cast get an automatic voice on demand. Keyed by
    `RoleKey` (only `normalise_role` makes one); `cast[name]` and `set` take a name as
    written and key it themselves."""

    voices: dict[RoleKey, Voice] = field(default_factory=dict)
    why: dict[RoleKey, str] = field(default_factory=dict, compare=False)
    """Role -> why auto-casting gave it its voice's gender (the guess and its evidence); not
    saved: a saved voice was the director's to keep."""

    @classmethod
    def auto(cls, script: Script, keep: Mapping[RoleKey, Voice] | None = None,
             natural: Sequence[VoiceInfo] = (), leads: int | None = None) -> Cast:  # fmt: skip
        """Cast every role of `script`, keeping the voices in `keep` (the script's saved
        cast): where `natural` (Kokoro's voice library, Piper) has English voices, every role
        gets one of its guessed gender (only the `leads` most-spoken, if given; the others
        espeak-ng), the most-spoken first (ties: the most words) so they never share one;
        without natural voices every role gets espeak-ng (the fast draft).
        Only the script, `keep` and the voices offered decide: nothing else that was open
        (the engine passes `keep` only when the same script is opened again)."""
        cast = cls(dict(keep or {}))
        guesses = guess_all_with_evidence(script, [n for n in script.roles if n not in cast.voices])
        genders = {n: g.gender for n, g in guesses.items()}
        cast.why = {n: f"{g.label}: {'; '.join(g.evidence)}" for n, g in guesses.items()}
        taken: set[str] = set()
        for v in cast.voices.values():
            taken |= {f"{v.backend}:{v.voice_id}", f"{v.backend}:{v.voice_id}@{v.pitch}"}
        if _english(natural):
            for name in speaking_order(script)[:leads]:
                if name not in cast.voices:
                    cast.voices[name] = natural_voice(script.roles[name], genders[name], natural, taken)
        cast.fill(script.roles.values(), genders)
        return cast

    def fill(self, roles: Iterable[Role], genders: Mapping[RoleKey, str | None] | None = None) -> None:
        taken = {v.voice_id for v in self.voices.values()}
        for role in roles:
            if role.name not in self.voices:
                voice = auto_voice(role, taken, (genders or {}).get(role.name))
                self.voices[role.name] = voice
                taken.add(voice.voice_id)

    def __getitem__(self, role: str) -> Voice:
        key = normalise_role(role)
        if key not in self.voices:
            self.fill([Role(key, key)])
        return self.voices[key]

    def set(self, role: str, **changes: Any) -> Voice:
        key = normalise_role(role)
        voice = validate_voice(replace(self[key], **changes), f"role {key}")
        self.voices[key] = voice
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
    path: str | Path,
    script_path: str,
    cast: Cast,
    edits: Mapping[int, object] | None = None,
    extras: Mapping[str, object] | None = None,
) -> None:
    """Write the project file (JSON): script path, cast, line edits and the tables read with
    it (`lexicon`, `delivery`), so saving never drops them. Atomic replace."""
    path = Path(path)
    data = {
        "troupe_project": 1,
        "script": script_path,
        "cast": cast.to_dict(),
        "edits": {str(k): v for k, v in sorted((edits or {}).items())},
        **(extras or {}),
    }
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)  # never leave a half-written project behind
