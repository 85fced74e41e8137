"""A rendered show's chapters: the script's top-level Fountain sections where it has them,
else its scenes grouped so that no chapter is shorter than a minimum (a screenplay's 131
scenes averaging 26 s are no table of contents), else its lines grouped the same way.
Every chapter has a title a listener can read, and the first starts at 0."""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.core.types import Script
from engine.export.tags import Chapter
from engine.render.result import LineTiming

MIN_CHAPTER_S = 180.0
"""Scenes are grouped into chapters of at least this length (3 minutes)."""


_PLACE = re.compile(r"^(?:INT\.?/EXT\.?|EXT\.?/INT\.?|I/E\.?|INT\.?|EXT\.?|EST\.?)\s+", re.I)
_WHEN = {"DAY", "NIGHT", "MORNING", "EVENING", "AFTERNOON", "DAWN", "DUSK", "SUNSET", "SUNRISE"}
_CONTINUITY = {"LATER", "CONTINUOUS", "MOMENTS LATER", "SAME", "SAME TIME", "CONT'D", "CONTD"}
"""Said to the crew, not the listener: dropped from a chapter's title."""
_SMALL = {"a", "an", "and", "as", "at", "but", "by", "for", "in", "of", "on", "or", "the", "to", "with"}


def readable_heading(heading: str) -> str:
    """'INT. LIGHTHOUSE - LAMP ROOM - NIGHT' -> 'Lighthouse, Lamp Room (night)'; a crew's
    'CONTINUOUS' or 'LATER' is dropped."""
    text = _PLACE.sub("", heading.strip()).strip(" .-")
    parts = [p.strip() for p in re.split(r"\s+[-–—]+\s+|\s*/\s*", text) if p.strip()]
    while len(parts) > 1 and parts[-1].upper() in _CONTINUITY:
        parts.pop()
    when = parts.pop() if len(parts) > 1 and parts[-1].upper() in _WHEN else ""
    place = ", ".join(parts) if parts else text
    if place.isupper() or place.islower():
        words = place.lower().split(" ")
        place = " ".join(w if k and w in _SMALL else w[:1].upper() + w[1:] for k, w in enumerate(words))
    return f"{place} ({when.lower()})" if when else place


def chapters(script: Script, lines: Sequence[LineTiming], min_s: float = MIN_CHAPTER_S) -> list[Chapter]:
    """The chapters of a rendered show (`lines`: every line with where it starts)."""
    heard = sorted((ln for ln in lines if not ln.error), key=lambda ln: ln.start_s)
    if not heard:
        return [Chapter(0.0, script.title or "Chapter 1")]
    by_section = _from_sections(script, heard)
    if by_section:
        return by_section
    if any(s.heading for s in script.scenes):
        return _from_scenes(script, heard, min_s)
    return _by_length(heard, min_s)


def _from_sections(script: Script, heard: Sequence[LineTiming]) -> list[Chapter]:
    if not script.sections:
        return []
    top = min(s.depth for s in script.sections)
    line_of = {c.index: c.line for c in script.cues}
    out: list[Chapter] = []
    for section in (s for s in script.sections if s.depth == top):
        first = next((ln for ln in heard if line_of.get(ln.cue_index, 0) > section.line), None)
        if first is None:
            continue
        if out and first.start_s <= out[-1].start_s:  # an empty section: the next one names it
            out[-1] = Chapter(out[-1].start_s, section.title)
            continue
        out.append(Chapter(first.start_s, section.title))
    if not out:
        return []
    if out[0].start_s > 0 and heard[0].start_s < out[0].start_s:  # lines before the first section
        out.insert(0, Chapter(0.0, script.title or "Opening"))
    return [Chapter(0.0, out[0].title), *out[1:]]


def _from_scenes(script: Script, heard: Sequence[LineTiming], min_s: float) -> list[Chapter]:
    starts: dict[int, float] = {}
    for ln in heard:
        starts.setdefault(ln.scene, ln.start_s)
    order = sorted(starts, key=lambda k: starts[k])
    groups: list[list[int]] = []
    for k in order:
        if not groups or starts[k] - starts[groups[-1][0]] >= min_s:
            groups.append([k])
        else:
            groups[-1].append(k)
    if len(groups) > 1 and heard[-1].start_s + heard[-1].duration_s - starts[groups[-1][0]] < min_s / 2:
        groups[-2].extend(groups.pop())  # a short last group joins the one before
    out = []
    for n, group in enumerate(groups, 1):
        names: list[str] = []
        for k in group:
            heading = script.scenes[k].heading if k < len(script.scenes) else ""
            name = readable_heading(heading) if heading else ""
            if name and name not in names:
                names.append(name)
        title = "; ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        out.append(Chapter(0.0 if n == 1 else starts[group[0]], title or f"Chapter {n}"))
    return out


def _by_length(heard: Sequence[LineTiming], min_s: float) -> list[Chapter]:
    out = [Chapter(0.0, "Chapter 1")]
    for ln in heard:
        if ln.start_s - out[-1].start_s >= min_s:
            out.append(Chapter(ln.start_s, f"Chapter {len(out) + 1}"))
    end = heard[-1].start_s + heard[-1].duration_s
    if len(out) > 1 and end - out[-1].start_s < min_s / 2:
        out.pop()
    return out
