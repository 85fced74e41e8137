"""Speech on demand for many clients: every request goes through the scheduler, so role
priorities hold under load. One engine thread ticks the scheduler (every 50 ms and at once
on an arrival or a completion); HTTP handlers wait on futures."""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from engine.cast import Cast
from engine.core.errors import CastError, Overloaded, ScriptError, SynthesisError, TroupeError
from engine.core.limits import limit
from engine.core.memory import IdleTrimmer, keep_large_blocks_mapped
from engine.core.types import SAMPLE_RATE_HZ, Role, RoleKey, Script, Voice
from engine.metrics import AnomalyDetector
from engine.scheduler import PolicyConfig, Request, RequestClass, Scheduler, SchedulerConfig, State
from engine.scheduler.backend import cluster_backends, neural_voice_ids, standard_backends
from engine.scheduler.request import Clock, monotonic
from engine.script import load_script
from engine.script.common import normalise_role
from engine.server.roles import ClientRoles, aliases
from engine.server.telemetry import Telemetry
from engine.synthesis import ssml
from engine.synthesis.base import Mono
from engine.synthesis.effects import time_stretch
from engine.synthesis.espeak import espeak_variants, espeak_voices
from engine.synthesis.text import split_chunks

MAX_TEXT_CHARS = 4096
"""OpenAI's input limit."""
SPEED_RANGE = (0.25, 4.0)
"""OpenAI's `speed` range, all of it: the voice's own rate as far as its range reaches, the
rest by time-stretching the voiced audio (`speed_parts`)."""
REFUSING_S = 1.0
"""`/readyz` says not ready for this long after a request was refused or shed as too late."""
STALL_S = 1.0
"""The engine loop counts as stalled (`/healthz` 503) when it has not ticked for this long."""
log = logging.getLogger("troupe.server")

Pending = Callable[[float], "Future[Mono]"]
"""One chunk of a request, ready to queue: called with its deadline (clock seconds), it
queues the chunk and returns the future of its audio."""


@dataclass(frozen=True)
class SpeechSettings:
    """How the server's engine runs."""

    processes: int = 1
    policy: str = "role_aware"
    budget_s: float = 2.0
    """Deadline of a request: this long after it arrives (per chunk when streaming)."""
    give_up_s: float = 2.0
    """How long past its deadline a request may still be voiced. One that could not make it
    is refused at once (503, Retry-After); one that was admitted and then fell behind
    higher-weight work is shed (503). Infinite: queue without bound (the FIFO baseline)."""
    max_pending: int = 10_000
    fifo_tolerance: float = PolicyConfig.fifo_tolerance
    """Role-aware: how much longer than arrival order would take a client's request may wait
    so that higher weights go first (0.35: 35%; see `PolicyConfig.fifo_tolerance`)."""
    lead_fifo_share: float = PolicyConfig.lead_fifo_share
    """Role-aware: the lead's (highest weight's) requests are due at this share of the wait
    arrival order would give them (0.3; see `PolicyConfig.lead_fifo_share`)."""
    stream_ahead: int = 2
    """A streamed answer queues at most this many chunks beyond the one being sent (1: the
    next chunk is voiced only once the last was handed to the client; 0: every chunk at
    once, the whole answer held until it is read). See `engine.server.pacing`."""
    neural: bool = True
    """Offer Kokoro voices (`kokoro:jf_alpha`) when the neural extra is installed."""
    scripts_dir: Path = Path(".")
    """`POST /v1/script` loads scripts from inside this folder only."""
    voice_aliases: Mapping[str, str] = field(default_factory=dict)
    """OpenAI voice name -> voice id, over `DEFAULT_ALIASES` (e.g. 'alloy' -> 'en-gb+f3')."""
    max_client_roles: int = 64
    """Roles clients may add (PUT /v1/roles); a script's roles do not count."""
    client_role_idle_s: float = 3600.0
    """A role a client added is dropped after this long unused."""
    slot_asr: bool = True
    """Measure each chunk of a slotted stream with the recogniser where the asr extra is
    installed and it is free (else, and with False, by the chunk's own length)."""
    cluster: str = ""
    """Voice on the Ray cluster at this address (`auto`: this machine's, or a local one);
    empty: voice here."""


