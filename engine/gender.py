"""A role's likely gender, for casting: the script's own words first (a title in the name,
pronouns in the action near the character's first appearance), then the first name
(gender-guesser's name list); 'f', 'm' or None (unknown: cast neutral)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path

from engine.core.types import Role, Script

_PRONOUNS = {
    "f": {"she", "her", "hers", "herself"},
    "m": {"he", "him", "his", "himself"},
}
WINDOW_CHARS = 160
"""How much action after a character's first mention is read for pronouns."""
_NAME_GENDER = {"female": "f", "mostly_female": "f", "male": "m", "mostly_male": "m"}


@functools.cache
def _detector() -> object | None:
    try:
        import gender_guesser.detector as detector
    except ImportError:
        return None
    found: object = detector.Detector(case_sensitive=False)
    return found


def from_first_name(name: str) -> str | None:
    """'f' or 'm' for a role whose first word is a known first name ('IRIS VALE' -> 'f')."""
    d = _detector()
    words = re.findall(r"[A-Za-z]+", name)
    if d is None or not words:
        return None
    return _NAME_GENDER.get(d.get_gender(words[0].capitalize()))  # type: ignore[attr-defined]


def from_pronouns(name: str, action_lines: Iterable[str]) -> str | None:
    """'f' or 'm' where the action right after the character's first mention uses only one
    gender's pronouns ('IRIS (40s) adjusts her headset' -> 'f'); None otherwise."""
    mention = re.compile(rf"(?<![A-Za-z]){re.escape(name)}(?![A-Za-z])", re.IGNORECASE)
    for line in action_lines:
        m = mention.search(line)
        if m is None:
            continue
        window = line[m.end() : m.end() + WINDOW_CHARS]
        words = set(re.findall(r"[a-z]+", window.lower()))
        found = [g for g, pronouns in _PRONOUNS.items() if words & pronouns]
        return found[0] if len(found) == 1 else None
    return None


def action_lines(script: Script) -> list[str]:
    """The script file's lines that are neither dialogue, cue names nor parentheticals
    (Fountain and plain text keep their action there); [] when the file cannot be read."""
    try:
        text = Path(script.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    spoken = {" ".join(c.text.split()) for c in script.cues}
    names = set(script.roles)
    out = []
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line or line.startswith("(") or ":" in line[:30]:
            continue
        if line.upper() == line and re.sub(r"\s*\(.*\)|\s*\^$", "", line).strip() in names:
            continue  # a cue's character name
        if any(line in s for s in spoken):
            continue
        out.append(line)
    return out


def guess(role: Role, lines: Iterable[str] = ()) -> str | None:
    """The role's gender from its name's title, the pronouns near its first mention, then its
    first name; None when none of them says."""
    return role.gender_hint or from_pronouns(role.display_name, lines) or from_first_name(role.name)


def guess_all(script: Script, names: Iterable[str] | None = None) -> dict[str, str | None]:
    """`guess` for the roles `names` of `script` (all by default; the file is read once and
    not at all when no role is asked for: a saved cast needs no guessing)."""
    wanted = [n for n in (script.roles if names is None else names) if n in script.roles]
    lines = action_lines(script) if wanted else []
    return {name: guess(script.roles[name], lines) for name in wanted}
