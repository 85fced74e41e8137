"""DAW hand-off: the rendered show as an OpenTimelineIO timeline (one track per role, one
clip per line, a marker per scene) and as a REAPER project, which OTIO has no adapter for."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import opentimelineio as otio

from engine.core.types import SAMPLE_RATE_HZ, Script


class Line(Protocol):
    """What the timeline needs of a rendered line (`engine.render.LineTiming` has it)."""

    @property
    def cue_index(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def start_s(self) -> float: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def error(self) -> str | None: ...
    @property
    def scene(self) -> int: ...


def _frames(seconds: float) -> int:
    return round(seconds * SAMPLE_RATE_HZ)


def _time(frames: int) -> otio.opentime.RationalTime:
    return otio.opentime.RationalTime(frames, SAMPLE_RATE_HZ)


def _range(start: int, duration: int) -> otio.opentime.TimeRange:
    return otio.opentime.TimeRange(_time(start), _time(duration))


def _tracks_by_role(lines: Sequence[Line]) -> dict[str, list[list[Line]]]:
    """Each role's lines in time order; a line that overlaps the role's previous one
    (fixed subtitle slots can) goes to a second track of that role."""
    lanes: dict[str, list[list[Line]]] = {}
    for ln in sorted(lines, key=lambda ln: (ln.start_s, ln.cue_index)):
        role_lanes = lanes.setdefault(ln.role, [])
        for lane in role_lanes:
            last = lane[-1]
            if _frames(last.start_s) + _frames(last.duration_s) <= _frames(ln.start_s):
                lane.append(ln)
                break
        else:
            role_lanes.append([ln])
    return lanes


def _clip(ln: Line, url: str, per_line: bool) -> otio.schema.Clip:
    start, n = _frames(ln.start_s), _frames(ln.duration_s)
    source = _range(0 if per_line else start, n)
    ref = otio.schema.ExternalReference(target_url=url)
    meta: dict[str, Any] = {"troupe": {"cue": ln.cue_index + 1, "role": ln.role, "text": ln.text}}
    return otio.schema.Clip(name=f"{ln.cue_index + 1} {ln.text[:40]}", media_reference=ref,
                            source_range=source, metadata=meta)  # fmt: skip


def build_timeline(script: Script, lines: Sequence[Line], media: Mapping[int, Path], folder: Path,
                   per_line: bool, mix: Path | None = None) -> otio.schema.Timeline:  # fmt: skip
    """`media[cue]` is the file holding the line: its own file (`per_line`) or its role's stem."""
    timeline = otio.schema.Timeline(name=script.title or "Troupe show")
    voiced = [ln for ln in lines if not ln.error and ln.duration_s > 0]
    for role, lanes in _tracks_by_role(voiced).items():
        for k, lane in enumerate(lanes):
            track = otio.schema.Track(name=role if k == 0 else f"{role} {k + 1}", kind="Audio")
            cursor = 0
            for ln in lane:
                start = _frames(ln.start_s)
                if start > cursor:
                    track.append(otio.schema.Gap(source_range=_range(0, start - cursor)))
                url = os.path.relpath(media[ln.cue_index], folder)
                track.append(_clip(ln, url, per_line))
                cursor = start + _frames(ln.duration_s)
            timeline.tracks.append(track)
    if mix is not None and voiced:
        end = max(_frames(ln.start_s) + _frames(ln.duration_s) for ln in voiced)
        track = otio.schema.Track(name="MIX", kind="Audio")
        ref = otio.schema.ExternalReference(target_url=os.path.relpath(mix, folder))
        track.append(otio.schema.Clip(name="mix", media_reference=ref, source_range=_range(0, end)))
        timeline.tracks.append(track)
    for scene, start_s in _scene_starts(voiced).items():
        heading = script.scenes[scene].heading if scene < len(script.scenes) else f"Scene {scene + 1}"
        timeline.tracks.markers.append(
            otio.schema.Marker(name=heading, marked_range=_range(_frames(start_s), 0))
        )
    return timeline


def _scene_starts(lines: Sequence[Line]) -> dict[int, float]:
    starts: dict[int, float] = {}
    for ln in lines:
        starts[ln.scene] = min(starts.get(ln.scene, ln.start_s), ln.start_s)
    return dict(sorted(starts.items(), key=lambda kv: kv[1]))


def write_timeline(path: Path, script: Script, lines: Sequence[Line], media: Mapping[int, Path],
                   per_line: bool, mix: Path | None = None) -> None:  # fmt: skip
    """The OTIO file at `path` and a REAPER project beside it (same name, `.rpp`)."""
    timeline = build_timeline(script, lines, media, path.parent, per_line, mix)
    otio.adapters.write_to_file(timeline, str(path))
    path.with_suffix(".rpp").write_text(reaper_project(timeline), encoding="utf-8")


def _quote(text: str) -> str:
    return '"' + text.replace('"', "'").replace("\n", " ") + '"'


def reaper_project(timeline: otio.schema.Timeline) -> str:
    """The timeline as a REAPER .rpp: a track per OTIO track, an item per clip, markers."""
    out = ['<REAPER_PROJECT 0.1 "6.0" 0', f"  SAMPLERATE {SAMPLE_RATE_HZ} 0 0"]
    for k, marker in enumerate(timeline.tracks.markers, start=1):
        out.append(f"  MARKER {k} {marker.marked_range.start_time.to_seconds():.6f} {_quote(marker.name)} 0")
    for track in timeline.tracks:
        out += ["  <TRACK", f"    NAME {_quote(track.name)}"]
        for clip in track.find_clips():
            where = track.range_of_child(clip)
            url = clip.media_reference.target_url
            kind = "FLAC" if url.lower().endswith(".flac") else "WAVE"
            out += ["    <ITEM", f"      POSITION {where.start_time.to_seconds():.6f}",
                    f"      LENGTH {where.duration.to_seconds():.6f}",
                    f"      SOFFS {clip.source_range.start_time.to_seconds():.6f}",
                    f"      NAME {_quote(clip.name)}", f"      <SOURCE {kind}", f"        FILE {_quote(url)}",
                    "      >", "    >"]  # fmt: skip
        out.append("  >")
    out.append(">")
    return "\n".join(out) + "\n"