class SpeechService:
    """Roles, their voices and weights, and a scheduler that voices lines for them."""

    def __init__(self, settings: SpeechSettings | None = None, clock: Clock = monotonic) -> None:
        self.settings = settings or SpeechSettings()
        self.clock = clock
        keep_large_blocks_mapped()
        config = SchedulerConfig(
            policy=self.settings.policy,
            max_pending=self.settings.max_pending,
            policy_config=PolicyConfig(
                fifo_tolerance=self.settings.fifo_tolerance, lead_fifo_share=self.settings.lead_fifo_share
            ),
        )
        self.cluster: Any = None
        """The cluster synthesizer when voicing on a cluster (its head feeds /metrics)."""
        if self.settings.cluster:
            backends = cluster_backends(self.settings.cluster, self.settings.processes, self.settings.neural)
            self.cluster = backends["espeak"].synth
        else:
            backends = standard_backends(self.settings.processes, self.settings.neural)
        self.scheduler = Scheduler(backends, config, clock)
        self.cast = Cast()
        self.script: Script | None = None
        self.anomalies = AnomalyDetector(clock=clock)
        self.telemetry = Telemetry(self)
        self.scheduler.on_batch = self.telemetry.observe_batch
        voices = espeak_voices()
        self._variants = {v.voice_id for v in espeak_variants()}
        self.refused_at = -math.inf
        """When admission last refused or shed a request (time.monotonic)."""
        self._stretcher = ThreadPoolExecutor(max_workers=2, thread_name_prefix="troupe-stretch")
        """Time-stretch for speeds past a voice's rate range (Rubber Band: ~30 ms a second of audio)."""
        self._by_name = {v.voice_id: v.voice_id for v in voices}
        for v in voices:
            self._by_name.setdefault(v.language.lower(), v.voice_id)  # 'en-gb' names the voice 'en'
        self.voice_ids = sorted(self._by_name)
        """espeak-ng voice names and the language codes they answer to ('en', 'en-gb', ...)."""
        self.aliases = aliases(self.settings.voice_aliases, self.check_voice)
        """OpenAI voice name -> voice id."""
        self.client_roles = ClientRoles(self.settings.max_client_roles, self.settings.client_role_idle_s,
                                        time.monotonic)  # fmt: skip
        self._expired_at = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.last_tick_s = time.monotonic()
        """When the engine loop last went round (monotonic s); `/healthz` reads it."""
        self.engine_errors = 0
        self._trimmer = IdleTrimmer()
        """Gives the audio a burst of requests freed back to the system once it is over."""
        self.scheduler.on_error = self._report
        self._thread = threading.Thread(target=self._run, name="troupe-server-engine", daemon=True)
        self._thread.start()

    # --- engine thread ----------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.scheduler.tick()
                self.telemetry.tick()
                self._trimmer.tick(not self.scheduler.idle, time.monotonic())
                if time.monotonic() - self._expired_at >= 1.0:
                    self._expired_at = time.monotonic()
                    self.expire_roles()
            except Exception as exc:  # the loop outlives any one request's failure
                log.exception("engine loop: a tick failed; going on")
                self._report(None, exc)
            self.last_tick_s = time.monotonic()
            self.scheduler.wake.wait(self.scheduler.config.tick_s)

    def _report(self, r: Request | None, exc: BaseException) -> None:
        self.engine_errors += 1
        self.telemetry.engine_errors.inc()
        if r is not None:
            log.error("engine loop: trace %s (role %s) failed: %r", r.id, r.role, exc)

    @property
    def healthy(self) -> bool:
        """The engine loop is alive and went round within the last second."""
        return self._thread.is_alive() and time.monotonic() - self.last_tick_s <= STALL_S

    @property
    def ready(self) -> bool:
        """Healthy, with room in the queue, and not refusing: no request was refused or shed
        for being late within the last `REFUSING_S` (a balancer sends the work elsewhere)."""
        refusing = time.monotonic() - self.refused_at < REFUSING_S
        return (
            self.healthy and self.scheduler.pending_count < self.scheduler.config.max_pending and not refusing
        )

    # --- roles ------------------------------------------------------------------------
    def roles(self) -> dict[RoleKey, Voice]:
        with self._lock:
            return dict(self.cast.voices)

    def voice(self, role: str) -> Voice:
        """The voice of a known role; `CastError` if the role is not cast."""
        key = role_key(role)
        with self._lock:
            if key not in self.cast.voices:
                known = ", ".join(sorted(self.cast.voices)) or "none yet"
                raise CastError(f"unknown role {role!r} (known roles: {known})")
            self.client_roles.touch(key)
            return self.cast.voices[key]

    def add_role(self, role: str, by_client: bool = False, **changes: Any) -> Voice:
        """Cast `role` (an automatic voice unless given) and apply `changes`. A role a
        client adds counts against the cap and is dropped when idle."""
        key = role_key(role)
        if not key or len(key) > 64:
            raise CastError("a role name needs 1 to 64 characters")
        with self._lock:
            if key not in self.cast.voices:
                if by_client:
                    self.client_roles.admit(key)
                self.cast.fill([Role(key, role.strip())])
            self.client_roles.touch(key)
            return self._update(key, changes)

    def update_role(self, role: str, **changes: Any) -> Voice:
        self.voice(role)  # raises for an unknown role
        with self._lock:
            return self._update(role_key(role), changes)

    def expire_roles(self) -> list[RoleKey]:
        """Drop the client roles unused for longer than the idle time, with their weights
        and metric series (engine thread, about once a second)."""
        gone = self.client_roles.expire()
        with self._lock:
            for key in gone:
                self.cast.voices.pop(key, None)
        if gone:
            self.scheduler.forget_roles(gone)
            self.telemetry.forget_roles(gone)
        return gone

    def resolve_voice(self, name: str) -> tuple[str, Voice]:
        """What an OpenAI `voice` names, as (role label, voice): a cast role, an alias
        ('alloy') or a voice id ('en-gb+f3', 'kokoro:jf_alpha'). Adds no role."""
        key = role_key(name)
        with self._lock:
            if key in self.cast.voices:
                self.client_roles.touch(key)
                return key, self.cast.voices[key]
        target = self.aliases.get(name.strip().lower())
        try:
            voice_id = self.check_voice(target or name)
        except CastError:
            known = ", ".join(sorted(self.aliases))
            raise CastError(f"unknown voice {name!r}: not a role, an alias ({known}) or a voice "
                            "(GET /v1/audio/voices lists them)") from None  # fmt: skip
        voice = _as_voice(voice_id)
        # NB: one scheduling role (and metric label) per alias or backend, not per voice id:
        # voice ids and blends are unbounded, the labels must not be
        label = role_key(name) if target else f"VOICE:{voice.backend.upper()}"
        return label, voice

    def _update(self, key: RoleKey, changes: dict[str, Any]) -> Voice:
        if "voice_id" in changes:
            voice = _as_voice(self.check_voice(str(changes["voice_id"])))
            changes = {**changes, "backend": voice.backend, "voice_id": voice.voice_id}
        voice = self.cast.set(key, **changes) if changes else self.cast.voices[key]
        self.scheduler.set_weight(key, voice.weight)
        return voice

    def check_voice(self, voice_id: str) -> str:
        """The espeak-ng voice for 'name', 'language' or either with '+variant'; or another
        backend's voice as 'backend:voice' (every id `GET /v1/voices` lists), Kokoro's
        blends ('kokoro:0.7*ada+0.3*bruno') too."""
        backend, colon, spec = voice_id.strip().partition(":")
        spec = spec.strip()
        if colon:
            found = self.scheduler.backends.get(backend)
            if found is None or backend == "espeak":
                raise CastError(f"unknown voice {voice_id!r}; GET /v1/voices lists them")
            if backend == "kokoro":
                try:
                    found.synth.bank.get(spec)  # type: ignore[attr-defined]
                except SynthesisError as exc:
                    raise CastError(str(exc)) from None
            elif spec not in {v.voice_id for v in found.synth.voices()}:
                raise CastError(f"unknown voice {voice_id!r}; GET /v1/voices lists them")
            return f"{backend}:{spec}"
        lang, plus, variant = voice_id.strip().partition("+")
        name = self._by_name.get(lang.lower())
        if name is None or (plus and variant not in self._variants):
            raise CastError(f"unknown voice {voice_id!r}; GET /v1/voices lists them")
        return name + plus + variant

    def neural_voice_ids(self) -> list[str]:
        return neural_voice_ids(self.scheduler.backends)

    def load_script(self, path: str | Path) -> Script:
        """Import a script from `scripts_dir` and cast its roles (keeping voices already cast)."""
        root = self.settings.scripts_dir.resolve()
        try:
            full = (root / path).resolve()
        except (ValueError, OSError, RuntimeError) as exc:  # a NUL byte; a symlink loop (3.11: RuntimeError)
            raise ScriptError(str(path).replace("\0", "\\0"), f"not a usable file path ({exc})") from None
        if not full.is_relative_to(root):
            raise ScriptError(path, f"outside the server's scripts folder ({root})")
        try:
            is_file, is_dir = full.is_file(), full.is_dir()
        except OSError as exc:  # a name too long for the file system (ENAMETOOLONG), ...
            raise ScriptError(str(path)[:120], f"not a usable file path ({exc.strerror or exc})") from None
        if not is_file:
            raise ScriptError(path, "no such script file" + (" (it is a folder)" if is_dir else ""))
        script = load_script(full)
        with self._lock:
            keep = dict(self.cast.voices)
            self.cast = Cast.auto(script, keep)
            self.script = script
            for role, voice in self.cast.voices.items():
                self.scheduler.set_weight(role, voice.weight)
        return script

    # --- speech -----------------------------------------------------------------------
    def plan(self, role: str, text: str, speed: float, klass: RequestClass,
             voice: Voice | None = None) -> list[Pending]:  # fmt: skip
        """`text` for `role` (in its cast voice, or `voice`) as chunks ready to queue, in
        order; nothing is queued yet (`submit` queues them all, a paced stream as its client
        takes them). Raises for empty or overlong text, a bad speed or SSML it cannot read."""
        text = text.strip()
        if not text:
            raise TroupeError("text is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise TroupeError(f"text is {len(text)} characters; the limit is {MAX_TEXT_CHARS}")
        voice, stretch = speed_parts(voice or self.voice(role), speed)
        parts: list[tuple[str, Voice, float] | float] = []  # (chunk, voice, gain dB) or a pause's seconds
        if ssml.looks_like_ssml(text):
            for part in ssml.parse(text):
                if isinstance(part, ssml.Pause):
                    parts.append(part.seconds)
                else:
                    prosodic = ssml.voice_for(voice, part.prosody)
                    gain = part.prosody.volume_db
                    parts += [(c, prosodic, gain) for c in split_chunks(part.text) or [part.text]]
        else:
            parts = [(c, voice, 0.0) for c in split_chunks(text) or [text]]
        give_up = self._give_up_s()
        pending: list[Pending] = []
        for k, piece in enumerate(parts):
            if isinstance(piece, float):
                pending.append(functools.partial(_silence, piece))
                continue
            chunk, v, gain = piece
            queue = functools.partial(self._queue_stretched, role, chunk, v, klass, k=k, n_chunks=len(parts),
                                      give_up_s=give_up, gain_db=gain, stretch=stretch)  # fmt: skip
            pending.append(queue)
        return pending

    def submit(self, role: str, text: str, speed: float, klass: RequestClass,
               voice: Voice | None = None) -> list[Future[Mono]]:  # fmt: skip
        """Queue `text` for `role` (in its cast voice, or `voice`), every chunk now, chunk k
        due k+1 budgets from now; all or nothing."""
        return queue_all(self.plan(role, text, speed, klass, voice), self.clock(), self.settings.budget_s)

    def _give_up_s(self) -> float:
        """How long past its deadline a client's chunk may still be voiced (FIFO: no limit)."""
        return self.settings.give_up_s if self.scheduler.policy.name != "fifo" else math.inf

    def _queue_stretched(self, role: str, chunk: str, voice: Voice, klass: RequestClass, deadline_s: float,
                         *, k: int, n_chunks: int, give_up_s: float, gain_db: float,
                         stretch: float) -> Future[Mono]:  # fmt: skip
        fut = self._queue(role, chunk, voice, klass, deadline_s, k, n_chunks, give_up_s, gain_db)
        return fut if abs(stretch - 1.0) < 1e-3 else self._stretched(fut, stretch)

    def _stretched(self, inner: Future[Mono], factor: float) -> Future[Mono]:
        """`inner`'s audio `factor` times faster (Rubber Band, on the stretch workers, never
        on the engine thread); cancelling the result withdraws `inner` too."""
        outer: Future[Mono] = _Linked(inner)

        def stretch(audio: Mono) -> None:
            try:
                result = time_stretch(audio, SAMPLE_RATE_HZ, factor)
            except Exception as exc:  # a failed stretch fails this chunk, nothing else
                _settle(outer, None, SynthesisError(f"time-stretch failed: {exc}"))
                return
            _settle(outer, result, None)

        def voiced(f: Future[Mono]) -> None:
            if f.cancelled():
                outer.cancel()
            elif f.exception() is not None:
                _settle(outer, None, f.exception())
            elif not outer.cancelled():
                try:
                    job = self._stretcher.submit(stretch, f.result())
                except RuntimeError:  # closing: the pool takes nothing more
                    outer.cancel()
                    return
                job.add_done_callback(lambda j: outer.cancel() if j.cancelled() else None)  # closed

        inner.add_done_callback(voiced)
        return outer

    def submit_chunk(self, role: str, chunk: str, voice: Voice, klass: RequestClass, k: int,
                     n_chunks: int) -> Future[Mono]:  # fmt: skip
        """Queue one chunk of a line on its own, due one budget from now (a line whose next
        chunk waits on how the last one came out: the slotted stream)."""
        give_up = self._give_up_s()
        deadline = self.clock() + self.settings.budget_s
        return self._queue(role, chunk, voice, klass, deadline, k, n_chunks, give_up)

    def _queue(self, role: str, chunk: str, voice: Voice, klass: RequestClass, deadline_s: float, k: int,
               n_chunks: int, give_up_s: float, gain_db: float = 0.0) -> Future[Mono]:  # fmt: skip
        fut: Future[Mono] = Future()
        r = Request(role_key(role), chunk, voice, deadline_s, klass, chunk=k, n_chunks=n_chunks,
                    give_up_s=give_up_s)  # fmt: skip
        r.on_done = functools.partial(self._done, fut=fut, gain_db=gain_db)
        fut.add_done_callback(functools.partial(self._withdraw, r=r))
        try:
            self.scheduler.submit(r)
        except Overloaded:
            self.refused_at = time.monotonic()
            raise
        return fut

    def _withdraw(self, fut: Future[Mono], r: Request) -> None:
        """A client cancelled (left, timed out): its queued chunk leaves the queue, or the
        audio of one being voiced is dropped."""
        if fut.cancelled():
            self.scheduler.cancel_requests([r])
            r.on_done = None  # NB: nobody is told of it any more; and no request <-> future cycle

    def _done(self, r: Request, fut: Future[Mono], gain_db: float = 0.0) -> None:
        self.telemetry.observe_request(r)
        try:
            if r.state is State.DONE and r.audio is not None:
                gain = 10 ** (gain_db / 20)
                fut.set_result(r.audio if gain_db == 0.0 else (r.audio * gain).astype(np.float32))
            elif r.state is State.SHED:
                self.refused_at = time.monotonic()
                message = f"too busy to voice this line for {r.role} in time; it was shed"
                fut.set_exception(Overloaded(message, retry_after_s=self.settings.budget_s))
            else:
                fut.set_exception(TroupeError(f"synthesis failed for {r.role}: {r.error or r.state.value}"))
        except InvalidStateError:
            pass  # NB: the client cancelled between our check and here; nobody wants the audio
        finally:
            # NB: the future's callback holds the request and the request held the future: a
            # reference cycle that kept every answer's audio until the collector's rare full
            # pass (RSS +70% after a burst of 2,000 requests; nothing alive held it)
            r.on_done = None

    def close(self) -> None:
        self._stretcher.shutdown(wait=False, cancel_futures=True)
        self._stop.set()
        self.scheduler.wake.set()
        self._thread.join(1)
        self.scheduler.close()
        for b in self.scheduler.backends.values():
            b.synth.close()


def _as_voice(voice_id: str) -> Voice:
    """A checked voice id as a `Voice`: 'piper:joe' -> backend piper, voice joe."""
    backend, colon, spec = voice_id.partition(":")
    return Voice(backend=backend, voice_id=spec) if colon else Voice(backend="espeak", voice_id=voice_id)


class _Linked(Future[Mono]):
    """A future made from another (`inner`): cancelling it cancels `inner` as well."""

    def __init__(self, inner: Future[Mono]) -> None:
        super().__init__()
        self._inner = inner

    def cancel(self) -> bool:
        self._inner.cancel()
        return super().cancel()


def _settle(f: Future[Mono], result: Mono | None, exc: BaseException | None) -> None:
    try:
        if exc is not None:
            f.set_exception(exc)
        elif result is not None:
            f.set_result(result)
    except InvalidStateError:
        pass  # cancelled meanwhile: nobody wants it


RATE_REACH = {"kokoro": (1.0, 1.0), "piper": (1.0, 1.0), "espeak": (0.25, 1.0)}
"""How far each backend's own rate carries a speed before the time-stretch takes over, as
multiples of the voice's rate (then within the rate limits). From
benchmarks/bench_speed_range.py (whisper tiny.en, median of four lines): Kokoro's own
speed mumbles at 2x (WER 0.62) where its audio stretched stays clear (0.05); Piper's length
scale is not proportional (asked 2x, its line is 1.32x as long as it should be; 4x: 1.48x),
so its audio is stretched to the exact length; espeak-ng is clearer slow by its rate, and
fast by its rate no clearer than stretched (2x: WER 1.0 against 0.8)."""


def _check_speed(speed: float) -> None:
    lo, hi = SPEED_RANGE
    if isinstance(speed, bool) or not lo <= speed <= hi:  # NB: NaN fails both comparisons
        raise TroupeError(f"speed {speed} is out of range; expected {lo} to {hi}")


def speed_parts(voice: Voice, speed: float) -> tuple[Voice, float]:
    """`voice` at `speed` (OpenAI's 0.25 to 4.0): its own rate as far as `RATE_REACH` and
    the rate limits allow, and the factor left for a time-stretch of the audio (1.0: none)."""
    _check_speed(speed)
    if speed == 1.0:
        return voice, 1.0
    rate_lo, rate_hi = limit("rate_wpm")
    reach_lo, reach_hi = RATE_REACH.get(voice.backend, (1 / 1.5, 1.5))
    by_rate = min(max(speed, reach_lo), reach_hi)
    rate = int(min(max(round(voice.rate_wpm * by_rate), rate_lo), rate_hi))
    return replace(voice, rate_wpm=rate), speed * voice.rate_wpm / rate


def at_speed(voice: Voice, speed: float) -> Voice:
    """`voice` speaking `speed` times faster. Speed is the voice's rate, so what its rate
    range allows is honoured exactly; beyond that a clear error says what this voice can
    do (never a silent clamp)."""
    _check_speed(speed)
    if speed == 1.0:
        return voice
    rate_lo, rate_hi = limit("rate_wpm")
    rate = round(voice.rate_wpm * speed)
    if not rate_lo <= rate <= rate_hi:
        lo, hi = SPEED_RANGE
        slowest, fastest = rate_lo / voice.rate_wpm, rate_hi / voice.rate_wpm
        raise TroupeError(
            f"speed {speed:g} would need {rate} words a minute; this voice ({voice.voice_id} at "
            f"{voice.rate_wpm} wpm) speaks {rate_lo:g} to {rate_hi:g}, so speed "
            f"{max(lo, slowest):.2f} to {min(hi, fastest):.2f}"
        )
    return replace(voice, rate_wpm=rate)


def queue_all(pending: list[Pending], now: float, budget_s: float) -> list[Future[Mono]]:
    """Queue every chunk at once, chunk k due k+1 budgets after `now`; all or nothing (a
    refusal withdraws the chunks already queued)."""
    futures: list[Future[Mono]] = []
    try:
        for k, queue in enumerate(pending):
            futures.append(queue(now + budget_s * (k + 1)))
    except TroupeError:
        cancel(futures)
        raise
    return futures


def _silence(seconds: float, deadline_s: float) -> Future[Mono]:
    """An SSML break: silence, ready at once."""
    pause: Future[Mono] = Future()
    pause.set_result(np.zeros(round(seconds * SAMPLE_RATE_HZ), np.float32))
    return pause


def cancel(futures: Iterable[Future[Mono]]) -> None:
    """Cancel a request's chunk futures (each withdraws its chunk from the scheduler)."""
    for f in futures:
        f.cancel()


def role_key(role: str) -> RoleKey:
    """The cast's key for a role name as a client spells it (as the importers key it)."""
    return normalise_role(role)
