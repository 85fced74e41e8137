"""`play` in a terminal: the status line says what GO fires, keys run the transport's
commands, and the terminal is given back as it was."""

from __future__ import annotations

import os
import pty
import termios
from dataclasses import replace

from engine.control.console import command_for, keys, status_line
from engine.snapshot import CueView, EngineSnapshot, Figures


def _cue(k: int, role: str, state: str) -> CueView:
    return CueView(k, role, f"line {k}", 1, state, 2.0 * k, 1.5, 0.0, False, "", ())


def test_the_status_line_names_now_standby_late_and_xruns() -> None:
    cues = (_cue(0, "IRIS", "played"), _cue(1, "OWEN", "playing"), _cue(2, "CALLER", "ready"))
    snap = EngineSnapshot(version=1, cues=cues, playhead_s=62.5, end_s=3725.0, status="playing", go_cue=2,
                          figures=replace(Figures(), deadline_misses=3, xruns=1))  # fmt: skip
    line = status_line(snap)
    assert line.startswith("1:02.5 / 1:02:05.0  playing")
    assert "now 2 OWEN" in line and "standby 3 CALLER" in line and "late 3" in line and "xruns 1" in line
    assert len(status_line(snap, 30)) == 30 and status_line(snap, 30).endswith("…")
    assert "standby –" in status_line(replace(snap, go_cue=-1))


class FakeTransport:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return lambda: self.calls.append(name)


def test_keys_stand_for_the_transport_commands() -> None:
    t = FakeTransport()
    for key in " gGsp\x1bx":
        command = command_for(key, t)  # type: ignore[arg-type]
        if command is not None:
            command()
    assert t.calls == ["go", "go", "go", "stop", "toggle", "panic"]  # "x" is no command


def test_keys_are_read_one_at_a_time_and_the_terminal_is_restored() -> None:
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)
        with os.fdopen(os.dup(slave), "r") as stream, keys(stream) as read:
            assert read() == ""
            os.write(master, b"g s")  # no Enter: cbreak mode hands each key over at once
            got = ""
            for _ in range(50):
                got += read()
                if len(got) == 3:
                    break
            assert got == "g s"
            assert not termios.tcgetattr(slave)[3] & termios.ICANON  # while reading: no line mode
        assert termios.tcgetattr(slave) == before  # given back as it was
    finally:
        os.close(master)
        os.close(slave)


def test_input_that_is_not_a_terminal_gives_no_keys(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "in.txt"
    f.write_text("g")
    with f.open() as stream, keys(stream) as read:
        assert read() == ""
