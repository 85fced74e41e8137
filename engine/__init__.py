"""Troupe engine: script import, casting, synthesis, mixing and audio output (no Qt)."""

__version__ = "0.1.0"
