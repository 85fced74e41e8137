"""Types and constants shared by every engine layer and by the GUI."""

from engine.core.errors import (
    AudioDeviceError,
    CastError,
    QueueFull,
    ScriptError,
    SynthesisError,
    TroupeError,
)
from engine.core.types import SAMPLE_RATE_HZ, Cue, Role, Scene, Script, Voice

__all__ = [
    "SAMPLE_RATE_HZ",
    "AudioDeviceError",
    "CastError",
    "Cue",
    "QueueFull",
    "Role",
    "Scene",
    "Script",
    "ScriptError",
    "SynthesisError",
    "TroupeError",
    "Voice",
]
