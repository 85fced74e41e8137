"""The streaming layout places every cue where `engine.mixer.layout` does, and its frontier
never passes a cue still to come (so a block mixed before that cue is never wrong)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.types import Cue
from engine.mixer import Pacing, layout
from engine.render.layout import StreamLayout

_cue = st.tuples(
    st.floats(0, 8),  # duration
    st.one_of(st.none(), st.floats(0, 60)),  # fixed start (subtitle slot)
    st.booleans(),  # overlaps the previous line
    st.booleans(),  # new scene
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(_cue, max_size=30), st.floats(0, 2), st.floats(0, 3))
def test_stream_layout_matches_layout(rows, gap_s, scene_gap_s) -> None:  # type: ignore[no-untyped-def]
    cues, durations, scene = [], {}, 0
    for k, (duration, start, overlaps, new_scene) in enumerate(rows):
        scene += new_scene
        cues.append(Cue(k, "A", "x", scene, k + 1, overlaps_previous=overlaps, start_s=start))
        durations[k] = duration
    pacing = Pacing(gap_s=gap_s, scene_gap_s=scene_gap_s)
    expected = layout(cues, durations, pacing)
    stream = StreamLayout(cues, pacing)
    for k, cue in enumerate(cues):
        frontier = stream.frontier_s()
        assert all(expected[c.index] >= frontier for c in cues[k:])
        assert stream.place(cue, durations[k]) == expected[k]
    assert stream.frontier_s() == float("inf")
