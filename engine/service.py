"""The engine: what the facades (engine/control/) run their commands on.

`Engine` owns the engine thread, the ring, the scheduler, the show and the audio output.
Callers on other threads never touch those directly: commands are queued and run on the
engine thread, and state comes back as immutable `EngineSnapshot`s (see DESIGN.md).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from engine.audio_io.guard import OutputGuard
from engine.audio_io.output import (
    OutputSettings,
    raise_priority,
)
from engine.audio_io.ring import MixRing
from engine.cast import Cast
from engine.core.clock import Clock, monotonic
from engine.core.errors import EngineBusy, TroupeError
from engine.core.memory import steady_heap
from engine.core.types import Script
from engine.metrics import AnomalyDetector, Rolling
from engine.mixer import Pacing
from engine.mixer.envelope import EnvelopeCache
from engine.mixer.meters import Meters
from engine.scheduler import Request, Scheduler, SchedulerConfig, State
from engine.scheduler.backend import cluster_backends, standard_backends
from engine.scheduler.urgency import urgency
from engine.script import SUFFIXES
from engine.show import Show
from engine.show.listen import live_listener
from engine.show.prepare import LOOKAHEAD_S, predicted_slack
from engine.show.tracks import CueTrack
from engine.snapshot import HISTORY_COLUMNS, EngineSnapshot, build_snapshot, measure_levels
from engine.synthesis.base import VoiceInfo
from engine.synthesis.kokoro import warm_up_in_background

COMMANDS_TURN_S = 0.02
"""How long one engine turn runs queued commands before it ticks the show: a burst of
commands (10,000 ad-libs typed by a script) is spread over turns, so the ring is filled
between them and never runs dry while they are answered."""

log = logging.getLogger("troupe.engine")
LOOKAHEAD_EVERY_S = 0.25
"""How often the heatmap's look-ahead is worked out (a walk over the coming lines)."""
SCRIPT_SUFFIXES = frozenset(SUFFIXES)
"""Every script format the importers read (what the window's Open and drop accept)."""


T = TypeVar("T")
__all__ = ["SCRIPT_SUFFIXES", "Engine", "EngineSettings", "wait"]


@dataclass(frozen=True)
class EngineSettings:
    """How the engine runs; every field can come from the command line or the GUI."""

    processes: int = 1
    """espeak-ng worker processes (1 = in this process)."""
    policy: str = "role_aware"
    output: OutputSettings = field(default_factory=OutputSettings)
    audio_process: bool = True
    """Run the output stream in its own process (the default: GUI redraws and synthesis in
    this process cannot delay its callback); False runs it here, for debugging."""
    render_ahead_ms: float = 200.0
    pacing: Pacing = field(default_factory=Pacing)
    ring_frames: int = 1 << 15
    neural: bool = True
    """Offer Kokoro voices when the neural extra is installed."""
    cluster: str = ""
    """Voice on the Ray cluster at this address (`auto`: this machine's, or a local one); the
    scheduler, the mix and the output stay here. Empty: voice here."""


