"""The scheduler with real threads and backends: batching, backpressure, failures, ad-libs."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from sched_fakes import ManualClock, RecordingSynth, req, run_until_idle

from engine.core.errors import QueueFull
from engine.scheduler import Backend, PolicyConfig, RequestClass, Scheduler, SchedulerConfig, State
from engine.synthesis.espeak import EspeakSynthesizer


def _sched(clock: ManualClock, *backends: Backend, **cfg) -> Scheduler:  # type: ignore[no-untyped-def]
    return Scheduler({b.name: b for b in backends}, SchedulerConfig(**cfg), clock)


def test_batches_up_to_max_batch_by_length_bucket(clock: ManualClock) -> None:
    synth = RecordingSynth(max_batch=4)
    b = Backend(synth, length_buckets=True, clock=clock)
    s = _sched(clock, b, fallback_backend=None)
    short = [req("A", f"short {k}") for k in range(6)]
    long = [req("B", "a much longer line " * 5 + str(k)) for k in range(3)]
    for r in short + long:
        s.submit(r)
    run_until_idle(s)
    sizes = [len(c) for c in synth.calls]
    assert max(sizes) == 4 and sum(sizes) == 9
    for call in synth.calls:  # never mixes length buckets
        assert len({len(t) // 48 for t in call}) == 1
    assert all(r.state is State.DONE for r in short + long)


def test_continuity_batching_through_the_scheduler(clock: ManualClock) -> None:
    synth = RecordingSynth(max_batch=2)
    b = Backend(synth, clock=clock)
    s = _sched(clock, b, fallback_backend=None, policy_config=PolicyConfig(risk_window_s=0.0))
    s.set_weight("A", 5)
    s.set_weight("B", 4)
    t = clock()
    for r in [req("A", "a1", t + 5.0), req("B", "b1", t + 5.1), req("A", "a2", t + 5.2)]:
        s.submit(r)
    run_until_idle(s)
    assert synth.calls[0] == ["a1", "a2"]  # the speaker's next line rides along


def test_backpressure_sheds_far_prefetch_first(clock: ManualClock) -> None:
    b = Backend(RecordingSynth(), clock=clock)
    s = _sched(clock, b, max_pending=3, horizon_s=30.0, fallback_backend=None)
    far = [req("A", f"far {k}", deadline=clock() + 100 + k, klass=RequestClass.PREFETCH) for k in range(2)]
    due = req("A", "due", deadline=clock() + 1)
    for r in [*far, due]:
        s.submit(r)
    late_line = s.submit(req("B", "scripted", deadline=clock() + 2), timeout_s=0)
    assert far[1].state is State.SHED and s.stats.shed == 1  # the furthest prefetch went
    assert late_line.state is State.QUEUED
    s.submit(req("C", "adlib", klass=RequestClass.ADLIB), timeout_s=0)  # sheds far[0]
    assert far[0].state is State.SHED
    with pytest.raises(QueueFull, match=r"synthesis queue full \(3 waiting\) for 0 ms; line for D"):
        s.submit(req("D", "one too many", deadline=clock() + 3), timeout_s=0)
    assert due.state is State.QUEUED  # a due line is never shed
    ended = s.tick()
    assert {r.text for r in ended} == {"far 0", "far 1"}  # shed lines are reported


def test_submit_waits_for_space(clock: ManualClock) -> None:
    synth = RecordingSynth()
    b = Backend(synth, clock=clock)
    s = _sched(clock, b, max_pending=1, fallback_backend=None)
    s.submit(req("A", "first"))
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(s.submit(req("B", "second"), timeout_s=10)))
    t.start()
    s.tick()  # dispatching "first" frees the slot, and wakes the waiting submitter
    t.join(10)
    assert result and result[0].text == "second"  # type: ignore[attr-defined]
    run_until_idle(s)


def test_failure_retries_once_then_falls_back_to_espeak(clock: ManualClock) -> None:
    broken = RecordingSynth("neural", fail=True)
    s = _sched(clock, Backend(broken, clock=clock), Backend(EspeakSynthesizer(), clock=clock))
    r = s.submit(req("HERO", "The show must go on.", backend="neural"))
    s.submit(req("HERO", "And this one too.", backend="espeak"))
    ended = run_until_idle(s)
    assert len(broken.calls) == 2  # first try and one retry
    assert r.state is State.DONE and r.fallback and r.backend == "espeak"
    assert r.audio is not None and np.abs(r.audio).max() > 0.01  # a real espeak voice
    assert "neural backend is down" in r.error
    assert s.stats.retries == 1 and s.stats.fallback_on_failure == 1
    assert {x.text for x in ended} == {"The show must go on.", "And this one too."}


def test_failure_without_fallback_marks_the_line_failed(clock: ManualClock) -> None:
    s = _sched(clock, Backend(RecordingSynth("neural", fail=True), clock=clock), fallback_backend=None)
    r = s.submit(req("HERO", "doomed"))
    run_until_idle(s)
    assert r.state is State.FAILED and s.stats.failed == 1


@pytest.mark.parametrize(("voice_id", "stand_in"), [
    ("jm_kumo", "en-us+m3"), ("af_heart", "en-us+f3"), ("bm_george", "en+m3"),
    ("0.7*jf_alpha+0.3*jm_kumo", "en-us+f3"), ("my-own-voice", "en-us"),
])  # fmt: skip
def test_fallback_speaks_with_an_espeak_stand_in(clock: ManualClock, voice_id: str, stand_in: str) -> None:
    """A line cast to a neural voice that espeak-ng does not have is still voiced when it
    falls back: by the nearest espeak-ng voice, with the role's rate and pitch."""
    from dataclasses import replace

    broken = RecordingSynth("kokoro", fail=True)
    espeak = Backend(EspeakSynthesizer(), clock=clock)
    s = _sched(clock, Backend(broken, clock=clock), espeak, retries=0)
    r = req("HERO", "The show must go on.", backend="kokoro")
    r.voice = replace(r.voice, voice_id=voice_id, rate_wpm=210, pitch=30)
    s.submit(r)
    run_until_idle(s)
    assert r.state is State.DONE and r.fallback and r.backend == "espeak"
    assert r.audio is not None and np.abs(r.audio).max() > 0.01
    voice = espeak.voice_for(r)
    assert (voice.backend, voice.voice_id, voice.rate_wpm, voice.pitch) == ("espeak", stand_in, 210, 30)


