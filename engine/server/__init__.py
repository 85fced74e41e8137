"""The headless speech server: the scheduler behind HTTP, with Prometheus metrics."""

from engine.server.speech import SpeechService, SpeechSettings

__all__ = ["SpeechService", "SpeechSettings"]
