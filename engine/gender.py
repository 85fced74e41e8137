"""A role's likely gender, for casting, from every clue the script gives, weighed together:
a role word in the name (MOTHER, MRS. DALE; weight 3), a role word right before a mention in
the action ("his mother SANDRA"; 3), the pronouns that follow a mention in its sentence
where they are of one gender only ("IRIS (40s) adjusts her headset"; 1 a mention), and the
first name (gender-guesser's list; 1.5). A `YOUNG X` or `OLD X` role with no clue of its
own follows X. Titles that say nothing of gender (DR., PROFESSOR, OFFICER) add nothing.
'f', 'm' or None (unknown: cast neutral), with the evidence behind it, which the cast view
and `troupe cast --json` show."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.types import Role, RoleKey, Script
from engine.script.common import gender_hint

log = logging.getLogger("troupe.cast")

_PRONOUNS = {
    "f": {"she", "her", "hers", "herself"},
    "m": {"he", "him", "his", "himself"},
}
_ROLE_WORDS = {
    "f": {"mother", "mom", "mum", "grandmother", "grandma", "aunt", "sister", "daughter", "wife",
          "girlfriend",
          "niece", "queen", "lady", "mrs", "ms", "miss", "madam", "woman", "girl", "actress", "waitress",
          "princess", "widow", "stepmother", "bride", "nun", "landlady"},
    "m": {"father", "dad", "grandfather", "grandpa", "uncle", "brother", "son", "husband", "boyfriend",
          "nephew", "king", "lord", "mr", "sir", "man", "boy", "actor", "waiter", "prince", "widower",
          "stepfather", "groom", "monk", "landlord"},
}  # fmt: skip
WINDOW_CHARS = 160
"""How much action after a mention is read for its first pronoun."""
MENTIONS = 6
"""Mentions of a character read (the first ones): enough to outvote one stray pronoun."""
_NAME_GENDER = {"female": "f", "mostly_female": "f", "male": "m", "mostly_male": "m"}
GENDER_WORDS = {"f": "female", "m": "male"}
"""A guess's letter as a voice list names the gender."""
_AGE_PREFIX = re.compile(r"^(?:YOUNG|YOUNGER|OLD|OLDER|LITTLE|BABY|TEEN(?:AGE)?|ADULT|ELDERLY)\s+(.+)$")
_SENTENCE_END = re.compile(r"[.!?]\s|$")
W_NAME_WORD, W_ROLE_WORD, W_PRONOUN, W_FIRST_NAME = 3.0, 3.0, 1.0, 1.5


