"""Voice backends behind one `Synthesizer` protocol; the only package that may import torch."""

from engine.synthesis.base import Mono, Synthesizer, SynthRequest, VoiceInfo

__all__ = ["Mono", "SynthRequest", "Synthesizer", "VoiceInfo"]
