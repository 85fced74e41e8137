"""Scenarios: a show played on virtual time, driven by a director's commands, judged by what
is heard.

    heard = run_show(script, [(4.0, "mute", "ELSA"), (9.0, "stop"), (9.5, "play")])
    heard.expect([("NARRATOR", 0.3, 3.5), ("PAPA", 5.0, 7.0)])

The show is the engine's own (`Show`, `Scheduler`, `MixRing`, the real espeak-ng voice and the
real audio callback `render`), but no sound card: show time moves only when the scenario
takes audio from the ring, block by block, so a command lands at an exact listening time and
a run repeats sample for sample. Which role is heard is read from the audio alone: each role
is panned to a place of its own across the stereo field (equal-power, so the ratio of the
two channels names the pan, whatever the level), and each 20 ms window of sound is given to
the role panned nearest to where it sits. Nothing of the engine's state is read to judge.

Times are listening times: seconds of audio the listener has heard since Play.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from show_harness import settle

from engine.audio_io.callback import RenderState, render
from engine.audio_io.ring import MixRing
from engine.cast import Cast
from engine.core.types import SAMPLE_RATE_HZ, RoleKey
from engine.scheduler import Backend, Scheduler, SchedulerConfig
from engine.script import load_script
from engine.script.common import normalise_role
from engine.show import Show
from engine.synthesis.espeak import EspeakSynthesizer

SR = SAMPLE_RATE_HZ
BLOCK = 1024
"""Frames the callback is asked for at a time (21 ms): the granularity of a command's time."""
WINDOW_S = 0.02
THRESHOLD = 0.01
"""RMS (of the louder channel) above which a window is sound."""
MERGE_GAP_S = 0.3
"""Pauses shorter than this inside one role's sound (a breath, a comma) are one stretch."""

Command = tuple  # (listening time s, name, *arguments)
"""`name` is one of COMMANDS; e.g. (4.0, "mute", "ELSA"), (2.0, "seek", 10.0), (1.0, "go")."""


@dataclass(frozen=True)
class Stretch:
    """One role heard without a break longer than `MERGE_GAP_S`."""

    role: str
    start_s: float
    end_s: float


@dataclass
class Heard:
    """What the listener heard: the audio, and who was heard when."""

    audio: np.ndarray
    stretches: list[Stretch]
    commands: list[tuple[float, str]] = field(default_factory=list)
    """(listening time, command) as applied: the log an assertion's message shows."""

    def roles(self) -> list[str]:
        """Who spoke, in order, a role once per turn."""
        out: list[str] = []
        for s in self.stretches:
            if not out or out[-1] != s.role:
                out.append(s.role)
        return out

    def at(self, t: float) -> str | None:
        """The role heard at listening time `t` (None: silence)."""
        for s in self.stretches:
            if s.start_s <= t < s.end_s:
                return s.role
        return None

    def during(self, start_s: float, end_s: float) -> set[str]:
        """Every role heard at some time in [start_s, end_s)."""
        return {s.role for s in self.stretches if s.start_s < end_s and s.end_s > start_s}

    def silent(self, start_s: float, end_s: float) -> bool:
        a, b = round(start_s * SR), round(end_s * SR)
        return not np.abs(self.audio[a:b]).max(initial=0.0) > THRESHOLD

    def expect(self, spans: Iterable[tuple[str | None, float, float]]) -> None:
        """Each (role, start s, end s): that role alone is heard over the whole span (None:
        nothing is). Fails with the whole listening log."""
        wrong = []
        for role, a, b in spans:
            if role is None:
                if not self.silent(a, b):
                    wrong.append(f"silence {a:.2f}-{b:.2f} s: heard {sorted(self.during(a, b)) or 'sound'}")
                continue
            key = normalise_role(role)
            covered = any(s.role == key and s.start_s <= a and s.end_s >= b for s in self.stretches)
            others = self.during(a, b) - {key}
            if not covered or others:
                wrong.append(f"{key} {a:.2f}-{b:.2f} s: heard {sorted(self.during(a, b))}")
        if wrong:
            raise AssertionError("; ".join(wrong) + "\n" + self.log())

    def log(self) -> str:
        heard = ", ".join(f"{s.role} {s.start_s:.2f}-{s.end_s:.2f}" for s in self.stretches)
        done = ", ".join(f"{c} at {t:.2f}" for t, c in self.commands)
        return f"heard: {heard or 'nothing'}\ncommands: {done or 'none'}"


def pans(roles: Sequence[RoleKey]) -> dict[RoleKey, float]:
    """A pan for each role, spread evenly from hard left to hard right."""
    if len(roles) == 1:
        return {roles[0]: 0.0}
    return {r: -1.0 + 2.0 * k / (len(roles) - 1) for k, r in enumerate(roles)}