def test_timeout_counts_as_failure(clock: ManualClock) -> None:
    stuck = RecordingSynth("neural")
    stuck.gate = threading.Event()
    s = _sched(clock, Backend(stuck, min_timeout_s=2.0, clock=clock),
               Backend(EspeakSynthesizer(), clock=clock), retries=0)  # fmt: skip
    r = s.submit(req("HERO", "Hello there.", backend="neural"))
    s.tick()
    assert r.state is State.DISPATCHED
    clock.advance(3.0)
    run_until_idle(s)
    stuck.gate.set()
    assert s.stats.timeouts == 1 and r.fallback and r.state is State.DONE


def test_deadline_risk_goes_to_the_fast_backend(clock: ManualClock) -> None:
    slow = Backend(RecordingSynth("neural"), clock=clock)
    slow.rtf = 5.0  # measured: 5 s of compute per second of audio
    fast = Backend(EspeakSynthesizer(), clock=clock)
    fast.rtf = 0.01
    s = _sched(clock, slow, fast)
    tight = s.submit(
        req("HERO", "We need this line right now please.", deadline=clock() + 0.5, backend="neural")
    )
    relaxed = s.submit(req("HERO", "This one can wait a while.", deadline=clock() + 600, backend="neural"))
    run_until_idle(s)
    assert tight.backend == "espeak" and tight.fallback
    assert relaxed.backend == "neural" and not relaxed.fallback
    assert s.stats.fallback_on_deadline == 1


def test_adlib_jumps_a_busy_show(clock: ManualClock) -> None:
    synth = RecordingSynth()
    synth.gate = threading.Event()
    b = Backend(synth, clock=clock)
    s = _sched(clock, b, fallback_backend=None)
    for k in range(30):  # a busy show: scripted lines with slack
        s.set_weight(f"R{k % 4}", 1 + k % 4)
        s.submit(req(f"R{k % 4}", f"line {k}", deadline=clock() + 5 + k))
    s.tick()  # the backend is now busy with one line
    s.submit(req("R0", "AD-LIB", klass=RequestClass.ADLIB, deadline=clock()))
    synth.gate.set()
    run_until_idle(s)
    order = [c[0] for c in synth.calls]
    assert order.index("AD-LIB") == 1  # right after the line already in progress
    assert all(order.index("AD-LIB") < order.index(f"line {k}") for k in range(30) if f"line {k}" != order[0])


def test_cancel_and_priorities(clock: ManualClock) -> None:
    s = _sched(clock, Backend(RecordingSynth(), clock=clock), fallback_backend=None)
    s.set_weight("A", 3)
    s.set_weight("B", 1)
    rs = [s.submit(req("A" if k % 2 else "B", f"l{k}")) for k in range(6)]
    pr = s.role_priorities()
    assert pr["A"] >= 3 and pr["B"] >= 1
    assert s.cancel(lambda r: r.role == "A") == 3
    assert all(r.state is State.CANCELLED for r in rs if r.role == "A")
    assert s.pending_count == 3