@dataclass(frozen=True)
class Guess:
    """A role's gender and why."""

    gender: str | None
    evidence: tuple[str, ...] = ()
    scores: Mapping[str, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """'female', 'male' or 'unknown'."""
        return GENDER_WORDS.get(self.gender or "", "unknown")


_FIRST_NAMES: dict[str, str | None] = {}
"""First name (lower case) -> 'f', 'm' or None, for the names looked up so far."""
_FIRST_NAMES_LOCK = threading.Lock()


def _first_name_word(name: str) -> str | None:
    words = re.findall(r"[A-Za-z]+", name)
    return words[0].lower() if words else None


def look_up_first_names(names: Iterable[str]) -> None:
    """Look up the first names of `names` (roles) in gender-guesser's names file, in one pass
    over it for all of them, keeping only their lines: its own detector keeps every one of
    its 48,000 names (26 MB resident for a whole render, 0.17 s of every cast)."""
    with _FIRST_NAMES_LOCK:
        wanted = {w for w in map(_first_name_word, names) if w and w not in _FIRST_NAMES}
        if wanted:
            _FIRST_NAMES.update(_read_first_names(wanted))


def _read_first_names(wanted: set[str]) -> dict[str, str | None]:
    """Each wanted first name's 'f', 'm' or None; None for all where the list is missing."""
    unknown: dict[str, str | None] = dict.fromkeys(wanted)
    try:
        from gender_guesser import detector
    except ImportError:
        return unknown
    path = Path(detector.__file__).with_name("data") / "nam_dict.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        log.info("cannot read %s (%s): no first-name guesses", path, exc)
        return unknown

    class Names(detector.Detector):  # type: ignore[misc]
        """gender-guesser's detector over the lines of the wanted names only."""

        def _parse(self, _filename: str) -> None:
            self.names: dict[str, dict[str, str]] = {}
            for line in text.splitlines():
                parts = line.split(None, 2)
                if len(parts) > 1 and parts[1].lower().replace("+", "") in wanted:
                    self._eat_name_line(line.strip())

    found = Names(case_sensitive=False)
    return {word: _NAME_GENDER.get(found.get_gender(word)) for word in wanted}


def from_first_name(name: str) -> str | None:
    """'f' or 'm' for a role whose first word is a known first name ('IRIS VALE' -> 'f')."""
    word = _first_name_word(name)
    if word is None:
        return None
    look_up_first_names([name])  # NB: under the lock: a name being read is waited for
    return _FIRST_NAMES.get(word)


def _pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    unique = sorted({n for n in names if n.strip()}, key=len, reverse=True)
    if not unique:
        return None
    alternatives = "|".join(re.escape(n) for n in unique)
    return re.compile(rf"(?<![A-Za-z])({alternatives})(?![A-Za-z])", re.IGNORECASE)


def mentions(names: Sequence[str], action_lines: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """For each name, its first `MENTIONS` mentions in the action: (the text before it on its
    line, the text after it). One pass over the lines for all names together."""
    pattern = _pattern(names)
    by_upper = {n.upper(): n for n in names}
    found: dict[str, list[tuple[str, str]]] = {n: [] for n in names}
    if pattern is None:
        return found
    for line in action_lines:
        for m in pattern.finditer(line):
            name = by_upper.get(m.group(1).upper())
            if name is not None and len(found[name]) < MENTIONS:
                found[name].append(
                    (line[max(0, m.start() - 40) : m.start()], line[m.end() : m.end() + WINDOW_CHARS])
                )
    return found


def _pronoun_vote(after: str) -> tuple[str, str] | None:
    """(gender, pronoun) where the sentence after a mention has one gender's pronouns only."""
    end = _SENTENCE_END.search(after)
    words = re.findall(r"[a-z]+", after[: end.start() if end else len(after)].lower())
    found = [(g, w) for w in words for g, pronouns in _PRONOUNS.items() if w in pronouns]
    if not found or len({g for g, _w in found}) > 1:
        return None
    return found[0]


def from_pronouns(name: str, action_lines: Iterable[str]) -> str | None:
    """'f' or 'm' where the pronouns that follow the character's mentions (each in its
    sentence, of one gender only) say one gender more often; None otherwise."""
    votes = {"f": 0, "m": 0}
    for _before, after in mentions([name], action_lines)[name]:
        vote = _pronoun_vote(after)
        if vote:
            votes[vote[0]] += 1
    if votes["f"] == votes["m"]:
        return None
    return "f" if votes["f"] > votes["m"] else "m"


def action_lines(script: Script) -> list[str]:
    """The script file's lines that are neither dialogue, cue names nor parentheticals
    (Fountain and plain text keep their action there); [] when the file cannot be read.

    Fountain and plain text: a cue's paragraph (from its line to the next blank line) is
    dialogue, found from the cues' own line numbers, each line looked at once. Other
    formats: a line found in the cues' texts is dialogue (one search a line)."""
    try:
        raw = Path(script.path).read_bytes()
        codec = "utf-8-sig" if script.facts.encoding == "utf-8" else script.facts.encoding
        text = raw.decode(codec, errors="replace")  # as the import read it
    except (OSError, LookupError, ValueError):
        return []
    lines = text.splitlines()
    in_speech = _speech_lines(script, lines) if script.format in _PARAGRAPHED else set()
    names = set(script.roles)
    out = []
    for k, raw_line in enumerate(lines):
        if k in in_speech:
            continue
        line = " ".join(raw_line.split())
        if not line or line.startswith("(") or ":" in line[:30]:
            continue
        if line.upper() == line and re.sub(r"\s*\(.*\)|\s*\^$", "", line).strip() in names:
            continue  # a cue's character name
        out.append(line)
    if script.format in _PARAGRAPHED:
        return out
    return _drop_dialogue_pieces(out, {" ".join(c.text.split()) for c in script.cues})


_PARAGRAPHED = ("fountain", "text")
"""Formats whose speeches are paragraphs that start at their cue's line."""


def _speech_lines(script: Script, lines: list[str]) -> set[int]:
    """0-based numbers of the lines in a cue's paragraph (a line of exactly two spaces keeps
    a Fountain speech going). Linear: a walk stops at a line already marked."""
    marked: set[int] = set()
    for cue in script.cues:
        k = cue.line - 1
        while 0 <= k < len(lines) and k not in marked and (lines[k].strip() or lines[k] == "  "):
            marked.add(k)
            k += 1
    return marked


def _drop_dialogue_pieces(lines: list[str], spoken: set[str]) -> list[str]:
    """Lines that are a wrapped part of a spoken cue (a cue over several lines of the file)
    are dialogue too: each line is looked for in the cues' texts joined by newlines (one
    substring search a line, which no line can match across two cues)."""
    joined = "\n".join(spoken)
    return [line for line in lines if line not in joined]


def guess_with_evidence(role: Role, found: Sequence[tuple[str, str]] = ()) -> Guess:
    """The role's gender from every clue, with the clues; `found` are its mentions
    (`mentions`)."""
    scores = {"f": 0.0, "m": 0.0}
    evidence: list[str] = []
    hint = role.gender_hint or gender_hint(role.name)
    if hint:
        scores[hint] += W_NAME_WORD
        evidence.append(f"name says {'female' if hint == 'f' else 'male'} ({role.name})")
    for before, after in found:
        words = re.findall(r"[a-z]+", before.lower())
        if words:
            for gender, vocab in _ROLE_WORDS.items():
                if words[-1] in vocab:
                    scores[gender] += W_ROLE_WORD
                    evidence.append(f"'{words[-1]} {role.display_name}'")
        vote = _pronoun_vote(after)
        if vote:
            scores[vote[0]] += W_PRONOUN
            evidence.append(f"'{role.display_name} … {vote[1]}'")
    first_name = None if _AGE_PREFIX.match(role.name) else from_first_name(role.name)
    if first_name:  # NB: not for YOUNG X (Young is a first name too): X's own guess says
        scores[first_name] += W_FIRST_NAME
        evidence.append(f"first name {role.name.split()[0].capitalize()} is usually "
                        f"{'female' if first_name == 'f' else 'male'}")  # fmt: skip
    if scores["f"] == scores["m"]:
        return Guess(None, tuple(evidence) or ("no clue in the name or the action",), scores)
    return Guess("f" if scores["f"] > scores["m"] else "m", tuple(evidence), scores)


def guess(role: Role, lines: Iterable[str] = ()) -> str | None:
    """The role's gender from its name, its mentions in `lines` and its first name."""
    return guess_with_evidence(role, mentions([role.display_name], list(lines))[role.display_name]).gender


def guess_all_with_evidence(script: Script, names: Iterable[RoleKey] | None = None) -> dict[RoleKey, Guess]:
    """`guess_with_evidence` for the roles `names` of `script` (all by default; the file is
    read once, and not at all when no role is asked for: a saved cast needs no guessing).
    A `YOUNG X` role with no clue of its own takes X's guess."""
    wanted = [n for n in (script.roles if names is None else names) if n in script.roles]
    if not wanted:
        return {}
    look_up_first_names(role.name for role in script.roles.values())  # NB: YOUNG X asks X's too
    lines = action_lines(script)
    displays = {n: script.roles[n].display_name for n in wanted}
    found = mentions(sorted(set(displays.values()) | set(wanted)), lines)
    out = {
        n: guess_with_evidence(script.roles[n], found.get(displays[n]) or found.get(n, [])) for n in wanted
    }
    keys: dict[str, RoleKey] = {key: key for key in script.roles}
    for n in wanted:
        m = _AGE_PREFIX.match(n)
        x = keys.get(m.group(1)) if m else None
        if out[n].gender is None and x is not None:
            base = out.get(x) or guess_with_evidence(script.roles[x], found.get(x, []))
            if base.gender:
                out[n] = Guess(base.gender, (f"follows {x}", *base.evidence), base.scores)
    return out


def guess_all(script: Script, names: Iterable[RoleKey] | None = None) -> dict[RoleKey, str | None]:
    """Each role's gender alone (see `guess_all_with_evidence`)."""
    return {n: g.gender for n, g in guess_all_with_evidence(script, names).items()}
