"""Monitor: what the window draws and tells, read without waiting on the engine."""

from __future__ import annotations

import queue

from engine.service import Engine
from engine.snapshot import EngineSnapshot


class Monitor:
    """The engine's state as immutable snapshots, and its messages for the banner."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.messages: queue.SimpleQueue[str] = engine.messages
        """Errors and notices for the banner (already user-readable), in order."""

    def snapshot(self) -> EngineSnapshot:
        """The latest snapshot (replaced whole by the engine thread, ~20 Hz)."""
        return self._engine.snapshot()

    def callbacks(self) -> int:
        """Audio callbacks run so far (the output's own count, in the ring's header)."""
        return self._engine.ring.stats.callbacks

    @property
    def engine_errors(self) -> int:
        """Exceptions the engine loop survived (each also reported in the banner)."""
        return self._engine.engine_errors
