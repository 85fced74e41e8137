"""Where each cue sits on the show timeline, given how long each line turned out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.core.types import Cue


@dataclass(frozen=True)
class Pacing:
    """The director's pacing: gaps between lines and scenes, and the lead-in."""

    gap_s: float = 0.35
    scene_gap_s: float = 1.2
    lead_in_s: float = 0.25


def layout(
    cues: Sequence[Cue], durations_s: Mapping[int, float], pacing: Pacing = Pacing()
) -> dict[int, float]:
    """Start time (s) of every cue: slots where the script has them, else after the
    previous line plus the pacing gap; dual dialogue starts with the line it overlaps.
    A cue missing from `durations_s` (not synthesized yet, or failed) takes no time."""
    starts: dict[int, float] = {}
    cursor = pacing.lead_in_s
    prev: Cue | None = None
    for cue in cues:
        if cue.start_s is not None:
            start = cue.start_s
        elif cue.overlaps_previous and prev is not None:
            start = starts[prev.index]
        elif prev is None:
            start = cursor
        else:
            start = cursor + (pacing.scene_gap_s if cue.scene != prev.scene else pacing.gap_s)
        starts[cue.index] = start
        cursor = max(cursor, start + durations_s.get(cue.index, 0.0))
        prev = cue
    return starts
