"""Ensemble cues: 'EDWARD AND WILL', 'A & B', 'A / B', 'BOTH', 'ALL' spoken by each role.

A cue whose name joins roles that speak on their own elsewhere in the script becomes one
cue per role, all starting together (overlap, as in dual dialogue). 'BOTH' is the two
roles who spoke last before it in its scene; 'ALL' (or 'EVERYONE') is every role who
speaks in its scene. A name that does not resolve (a role that never speaks alone, a
'BOTH' with fewer than two speakers before it) stays a role of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from engine.core.types import Cue, RoleKey

_JOIN = re.compile(r"\s+(?:AND|&|\+)\s+|\s*/\s*|\s*,\s*")
_BOTH = {"BOTH"}
_ALL = {"ALL", "EVERYONE", "EVERYBODY", "TOGETHER"}


def _split(key: str) -> list[str]:
    return [p for p in (" ".join(part.split()) for part in _JOIN.split(key)) if p]


def _solo_roles(cues: Sequence[Cue]) -> set[RoleKey]:
    keys = {c.role for c in cues}
    return {k for k in keys if k not in _BOTH | _ALL and len(_split(k)) < 2}


def _members(cue: Cue, k: int, cues: Sequence[Cue], solo: set[RoleKey]) -> list[RoleKey]:
    if cue.role in _BOTH:
        seen: list[RoleKey] = []
        for prev in reversed(cues[:k]):
            if prev.scene != cue.scene:
                break
            if prev.role in solo and prev.role not in seen:
                seen.append(prev.role)
            if len(seen) == 2:
                return seen[::-1]
        return []
    if cue.role in _ALL:
        scene = [c.role for c in cues if c.scene == cue.scene and c.role in solo]
        members = list(dict.fromkeys(scene))
        return members if len(members) >= 2 else []
    parts = _split(cue.role)
    keys: dict[str, RoleKey] = {key: key for key in solo}  # a part spelt as a solo role is its key
    if len(parts) >= 2 and all(p in keys for p in parts):
        return list(dict.fromkeys(keys[p] for p in parts))
    return []


def expand_ensembles(cues: Sequence[Cue], role_keys: set[RoleKey]) -> list[Cue]:
    """Each resolvable ensemble cue as one cue per member, the 2nd on overlapping the 1st."""
    solo = _solo_roles(cues) & role_keys
    out: list[Cue] = []
    for k, cue in enumerate(cues):
        members = _members(cue, k, cues, solo)
        if not members:
            out.append(cue)
            continue
        for n, role in enumerate(members):
            overlaps = cue.overlaps_previous if n == 0 else True
            out.append(replace(cue, role=role, overlaps_previous=overlaps))
    return out
