"""Mixing: clips on a timeline, live mix controls, and cue layout."""

from engine.mixer.mixer import Clip, MixControls, Mixer, Stereo, equal_power, soft_limit
from engine.mixer.timeline import Pacing, layout

__all__ = [
    "Clip",
    "MixControls",
    "Mixer",
    "Pacing",
    "Stereo",
    "equal_power",
    "layout",
    "soft_limit",
]