class Engine:
    """The running engine; thread-safe methods that post to the engine thread."""

    def __init__(self, settings: EngineSettings | None = None, clock: Clock = monotonic) -> None:
        self.settings = settings or EngineSettings()
        self.clock = clock
        steady_heap()
        self.ring = MixRing(self.settings.ring_frames)
        # Neural models load when a role is first cast to them (see `_warm_up`), not at start.
        if self.settings.cluster:
            backends = cluster_backends(self.settings.cluster, self.settings.processes, self.settings.neural)
        else:
            backends = standard_backends(self.settings.processes, self.settings.neural, warm_up=False)
        self.scheduler = Scheduler(backends, SchedulerConfig(policy=self.settings.policy), clock)
        self.script: Script | None = None
        self.cast = Cast()
        self.show: Show | None = None
        self.guard = OutputGuard(self.ring, self._say, clock)
        """The output stream, watched and reopened after a fault (see `output`)."""
        self.project_path: Path | None = None
        self.project_extras: dict[str, Any] = {}
        """The open project's `lexicon` and `delivery` tables, written back on save."""
        self.edits: dict[int, str] = {}
        self.messages: queue.SimpleQueue[str] = queue.SimpleQueue()
        """Errors and notices for the GUI's banner (already user-readable)."""
        self._commands: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._snapshot = EngineSnapshot(version=0)
        self._version = 0
        self.history = np.zeros((0, HISTORY_COLUMNS), np.float32)
        """Each role's urgency per scheduler tick (the heatmap)."""
        self.work_history = np.zeros((0, HISTORY_COLUMNS), np.float32)
        """Each role's queued synthesis time (s) per tick."""
        """Role priorities, roles x HISTORY_COLUMNS (the heatmap), written on the engine thread."""
        self._last_history_t = 0.0
        self._last_lookahead_t = 0.0
        self._ahead: dict[str, float] = {}
        """Each role's urgency from its predicted slack (the heatmap's look-ahead)."""
        self.adlib_ms = Rolling(120.0, clock)
        self.audible_ms = Rolling(120.0, clock)
        self.queue_wait_ms = Rolling(60.0, clock)
        self.anomalies = AnomalyDetector(clock=clock)
        self.meters = Meters()
        self.envelopes = EnvelopeCache()
        self._latency_points: list[tuple[float, float, bool]] = []
        self._warm_ups: dict[str, threading.Thread] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self.engine_errors = 0
        """Exceptions the engine loop survived (each also reported in the banner)."""
        self._thread = threading.Thread(target=self._run, name="troupe-engine", daemon=True)
        self._thread.start()
        if self._thread.native_id is not None:  # the mixer keeps the ring ahead of the callback
            raise_priority(self._thread.native_id, fifo=False, nice=-5)

    # --- engine thread -------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._turn()
            except TroupeError as exc:
                self.messages.put(str(exc))
            except Exception as exc:  # the show goes on: report it, never die silently
                self.engine_errors += 1
                log.exception("engine loop: a turn failed; going on")
                self.messages.put(f"internal error in the engine (it keeps running): {exc!r}")
            self._wake.wait(0.005)
            self._wake.clear()

    def _turn(self) -> None:
        t_end = self.clock() + COMMANDS_TURN_S
        try:
            while True:
                self._commands.get_nowait()()
                if self.clock() > t_end:  # the rest after this turn's tick: audio first
                    self._wake.set()
                    break
        except queue.Empty:
            pass
        if self.show is not None:
            self.show.tick()
        self.guard.poll()
        output = self.guard.output  # NB: one reference read
        if output is not None:
            output.sync_controls()
        self._record()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Run `fn` on the engine thread; the future holds its result or its error. What
        the GUI uses: it never waits on the engine (see `app/pending.py`)."""
        fut: Future[T] = Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as exc:
                fut.set_exception(exc)

        self._commands.put(run)
        self._wake.set()
        return fut

    def call(self, fn: Callable[[], T], timeout_s: float = 10.0) -> T:
        """Run `fn` on the engine thread and return its result (or raise its error)."""
        return wait(self.submit(fn), timeout_s)

    def command(self, fn: Callable[[], None]) -> Future[None]:
        """Run `fn` on the engine thread soon; the future holds its outcome, and an error
        also goes to the message banner (a director's command nobody waits on)."""
        fut: Future[None] = Future()

        def run() -> None:
            try:
                fn()
            except TroupeError as exc:
                self.messages.put(str(exc))
                fut.set_exception(exc)
            except Exception as exc:
                self.engine_errors += 1
                log.exception("engine command failed")
                self.messages.put(f"internal error in the engine (it keeps running): {exc!r}")
                fut.set_exception(exc)
            else:
                fut.set_result(None)

        self._commands.put(run)
        self._wake.set()
        return fut

    def _record(self) -> None:
        now = self.clock()
        if now - self._last_history_t < 0.05:
            return
        self._last_history_t = now
        show = self.show
        if show is not None:
            heard = self.ring.controls.playing and self.guard.output is not None
            measure_levels(show, self.ring, self.meters, heard, now)
        if show is not None and self.history.shape[0]:
            pr, work = self.scheduler.role_priorities(), self.scheduler.role_work()
            if now - self._last_lookahead_t >= LOOKAHEAD_EVERY_S:
                self._last_lookahead_t = now
                self._ahead = {r: urgency(s) for r, s in self._predicted_slack(show).items()}
            self.history = np.roll(self.history, -1, axis=1)
            self.history[:, -1] = [max(pr.get(r, 0.0), self._ahead.get(r, 0.0)) for r in show.script.roles]
            self.work_history = np.roll(self.work_history, -1, axis=1)
            self.work_history[:, -1] = [work.get(r, 0.0) for r in show.script.roles]
        self._snapshot = self._build_snapshot()

    def _predicted_slack(self, show: Show) -> dict[str, float]:
        """Each role's least predicted slack over the coming lines (engine/show/prepare.py),
        from its backend's measured speed: the heatmap's look-ahead."""
        backends = self.scheduler.backends
        fallback = backends["espeak"]

        def cost(t: CueTrack) -> tuple[str, float]:
            b = backends.get(t.backend, fallback)
            return b.name, b.cost_per_audio_s * b.pace * t.est_duration_s

        planned = show.planner.starts
        return predicted_slack(
            show.tracks, lambda i: planned.get(i, 0.0), show.times.write_s, LOOKAHEAD_S, cost
        )

    def _on_request_done(self, r: Request) -> None:
        if r.state is State.DONE:
            self.queue_wait_ms.add((r.t_dispatched - r.t_enqueued) * 1000)
            self.anomalies.observe("synthesize", (r.t_done - r.t_dispatched) * 1000, str(r.id))

    def _build_snapshot(self) -> EngineSnapshot:
        self._version += 1
        return build_snapshot(self, self._version, self.settings.output.block_frames)

    # --- any thread ------------------------------------------------------------------
    def snapshot(self) -> EngineSnapshot:
        """The latest snapshot (replaced whole by the engine thread, ~20 Hz)."""
        return self._snapshot  # NB: one reference read of an immutable object

    def natural_voices(self) -> list[VoiceInfo]:
        """The non-espeak voices of this engine's backends (what auto-casting offers)."""
        return [v for b in self.scheduler.backends.values() if b.name != "espeak" for v in b.synth.voices()]

    # --- engine thread: what the facades (engine/control/) build on --------------------
    def current_show(self) -> Show:
        """The show on the stage; a `TroupeError` when no script is loaded."""
        if self.show is None:
            raise TroupeError("no script is loaded")
        return self.show

    def install(self, script: Script, cast: Cast, edits: dict[int, str]) -> None:
        """Make `script` the show, cast as `cast`, with the director's `edits` (cue -> text)."""
        if self.show is not None:
            self.show.close()
        self.ring.controls.set(playing=False, gain=self.ring.controls.gain)
        self.ring.reset()
        self.script, self.cast, self.edits = script, cast, dict(edits)
        if edits:
            cues = tuple(c.with_text(edits[c.index]) if c.index in edits else c for c in script.cues)
            script = replace(script, cues=cues)
        self.show = Show(script, cast, self.scheduler, self.ring, self.settings.pacing,
                         self.settings.render_ahead_ms, clock=self.clock)  # fmt: skip
        self.show.on_request_done = self._on_request_done
        self.show.listener = live_listener()  # TROUPE_LIVE_CHECK=1: the line check, off the real-time path
        self.prepare_roles(cast.voices.keys())
        self.history = np.zeros((len(script.roles), HISTORY_COLUMNS), np.float32)
        self.work_history = np.zeros((len(script.roles), HISTORY_COLUMNS), np.float32)
        self._snapshot = self._build_snapshot()

    def prepare_roles(self, roles: Iterable[str]) -> None:
        """Roles newly cast: tell the director (banner) which are cast to a backend not
        installed here (the cast is kept, espeak-ng stands in), and start loading each
        neural model they use (once each, so a first line does not wait for the load;
        `close` waits for every load it started)."""
        roles = list(roles)
        missing: dict[str, list[str]] = {}
        for role in roles:
            backend = self.cast[role].backend
            if backend not in self.scheduler.backends:
                missing.setdefault(backend, []).append(role)
        for backend, names in missing.items():
            self.messages.put(f"{', '.join(sorted(names))}: cast to {backend} voices, which are not "
                              f"available here; espeak-ng stands in (the cast is kept)")  # fmt: skip
        for role in roles:
            name = self.cast[role].backend
            found = self.scheduler.backends.get(name)
            if name != "espeak" and found is not None and name not in self._warm_ups:
                thread = warm_up_in_background(found.synth)
                if thread is not None:
                    self._warm_ups[name] = thread

    def _say(self, message: str) -> None:
        self.messages.put(message)

    def close(self) -> None:
        with contextlib.suppress(TroupeError):
            wait(self.submit(self.guard.close), 5)
        self._stop.set()
        self._wake.set()
        self._thread.join(10)
        self.guard.close()  # NB: if the engine thread did not answer
        for thread in self._warm_ups.values():
            thread.join()  # a model still loading must not outlive the interpreter
        if self.show is not None:
            self.show.close()
        self.scheduler.close()
        for b in self.scheduler.backends.values():
            b.synth.close()
        self.ring.close()


def wait(fut: Future[T], timeout_s: float = 10.0) -> T:
    """The future's result; an engine that does not answer in time is a `TroupeError`."""
    try:
        return fut.result(timeout_s)
    except FutureTimeout:
        raise EngineBusy(f"the engine did not answer within {timeout_s:g} s; try again") from None
