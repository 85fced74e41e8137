"""Audio I/O: the shared-memory MixRing, the real-time callback and the PortAudio stream.

The only package that imports sounddevice (and only in `output`).
"""

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import MixRing

__all__ = ["MixRing", "RenderState", "render"]
