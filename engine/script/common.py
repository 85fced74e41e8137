"""Helpers shared by the importers: decoding, role-name normalisation, script assembly."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Cue, Role, Scene, Script

MAX_SCRIPT_BYTES = 20 * 1024 * 1024
"""Real scripts are well under 1 MB; anything above this is junk, not a script."""

_EXTENSION = re.compile(r"\s*\(([^)]*)\)\s*$")
_GENDER_WORDS = {
    "f": {"MOM", "MOTHER", "MUM", "MA", "GRANDMA", "AUNT", "AUNTY", "QUEEN", "LADY", "GIRL",
          "WOMAN", "MRS", "MS", "MISS", "SISTER", "DAUGHTER", "WIFE", "PRINCESS", "NUN"},
    "m": {"DAD", "FATHER", "PAPA", "PA", "GRANDPA", "UNCLE", "KING", "LORD", "BOY", "MAN",
          "MR", "SIR", "BROTHER", "SON", "HUSBAND", "PRINCE", "MONK", "GUARD"},
}  # fmt: skip


def read_text(path: Path) -> str:
    """Read a script file as text, with newlines normalised to '\\n'.

    Only UTF-8 (with or without BOM) and BOM-marked UTF-16 are accepted: guessing a
    legacy code page would silently turn bad bytes into wrong words in an actor's mouth.
    """
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ScriptError(path, f"cannot open the file ({exc.strerror})") from exc
    if size > MAX_SCRIPT_BYTES:
        raise ScriptError(
            path,
            f"file is {size / 1e6:.1f} MB; a script must be under {MAX_SCRIPT_BYTES // 2**20} MB",
        )
    raw = path.read_bytes()
    if not raw.strip():
        raise ScriptError(path, "file is empty; expected a script with at least one line")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = raw.decode("utf-16")
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            bad = raw[exc.start : exc.end].hex(" ")
            raise ScriptError(
                path, f"bytes {bad} are not valid UTF-8; save the script as UTF-8", line
            ) from exc
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ScriptError(path, "file contains NUL bytes; expected a text script", line)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_extension(name: str) -> tuple[str, tuple[str, ...]]:
    """'HALE (V.O.)' -> ('HALE', ('V.O.',)); repeated extensions are all kept."""
    hints: list[str] = []
    name = name.strip()
    while True:
        m = _EXTENSION.search(name)
        if not m or m.start() == 0:
            break
        hints.insert(0, m.group(1).strip())
        name = name[: m.start()].rstrip()
    return name, tuple(h for h in hints if h)


def normalise_role(name: str) -> str:
    """The key that makes 'Brick', 'BRICK' and 'BRICK (CONT'D)' one role."""
    base, _ = split_extension(name)
    return re.sub(r"\s+", " ", base.strip().lstrip("@").rstrip("^").strip()).upper()


def gender_hint(name: str) -> str | None:
    words = set(re.findall(r"[A-Z]+", name.upper()))
    for gender, vocab in _GENDER_WORDS.items():
        if words & vocab:
            return gender
    return None


def strip_markup(text: str) -> str:
    """Remove emphasis markup (*, **, _) and inline tags that must not be spoken."""
    text = re.sub(r"</?[^>]{1,40}>", "", text)
    text = re.sub(r"(\*{1,3}|_)(?=\S)(.+?)(?<=\S)\1", r"\2", text)
    return re.sub(r"\s+", " ", text).strip()


@dataclass
class ScriptBuilder:
    """Accumulates scenes and cues in order, then freezes them into a `Script`."""

    path: Path
    format: str
    scenes: list[Scene] = field(default_factory=list)
    cues: list[Cue] = field(default_factory=list)
    roles: dict[str, Role] = field(default_factory=dict)

    def scene(self, heading: str, line: int) -> None:
        self.scenes.append(Scene(index=len(self.scenes), heading=heading, line=line))

    def cue(
        self,
        role_name: str,
        text: str,
        line: int,
        hints: tuple[str, ...] = (),
        overlaps_previous: bool = False,
        start_s: float | None = None,
        end_s: float | None = None,
    ) -> None:
        key = normalise_role(role_name)
        if not key:
            raise ScriptError(self.path, "a line has no speaker name", line)
        text = strip_markup(text)
        if not text:
            raise ScriptError(self.path, f"{key} has an empty line; expected dialogue", line)
        if key not in self.roles:
            display, _ = split_extension(role_name.strip().lstrip("@").rstrip("^").strip())
            self.roles[key] = Role(name=key, display_name=display, gender_hint=gender_hint(key))
        if not self.scenes:
            self.scene("", line)
        self.cues.append(
            Cue(
                index=len(self.cues),
                role=key,
                text=text,
                scene=len(self.scenes) - 1,
                line=line,
                hints=hints,
                overlaps_previous=overlaps_previous and bool(self.cues),
                start_s=start_s,
                end_s=end_s,
            )
        )

    def build(self, title: str = "", metadata: dict[str, str] | None = None) -> Script:
        if not self.cues:
            raise ScriptError(self.path, f"no dialogue found in this {self.format} script")
        # Drop empty scenes only at the end so cue.scene indices stay valid.
        return Script(
            title=title or self.path.stem.replace("_", " ").title(),
            path=str(self.path),
            format=self.format,
            scenes=tuple(self.scenes),
            cues=tuple(self.cues),
            roles=dict(self.roles),
            metadata=dict(metadata or {}),
        )
