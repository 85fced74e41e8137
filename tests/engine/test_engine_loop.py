"""The window's engine thread survives any exception in a command or a show tick."""

from __future__ import annotations

import queue

from engine.control import EngineSettings, Troupe


def _next_message(troupe: Troupe) -> str:
    try:
        return troupe.engine.messages.get(timeout=10)
    except queue.Empty:
        raise AssertionError("nothing was reported") from None


def test_a_failing_command_is_reported_and_the_engine_goes_on() -> None:
    troupe = Troupe(EngineSettings(neural=False))
    try:

        def bug() -> None:
            raise KeyError("a bug in one command")

        troupe.engine.command(bug)
        assert "internal error" in _next_message(troupe)
        assert troupe.engine.call(lambda: 42) == 42  # the loop still turns
        assert troupe.engine.engine_errors == 1
    finally:
        troupe.close()


def test_a_failing_show_tick_is_reported_and_the_engine_goes_on() -> None:
    troupe = Troupe(EngineSettings(neural=False))
    try:

        class BrokenShow:
            def tick(self) -> None:
                raise RuntimeError("a bug in the show")

        troupe.engine.call(lambda: setattr(troupe.engine, "show", BrokenShow()))
        assert "a bug in the show" in _next_message(troupe)
        troupe.engine.call(lambda: setattr(troupe.engine, "show", None))
        assert troupe.engine.call(lambda: "alive") == "alive"
        assert troupe.engine.engine_errors >= 1
    finally:
        troupe.close()
