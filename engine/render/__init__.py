"""Offline render: a whole script to a mix, stems or clips, a cue sheet and a DAW timeline."""

from engine.render.pipeline import BLOCK_FRAMES, TAIL_S, render_script, safe_name
from engine.render.result import (
    STEM_MODES,
    LineTiming,
    Progress,
    RenderCancelled,
    RenderResult,
    StemOptions,
    write_cue_sheet,
)

__all__ = [
    "BLOCK_FRAMES",
    "STEM_MODES",
    "TAIL_S",
    "LineTiming",
    "Progress",
    "RenderCancelled",
    "RenderResult",
    "StemOptions",
    "render_script",
    "safe_name",
    "write_cue_sheet",
]
