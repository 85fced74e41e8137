"""Immutable value types: a script's scenes, cues and roles, and a role's voice."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, NewType

RoleKey = NewType("RoleKey", str)
"""A role's key: the cast, the script's roles and every table by role are keyed by it.
Only `engine.script.common.normalise_role` makes one ('Iris (V.O.)' and ' iris ' are both
IRIS), so a role name as written cannot be used as a key by mistake; where a name must
become a key (a project file, a request), pass it through `normalise_role` (idempotent)."""

SAMPLE_RATE_HZ = 48_000
"""The engine's one sample rate: synthesizers resample to it, the mixer and ring run at it."""


@dataclass(frozen=True)
class Role:
    """A speaking part; `name` is the normalised key (upper case, extensions stripped)."""

    name: RoleKey
    display_name: str
    gender_hint: str | None = None
    """'f' or 'm' where the script says so (e.g. a character note); None otherwise."""


@dataclass(frozen=True)
class Cue:
    """One line of dialogue to be spoken by one role."""

    index: int
    """Position in script order, 0-based; unique within a script."""
    role: RoleKey
    """Normalised role name (a key of `Script.roles`)."""
    text: str
    scene: int
    """Index into `Script.scenes`."""
    line: int
    """1-based line number in the source file where the cue starts."""
    hints: tuple[str, ...] = ()
    """Delivery hints: parentheticals, emotions, extensions such as 'V.O.'."""
    overlaps_previous: bool = False
    """Dual dialogue: starts together with the previous cue instead of after it."""
    start_s: float | None = None
    """Fixed slot start on the show timeline (SRT/VTT/CSV), or None to follow the previous cue."""
    end_s: float | None = None
    """Slot end (SRT/VTT), the time by which the line should be finished."""

    def with_text(self, text: str) -> Cue:
        return replace(self, text=text)


@dataclass(frozen=True)
class Annotation:
    """A non-spoken part of a script kept for the timeline: a sound description, music."""

    text: str
    line: int
    """1-based line number in the source file."""
    start_s: float | None = None
    end_s: float | None = None


@dataclass(frozen=True)
class Section:
    """A Fountain section ('# Act One', '## The Raid'): a part of the story, never spoken;
    a render's chapters follow the top level present."""

    title: str
    depth: int
    """The number of '#' marks: 1 is the top level."""
    line: int
    """1-based line in the source file (the lines after it belong to it)."""


@dataclass(frozen=True)
class Scene:
    """A scene heading and the range of cues under it."""

    index: int
    heading: str
    line: int


@dataclass(frozen=True)
class ImportNote:
    """Something the import did that the director should know before the show is voiced."""

    line: int
    """1-based line in the source file; 0 where none applies."""
    kind: str
    """'warning' (read, but check it), 'skipped' (not spoken, see `reason`), 'guess' (a
    speaker or sound read from evidence that may be wrong) or 'split' (a long paragraph
    became several lines of one role)."""
    message: str
    reason: str = ""
    """For 'skipped': why ('karaoke', 'sign', 'zero length', ...), the report's grouping."""


@dataclass(frozen=True)
class StyleUse:
    """An ASS/SSA style as the import saw it: how many events use it, spoken or not, and why."""

    name: str
    events: int
    dialogue: bool
    reason: str


@dataclass(frozen=True)
class ImportFacts:
    """How a file was read: its encoding (and how sure), what was skipped or guessed."""

    encoding: str = "utf-8"
    confidence: float = 1.0
    """1.0 for a BOM, valid UTF-8 or a chosen encoding; the detector's figure for a guess."""
    how: str = "utf-8"
    """'bom', 'utf-8', 'guessed' or 'chosen' (the user's `--encoding`)."""
    first_line: str = ""
    """The first non-blank decoded line: what a wrong guess would show at a glance."""
    notes: tuple[ImportNote, ...] = ()
    styles: tuple[StyleUse, ...] = ()
    """ASS/SSA only: every style of the file, in the order first used."""


@dataclass(frozen=True)
class Script:
    """An imported script: what every importer returns."""

    title: str
    path: str
    format: str
    """'fountain', 'fdx', 'text', 'srt', 'vtt', 'ass', 'ssa', 'sbv', 'microdvd', 'csv' or 'tsv'."""
    scenes: tuple[Scene, ...]
    cues: tuple[Cue, ...]
    roles: dict[RoleKey, Role] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    """Title-page keys (lower case) and values."""
    annotations: tuple[Annotation, ...] = ()
    """Sound descriptions and music marks ('[door slams]', '♪'): shown, never spoken."""
    facts: ImportFacts = field(default_factory=ImportFacts)
    """What the import report shows: encoding, skipped events, guesses, warnings."""
    sections: tuple[Section, ...] = ()
    """Fountain sections, in order."""

    def cues_for(self, role: RoleKey) -> list[Cue]:
        return [c for c in self.cues if c.role == role]


@dataclass(frozen=True)
class Voice:
    """How a role sounds and sits in the mix."""

    backend: str = "espeak"
    voice_id: str = "en-us"
    """Backend voice name; for espeak 'language+variant', e.g. 'en-gb+m3'."""
    rate_wpm: int = 175
    pitch: int = 50
    """espeak pitch 0..100."""
    pitch_range: int = 50
    """espeak intonation range 0..100."""
    gain_db: float = 0.0
    pan: float = 0.0
    """-1 left .. +1 right, equal-power."""
    weight: float = 1.0
    """Base scheduling priority weight set by the director."""
    mute: bool = False
    solo: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "voice_id": self.voice_id,
            "rate_wpm": self.rate_wpm,
            "pitch": self.pitch,
            "pitch_range": self.pitch_range,
            "gain_db": self.gain_db,
            "pan": self.pan,
            "weight": self.weight,
            "mute": self.mute,
            "solo": self.solo,
        }
