"""The window's engine thread survives any exception in a command or a show tick."""

from __future__ import annotations

import itertools
import queue

import pytest

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


def test_a_burst_of_commands_lets_the_show_tick_between_them() -> None:
    # 300 commands of 1 ms each queued at once (a script typing ad-libs): the engine runs
    # them in turns of COMMANDS_TURN_S and ticks the show between, so the ring is kept fed
    import time

    from engine.service import COMMANDS_TURN_S

    troupe = Troupe(EngineSettings(neural=False))
    try:
        ticks: list[float] = []

        class CountingShow:
            def tick(self) -> None:
                ticks.append(time.monotonic())

        engine = troupe.engine
        engine.call(lambda: setattr(engine, "show", CountingShow()))
        ran: list[float] = []

        def work() -> None:
            t_end = time.monotonic() + 0.001
            while time.monotonic() < t_end:
                pass
            ran.append(time.monotonic())

        futures = [engine.command(work) for _ in range(300)]
        for f in futures:
            f.result(30)
        engine.call(lambda: setattr(engine, "show", None))
        during = [t for t in ticks if ran[0] < t < ran[-1]]
        assert len(during) >= 0.3 / COMMANDS_TURN_S / 2, len(during)  # ticks among the commands
        gaps = [b - a for a, b in itertools.pairwise(ran)]
        assert max(gaps) < 0.25  # and no tick waited for the whole burst
    finally:
        troupe.close()


def test_an_adlib_flood_is_refused_at_the_caller_once_the_engine_has_said_so(testdata) -> None:  # type: ignore[no-untyped-def]
    # the first ad-libs reach the engine thread, which queues what the show takes at a time
    # and refuses the rest; from then on the caller refuses at once, with the same message,
    # without a turn of the engine thread
    from engine.core.errors import TroupeError, message_shape

    troupe = Troupe(EngineSettings(neural=False))
    try:
        troupe.projects.load(testdata / "radio_play.txt").result(30)
        first = [troupe.lines.adlib("PAPA", f"Not now, {k}, not like this.") for k in range(20)]
        outcomes = []
        for f in first:
            try:
                outcomes.append(f.result(30).state.value)
            except TroupeError as exc:
                outcomes.append(message_shape(str(exc)))
        refused = {o for o in outcomes if "not spoken" in o}
        assert len(refused) == 1 and len(refused) < len(outcomes)
        with pytest.raises(TroupeError) as caught:
            troupe.lines.adlib("PAPA", "And once more.")  # no future: refused on this thread
        assert message_shape(str(caught.value)) in refused
    finally:
        troupe.close()
