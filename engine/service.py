"""The engine facade: what the GUI, the CLI and the server talk to.

`Engine` owns the engine thread, the ring, the scheduler, the show and the audio output.
Callers on other threads never touch those directly: commands are queued and run on the
engine thread, and state comes back as immutable `EngineSnapshot`s (see DESIGN.md).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from engine.audio_io.guard import OutputGuard
from engine.audio_io.output import (
    AudioOutput,
    AudioProcess,
    OutputSettings,
    list_output_devices,
    play_once,
    raise_priority,
)
from engine.audio_io.ring import MixRing
from engine.cast import Cast, save_project, validate_voice
from engine.core.clock import Clock, monotonic
from engine.core.errors import EngineBusy, SynthesisError, TroupeError
from engine.core.process import steady_heap
from engine.core.types import Script, Voice
from engine.export import available_formats
from engine.metrics import AnomalyDetector, Rolling
from engine.mixer import Pacing
from engine.mixer.envelope import BUCKETS_PER_S, EnvelopeCache
from engine.mixer.meters import Level, Meters
from engine.project import edit_anchors, read_project, use_voicing
from engine.render import Progress, RenderResult, render_script
from engine.scheduler import Request, Scheduler, SchedulerConfig, State
from engine.scheduler.backend import neural_voice_ids, standard_backends
from engine.script import SUFFIXES, load_script
from engine.script.common import normalise_role
from engine.script.limits import MAX_LINE_CHARS
from engine.script.options import ImportOptions, chosen_options
from engine.script.report import report_text
from engine.show import Show
from engine.show_adlibs import PREVIEW_ROLE
from engine.show_listen import live_listener
from engine.snapshot import HISTORY_COLUMNS, CueView, EngineSnapshot, Figures, build_snapshot, measure_levels
from engine.synthesis.base import VoiceInfo
from engine.synthesis.espeak import EspeakSynthesizer, espeak_variants, espeak_voices
from engine.synthesis.kokoro import warm_up_in_background
from engine.synthesis.router import Router

log = logging.getLogger("troupe.engine")
SCRIPT_SUFFIXES = frozenset(SUFFIXES)
"""Every script format the importers read (what the window's Open and drop accept)."""


def _script_ref(script: str | Path, project: str | Path) -> str:
    """The script as a project file names it: beside or under the project's folder, relative
    to it (the two move together); elsewhere, absolute. Never relative to the folder Troupe
    was started in, which the reopening does not know."""
    target = Path(script).resolve()
    folder = Path(project).resolve().parent
    return str(target.relative_to(folder)) if target.is_relative_to(folder) else str(target)


def preview_import(path: str | Path, options: ImportOptions | None = None) -> Script:
    """Read a script for its import report without making it the show (the window's
    import dialog; `Engine.begin_load` with the chosen options then makes it the show)."""
    return load_script(path, options)


T = TypeVar("T")
__all__ = [
    "BUCKETS_PER_S",
    "HISTORY_COLUMNS",
    "CueView",
    "Engine",
    "EngineSettings",
    "EngineSnapshot",
    "Figures",
    "ImportOptions",
    "Level",
    "VoiceInfo",
    "available_formats",
    "preview_import",
    "report_text",
    "wait",
]


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


class Engine:
    """The running engine; thread-safe methods that post to the engine thread."""

    def __init__(self, settings: EngineSettings | None = None, clock: Clock = monotonic) -> None:
        self.settings = settings or EngineSettings()
        self.clock = clock
        steady_heap()
        self.ring = MixRing(self.settings.ring_frames)
        # Neural models load when a role is first cast to them (see `_warm_up`), not at start.
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
        try:
            while True:
                self._commands.get_nowait()()
        except queue.Empty:
            pass
        if self.show is not None:
            self.show.tick()
        self.guard.poll()
        if self.output is not None:
            self.output.sync_controls()
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

    def post(self, fn: Callable[[], None]) -> None:
        """Run `fn` on the engine thread soon; errors go to the message banner."""

        def run() -> None:
            try:
                fn()
            except TroupeError as exc:
                self.messages.put(str(exc))
            except Exception as exc:
                self.engine_errors += 1
                log.exception("engine command failed")
                self.messages.put(f"internal error in the engine (it keeps running): {exc!r}")

        self._commands.put(run)
        self._wake.set()

    def _record(self) -> None:
        now = self.clock()
        if now - self._last_history_t < 0.05:
            return
        self._last_history_t = now
        show = self.show
        if show is not None:
            measure_levels(show, self.ring, self.meters, self.ring.playing and self.output_open, now)
        if show is not None and self.history.shape[0]:
            pr, work = self.scheduler.role_priorities(), self.scheduler.role_work()
            self.history = np.roll(self.history, -1, axis=1)
            self.history[:, -1] = [pr.get(r, 0.0) for r in show.script.roles]
            self.work_history = np.roll(self.work_history, -1, axis=1)
            self.work_history[:, -1] = [work.get(r, 0.0) for r in show.script.roles]
        self._snapshot = self._build_snapshot()

    def _on_request_done(self, r: Request) -> None:
        if r.state is State.DONE:
            self.queue_wait_ms.add((r.t_dispatched - r.t_enqueued) * 1000)
            self.anomalies.observe("synthesize", (r.t_done - r.t_dispatched) * 1000, str(r.id))

    def _build_snapshot(self) -> EngineSnapshot:
        self._version += 1
        return build_snapshot(self, self._version)

    # --- any thread: queries ---------------------------------------------------------
    def snapshot(self) -> EngineSnapshot:
        """The latest snapshot (replaced whole by the engine thread, ~20 Hz)."""
        return self._snapshot  # NB: one reference read of an immutable object

    def voice_ids(self) -> list[str]:
        """Voices a role can be cast to: each backend's list, as `voice_id` strings."""
        ids = [v.voice_id for v in espeak_voices()]
        english = [v for v in ids if v.startswith("en")]
        variants = [v.voice_id for v in espeak_variants()]
        return neural_voice_ids(self.scheduler.backends) + sorted(
            set(ids) | {f"{e}+{k}" for e in english for k in variants}
        )

    def voice_catalog(self) -> list[VoiceInfo]:
        """Every voice a role can be cast to, with its language and gender: each backend's
        voices, and each English espeak-ng voice with each variant (named after both).
        `voice_id` is what a cast names (`backend:voice` beyond espeak-ng)."""
        out: list[VoiceInfo] = []
        for b in self.scheduler.backends.values():
            if b.name != "espeak":
                out += [replace(v, voice_id=f"{b.name}:{v.voice_id}") for v in b.synth.voices()]
        langs = espeak_voices()
        out += [replace(v, gender="") for v in langs]  # a language voice's timbre is its variant's
        for lang in (v for v in langs if v.voice_id.startswith("en")):
            for var in espeak_variants():
                gender = {"f": "female", "m": "male"}.get(var.gender, "")
                vid, name = f"{lang.voice_id}+{var.voice_id}", f"{lang.name} · {var.name}"
                out.append(VoiceInfo("espeak", vid, name, lang.language, gender))
        return out

    def preview(self, voice_id: str, text: str) -> Future[None]:
        """Speak `text` in a voice (`kokoro:af_heart`, or an espeak-ng id) for the director:
        over the show when it plays, else on the output device by itself. No cue item; the
        future resolves once it is voiced."""
        text = text.strip() or "This is how I sound."
        voice = validate_voice(Voice(voice_id=voice_id.strip() or "en-us"), "preview")
        result: Future[None] = Future()

        def voiced(r: Request) -> None:
            if r.state is not State.DONE or r.audio is None or not r.audio.size:
                why = r.error or "nothing was voiced"
                result.set_exception(SynthesisError(f"preview of {voice_id}: {why}"))
                return
            show = self.show
            try:
                if show is not None and show.running and self.output_open:
                    show.adlibs.splice(PREVIEW_ROLE, r.audio, -1)
                else:
                    play_once(r.audio, self.settings.output)
            except Exception as exc:  # a busy or missing device: the banner says so
                result.set_exception(TroupeError(f"preview of {voice_id}: cannot play it ({exc})"))
                return
            result.set_result(None)

        def start() -> None:
            try:
                self._show().adlibs.preview(voice, text, voiced)
            except TroupeError as exc:
                result.set_exception(exc)

        self.post(start)
        return result

    def natural_voices(self) -> list[VoiceInfo]:
        """The non-espeak voices of this engine's backends (what auto-casting offers leads)."""
        return [v for b in self.scheduler.backends.values() if b.name != "espeak" for v in b.synth.voices()]

    def output_devices(self) -> list[str]:
        """Output devices as '<index>: <name> (<host API>)' for a device chooser."""
        return [f"{d['index']}: {d['name']} ({d['hostapi']})" for d in list_output_devices()]

    # --- any thread: commands --------------------------------------------------------
    def load(self, path: str | Path, keep_cast: bool = True, options: ImportOptions | None = None) -> Script:
        """Import a script and make it the show; on a bad file the current show stays."""
        return wait(self.begin_load(path, keep_cast, options))

    def begin_load(
        self, path: str | Path, keep_cast: bool = True, options: ImportOptions | None = None
    ) -> Future[Script]:
        """`load` without waiting: the file is read here (a bad one raises `ScriptError` at
        once, before anything changes); the future resolves once it is the show. `options`:
        the encoding and dialogue styles chosen in the import report."""
        script = load_script(path, options)

        def swap() -> Script:
            # Only a reload of the same file keeps the cast: another script never inherits it.
            same = self.script is not None and self.script.path == script.path
            keep = self.cast.voices if keep_cast and same else None
            if not same:  # nor another project's pronunciations and delivery hints
                use_voicing(None)
                self.project_extras = {}
            self._install(script, Cast.auto(script, keep, natural=self.natural_voices()), {})
            return script

        return self.submit(swap)

    def _install(self, script: Script, cast: Cast, edits: dict[int, str]) -> None:
        if self.show is not None:
            self.show.close()
        self.ring.set_controls(playing=False, gain=self.ring.gain)
        self.ring.reset()
        self.script, self.cast, self.edits = script, cast, dict(edits)
        if edits:
            cues = tuple(c.with_text(edits[c.index]) if c.index in edits else c for c in script.cues)
            script = replace(script, cues=cues)
        self.show = Show(script, cast, self.scheduler, self.ring, self.settings.pacing,
                         self.settings.render_ahead_ms, clock=self.clock)  # fmt: skip
        self.show.on_request_done = self._on_request_done
        self.show.listener = live_listener()  # TROUPE_LIVE_CHECK=1: the line check, off the real-time path
        self._warn_missing_backends(cast.voices.keys())
        self._warm_up(cast.voices.keys())
        self.history = np.zeros((len(script.roles), HISTORY_COLUMNS), np.float32)
        self.work_history = np.zeros((len(script.roles), HISTORY_COLUMNS), np.float32)
        self._snapshot = self._build_snapshot()

    def _say(self, message: str) -> None:
        self.messages.put(message)

    @property
    def output(self) -> AudioOutput | AudioProcess | None:
        return self.guard.output  # NB: one reference read

    @property
    def output_open(self) -> bool:
        return self.output is not None

    @property
    def output_lost(self) -> str:
        """Why the output was lost while Troupe reopens it ('' when it plays or is closed)."""
        return self.guard.lost

    @property
    def block_frames(self) -> int:
        return self.settings.output.block_frames

    def open_output(self) -> None:
        """Open the audio device (in the audio process by default, or in this process)."""
        wait(self.begin_open_output(), 30)

    def begin_open_output(self) -> Future[None]:
        def open_() -> None:
            if self.output is None:
                self.guard.open(self.settings.output, self.settings.audio_process)

        return self.submit(open_)

    def close_output(self) -> None:
        wait(self.submit(self._close_output), 30)

    def _close_output(self) -> None:
        self.guard.close()

    def set_device(self, device: str | int | None) -> None:
        wait(self.begin_set_device(device), 60)

    def begin_set_device(self, device: str | int | None) -> Future[None]:
        """Switch the output device (reopened at once if it was open)."""

        def switch() -> None:
            was_open = self.output is not None or bool(self.guard.lost)
            self._close_output()
            self.settings = replace(self.settings, output=replace(self.settings.output, device=device))
            if was_open:
                self.guard.open(self.settings.output, self.settings.audio_process)

        return self.submit(switch)

    def play(self) -> None:
        """Play from where the clock is (from the top after Stop or the end)."""
        self.post(lambda: self._show().pause(False))

    def pause(self) -> None:
        self.post(lambda: self._show().pause(True))

    def toggle(self) -> None:
        self.post(lambda: self._show().pause(self._show().running))

    def stop(self) -> None:
        """Stop and go back to the top: clock 0, every cue pending."""
        self.post(lambda: self._show().stop())

    def panic(self) -> None:
        """Silence now: pause and drop everything queued in the ring."""

        def panic_() -> None:
            if self.show is None:
                self.ring.set_controls(playing=False, gain=self.ring.gain)
                self.ring.reset()
                return
            self.show.pause(True)
            self.show.seek(self.show.playhead_s)

        self.post(panic_)

    def seek(self, show_s: float) -> None:
        self.post(lambda: self._show().seek(show_s))

    def jump_to_cue(self, index: int) -> None:
        self.post(lambda: self._show().seek(self._show().planned_start_s(index)))

    def go(self) -> None:
        """GO: start playing, or in cue-stack mode release the next cue."""

        def go_() -> None:
            show = self._show()
            if show.cue_stack:
                show.go()
            else:
                show.pause(False)

        self.post(go_)

    def set_cue_stack(self, on: bool) -> None:
        """Cue-stack mode: every cue waits for GO, the clock holding while one waits."""
        self.post(lambda: self._show().set_cue_stack(on))

    def keep_adlib(self, index: int, keep: bool = True) -> None:
        """Keep an ad-lib in the show: it becomes a cue at the time it was heard
        (`keep=False` undoes that: heard once again)."""

        def keep_() -> None:
            adlibs = self._show().adlibs
            adlibs.keep(index) if keep else adlibs.unkeep(index)

        self.post(keep_)

    def delete_adlib(self, index: int, delete: bool = True) -> None:
        """Remove an ad-lib from the cue list, the timeline and the mix (`delete=False`
        brings a deleted one back)."""
        self.post(lambda: self._show().adlibs.delete(index) if delete else self._show().adlibs.restore(index))

    def loop_scene(self, scene: int | None) -> None:
        self.post(lambda: self._show().loop_scene(scene))

    def skip(self, direction: int = 1) -> None:
        def skip_() -> None:
            show = self._show()
            if direction > 0:
                show.skip()
            else:
                head = show.playhead_s
                earlier = [
                    s for s in (show.planned_start_s(t.cue.index) for t in show.tracks) if s < head - 0.5
                ]
                show.seek(max(earlier) if earlier else 0.0)

        self.post(skip_)

    def adlib(self, role: str, text: str) -> Future[Request]:
        """Speak a typed line as `role` as soon as possible; the future resolves to the
        request once it is placed in the mix (or has failed)."""
        text = text.strip()
        if not text:
            raise TroupeError("an ad-lib needs some text")
        if len(text) > 2000:
            raise TroupeError("an ad-lib is limited to 2000 characters")

        result: Future[Request] = Future()
        t0 = self.clock()

        def finished(req: Request) -> None:
            if req.t_placed:
                self.adlib_ms.add((req.t_placed - t0) * 1000)
                self.audible_ms.add((req.t_played - t0) * 1000)
            result.set_result(req)

        def adlib_() -> None:
            try:
                r = self._show().adlib(normalise_role(role), text)
            except TroupeError as exc:
                result.set_exception(exc)
                raise
            r.t_enqueued = t0  # latency counts from the director's Enter, not the engine's pickup
            r.on_done = _chain(r.on_done, finished)

        self.post(adlib_)
        return result

    def edit_line(self, index: int, text: str) -> None:
        text = text.strip()
        if not text:
            raise TroupeError(f"cue {index + 1}: a line cannot be empty")
        if len(text) > MAX_LINE_CHARS:
            raise TroupeError(f"cue {index + 1}: a line is limited to {MAX_LINE_CHARS:,} characters")

        def edit() -> None:
            self.edits[index] = text
            self._show().retake(index, text)

        self.post(edit)

    def set_voice(self, role: str, **changes: Any) -> None:
        """Change a role's voice or mix settings live (validated; errors go to the banner).
        `role` as the script writes it or any spelling of it ('Iris (V.O.)' is IRIS)."""
        key = normalise_role(role)
        self.post(lambda: self._recast(key, changes))

    def _recast(self, role: str, changes: dict[str, Any]) -> None:
        if self.script is not None and role not in self.script.roles and role not in self.cast.voices:
            raise TroupeError(
                f"no role {role!r} in this script; its roles: {', '.join(list(self.script.roles)[:8])}"
            )
        self._show().recast(role, **changes)
        if "backend" in changes or "voice_id" in changes:
            self._warn_missing_backends([role])
            self._warm_up([role])

    def _warm_up(self, roles: Iterable[str]) -> None:
        """Start loading the model of each neural backend a role is cast to (once each), so
        its first line does not wait for the load; `close` waits for every load it started."""
        for role in roles:
            name = self.cast[role].backend
            backend = self.scheduler.backends.get(name)
            if name != "espeak" and backend is not None and name not in self._warm_ups:
                thread = warm_up_in_background(backend.synth)
                if thread is not None:
                    self._warm_ups[name] = thread

    def _warn_missing_backends(self, roles: Iterable[str]) -> None:
        """Tell the director (banner) which roles are cast to a backend not installed here:
        the cast is kept (the project stays as saved), and espeak-ng stands in."""
        missing: dict[str, list[str]] = {}
        for role in roles:
            backend = self.cast[role].backend
            if backend not in self.scheduler.backends:
                missing.setdefault(backend, []).append(role)
        for backend, names in missing.items():
            self.messages.put(f"{', '.join(sorted(names))}: cast to {backend} voices, which are not "
                              f"available here; espeak-ng stands in (the cast is kept)")  # fmt: skip

    def _show(self) -> Show:
        if self.show is None:
            raise TroupeError("no script is loaded")
        return self.show

    # --- projects and export ---------------------------------------------------------
    def save_project(self, path: str | Path, as_current: bool = True) -> None:
        """Save script path, cast and edits; `as_current=False` for an autosave copy."""
        wait(self.begin_save_project(path, as_current))

    def begin_save_project(self, path: str | Path, as_current: bool = True) -> Future[None]:
        def save() -> None:
            if self.script is None:
                raise TroupeError("nothing to save: no script is loaded")
            chosen = chosen_options(self.script.facts).to_dict()
            extras = {k: v for k, v in self.project_extras.items() if k != "import"}
            if chosen:
                extras["import"] = chosen
            anchors = edit_anchors(self.script, self.edits)  # each edit with its line as imported
            edits = {k: {"text": v, "was": anchors[k].was, "line": anchors[k].line} if k in anchors else v
                     for k, v in self.edits.items()}  # fmt: skip
            save_project(path, _script_ref(self.script.path, path), self.cast, edits, extras)
            if as_current:
                self.project_path = Path(path)

        return self.submit(save)

    def open_project(self, path: str | Path, options: ImportOptions | None = None) -> Script:
        return wait(self.begin_open_project(path, options))

    def begin_open_project(self, path: str | Path, options: ImportOptions | None = None) -> Future[Script]:
        """`open_project` without waiting (files read here; errors raised at once);
        `options` over the import choices the project saved."""
        project = read_project(path)
        script = load_script(project.script, options or project.import_options)
        edits, lost = project.edits_on(script)

        def swap() -> Script:
            self._install(
                script, Cast.auto(script, project.cast.voices, natural=self.natural_voices()), edits
            )
            for what in lost:  # told, with its text, never put on another line
                self.messages.put(f"an edit could not be placed: {what}")
            use_voicing(project)
            self.project_extras = project.extras
            self.project_path = Path(path)
            return script

        return self.submit(swap)

    def render(self, out: str | Path, stems: str | Path | None = None, progress: Progress | None = None,
               cancel: threading.Event | None = None,
               cues: Collection[int] | None = None) -> RenderResult:  # fmt: skip
        """Offline render of the current show (on the caller's thread, own synthesizer);
        `cues` limits it to those cues (a scene, a selection), laid out from time 0."""
        script, cast, edits = self.call(lambda: (self.script, Cast(dict(self.cast.voices)), dict(self.edits)))
        if script is None:
            raise TroupeError("nothing to render: no script is loaded")
        if cues is not None:
            chosen = tuple(c for c in script.cues if c.index in cues)
            if not chosen:
                raise TroupeError("nothing to render: the range holds no line of the script")
            script = replace(script, cues=chosen)
        neural = {n: b.synth for n, b in self.scheduler.backends.items() if n != "espeak"}  # thread-safe
        synth = Router({"espeak": EspeakSynthesizer(), **neural})
        return render_script(script, cast, out, synth, stems, self.settings.pacing, edits, progress, cancel)

    def close(self) -> None:
        with contextlib.suppress(TroupeError):
            wait(self.submit(self._close_output), 5)
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


def _chain(
    first: Callable[[Request], None] | None, then: Callable[[Request], None]
) -> Callable[[Request], None]:
    def both(r: Request) -> None:
        if first is not None:
            first(r)
        then(r)

    return both