def who(audio: np.ndarray, placed: dict[RoleKey, float]) -> list[Stretch]:
    """Who is heard in stereo `audio`, each role known by its pan in `placed`."""
    win = round(WINDOW_S * SR)
    n = len(audio) // win
    frames = audio[: n * win].reshape(n, win, 2)
    rms = np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1))  # (n, 2)
    loud = rms.max(axis=1) > THRESHOLD
    # equal power: left = cos(angle), right = sin(angle), angle = (pan + 1) * pi / 4
    pan = np.arctan2(rms[:, 1], rms[:, 0]) * 4 / math.pi - 1
    names = list(placed)
    where = np.array([placed[r] for r in names])
    out: list[list] = []
    for k in np.flatnonzero(loud):
        role = names[int(np.argmin(np.abs(where - pan[k])))]
        t = k * WINDOW_S
        if out and out[-1][0] == role and t - out[-1][2] <= MERGE_GAP_S:
            out[-1][2] = t + WINDOW_S
        else:
            out.append([role, t, t + WINDOW_S])
    return [Stretch(r, a, b) for r, a, b in out]


COMMANDS = ("play", "pause", "stop", "go", "skip", "seek", "mute", "unmute", "solo", "unsolo",
            "gain", "adlib", "retake", "cue_stack", "loop")  # fmt: skip


def _apply(show: Show, name: str, args: Sequence[object]) -> None:
    role = lambda: normalise_role(str(args[0]))  # noqa: E731
    match name:
        case "play":
            show.pause(False)
        case "pause":
            show.pause(True)
        case "stop":
            show.stop()
        case "go":
            show.go()
        case "skip":
            show.skip()
        case "seek":
            show.seek(float(args[0]))  # type: ignore[arg-type]
        case "mute" | "unmute":
            show.recast(role(), mute=name == "mute")
        case "solo" | "unsolo":
            show.recast(role(), solo=name == "solo")
        case "gain":
            show.recast(role(), gain_db=float(args[1]))  # type: ignore[arg-type]
        case "adlib":
            show.adlib(role(), str(args[1]))
        case "retake":
            show.retake(int(args[0]), str(args[1]) if len(args) > 1 else None)  # type: ignore[call-overload]
        case "cue_stack":
            show.set_cue_stack(bool(args[0]))
        case "loop":
            show.loop_scene(None if args[0] is None else int(args[0]))  # type: ignore[call-overload]
        case _:
            raise ValueError(f"unknown command {name!r}; one of {', '.join(COMMANDS)}")


class Stage:
    """A show on virtual time; `listen` plays it on, `command` directs it."""

    def __init__(self, script: Path, render_ahead_ms: float = 100, backends: dict[str, Backend] | None = None,
                 **show_kw: object) -> None:  # fmt: skip
        """`backends`: what voices the show (default: espeak-ng in this process)."""
        self.script = load_script(script)
        self.ring = MixRing(1 << 14)
        self.scheduler = Scheduler(backends or {"espeak": Backend(EspeakSynthesizer())}, SchedulerConfig())
        cast = Cast.auto(self.script)
        self.pans = pans(list(self.script.roles))
        for role, pan in self.pans.items():
            cast.set(role, pan=pan)
        self.show = Show(self.script, cast, self.scheduler, self.ring, render_ahead_ms=render_ahead_ms,
                         **show_kw)  # type: ignore[arg-type]  # fmt: skip
        self._out = np.zeros((BLOCK, 2), np.float32)
        self._played: list[np.ndarray] = []
        self.commands: list[tuple[float, str]] = []

    @property
    def heard_s(self) -> float:
        return len(self._played) * BLOCK / SR

    def settle(self) -> None:
        settle(self.show, self.scheduler)

    def listen(self, seconds: float) -> None:
        for _ in range(max(0, round(seconds * SR / BLOCK))):
            self.settle()
            render(self._out, self.ring, RenderState(self.ring.controls.playing))
            self._played.append(self._out.copy())

    def command(self, name: str, *args: object) -> None:
        _apply(self.show, name, args)
        self.commands.append((self.heard_s, " ".join([name, *map(str, args)])))
        self.settle()

    def heard(self) -> Heard:
        audio = np.concatenate(self._played) if self._played else np.zeros((0, 2), np.float32)
        return Heard(audio, who(audio, self.pans), list(self.commands))

    def close(self) -> None:
        self.show.close()
        self.scheduler.close()
        self.ring.close()


def run_show(script: Path, commands: Sequence[Command] = (), seconds: float | None = None,
             expect_heard: Iterable[tuple[str | None, float, float]] | None = None,
             **show_kw: object) -> Heard:  # fmt: skip
    """Press Play on `script`, apply each command at its listening time (in time order),
    listen until `seconds` (default: a second after the last command, or 60 s without
    any), and return what was heard; `expect_heard` is checked with `Heard.expect`."""
    stage = Stage(script, **show_kw)
    try:
        stage.command("play")
        for at, name, *args in sorted(commands, key=lambda c: c[0]):
            stage.listen(at - stage.heard_s)
            stage.command(name, *args)
        end = seconds if seconds is not None else (max((c[0] for c in commands), default=59.0) + 1.0)
        stage.listen(end - stage.heard_s)
        heard = stage.heard()
    finally:
        stage.close()
    if expect_heard is not None:
        heard.expect(expect_heard)
    return heard
