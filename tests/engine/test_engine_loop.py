"""The window's engine thread survives any exception in a command or a show tick."""

from __future__ import annotations

import queue

from engine.service import Engine, EngineSettings


def _next_message(engine: Engine) -> str:
    try:
        return engine.messages.get(timeout=10)
    except queue.Empty:
        raise AssertionError("nothing was reported") from None


def test_a_failing_command_is_reported_and_the_engine_goes_on() -> None:
    engine = Engine(EngineSettings(neural=False))
    try:

        def bug() -> None:
            raise KeyError("a bug in one command")

        engine.post(bug)
        assert "internal error" in _next_message(engine)
        assert engine.call(lambda: 42) == 42  # the loop still turns
        assert engine.engine_errors == 1
    finally:
        engine.close()


def test_a_failing_show_tick_is_reported_and_the_engine_goes_on() -> None:
    engine = Engine(EngineSettings(neural=False))
    try:

        class BrokenShow:
            def tick(self) -> None:
                raise RuntimeError("a bug in the show")

        engine.call(lambda: setattr(engine, "show", BrokenShow()))
        assert "a bug in the show" in _next_message(engine)
        engine.call(lambda: setattr(engine, "show", None))
        assert engine.call(lambda: "alive") == "alive"
        assert engine.engine_errors >= 1
    finally:
        engine.close()
