"""The scheduler under real load: two backends, mass re-routing, failing callbacks,
cancellation, admission and shedding, and what the policy keeps referenced."""

from __future__ import annotations

import gc
import math
import weakref

import pytest
from sched_fakes import ManualClock, RecordingSynth, req

from engine.core.errors import Overloaded
from engine.scheduler import Backend, RequestClass, RoleAwarePolicy, Scheduler, SchedulerConfig, State


def _two_backends(clock: ManualClock, **cfg) -> tuple[Scheduler, RecordingSynth, RecordingSynth]:  # type: ignore[no-untyped-def]
    slow, fast = RecordingSynth("kokoro", max_batch=4), RecordingSynth("espeak")
    backends = {"kokoro": Backend(slow, clock=clock), "espeak": Backend(fast, clock=clock)}
    return Scheduler(backends, SchedulerConfig(**cfg), clock), slow, fast


def test_a_backlog_on_one_backend_never_starves_the_other(clock: ManualClock) -> None:
    s, slow, _fast = _two_backends(clock, max_pending=20_000)
    s.set_weight("LEAD", 5)
    gate = slow.gate = __import__("threading").Event()  # the neural backend is busy
    for k in range(1000):
        s.submit(req("LEAD", f"lead {k}", backend="kokoro", weight=5, deadline=clock() + 1e6))
    minor = s.submit(req("MINOR", "one line for the other voice", backend="espeak", weight=1))
    s.tick()
    # the espeak-ng line went out on the first tick, behind no Kokoro work at all
    assert minor.state in (State.DISPATCHED, State.DONE)
    gate.set()


@pytest.mark.slow
def test_three_thousand_reroutes_in_one_tick_do_not_recurse(clock: ManualClock) -> None:
    s, _slow, _fast = _two_backends(clock, max_pending=20_000)
    s.backends["kokoro"].rtf = 50.0  # far too slow for these deadlines ...
    s.backends["espeak"].rtf = 0.001  # ... which the fallback can still make
    lines = [
        s.submit(req("HERO", f"line {k}", backend="kokoro", deadline=clock() + 5.0)) for k in range(3000)
    ]
    s.tick()  # used to recurse once per re-route and die with RecursionError
    assert s.stats.fallback_on_deadline == 3000
    assert all(r.backend == "espeak" and r.fallback for r in lines)
    assert s.policy.depth("kokoro") == 0


def test_a_failing_completion_callback_does_not_stop_the_others(clock: ManualClock) -> None:
    s, _, _fast = _two_backends(clock)
    seen: list[int] = []
    errors: list[BaseException] = []
    s.on_error = lambda r, exc: errors.append(exc)

    def boom(r):  # type: ignore[no-untyped-def]
        raise RuntimeError("a client's future was already cancelled")

    bad = req("A", "first", backend="espeak")
    bad.on_done = boom
    good = req("B", "second", backend="espeak")
    good.on_done = lambda r: seen.append(r.id)
    s.submit(bad)
    s.submit(good)
    for _ in range(200):
        s.tick()
        if seen:
            break
        s.wake.wait(5)
    assert seen == [good.id]
    assert s.stats.callback_errors == 1 and isinstance(errors[0], RuntimeError)


def test_cancel_withdraws_queued_and_drops_in_flight_audio(clock: ManualClock) -> None:
    s, _, fast = _two_backends(clock)
    gate = fast.gate = __import__("threading").Event()
    first = s.submit(req("A", "in flight", backend="espeak"))
    rest = [s.submit(req("A", f"queued {k}", backend="espeak")) for k in range(5)]
    s.tick()
    assert first.state is State.DISPATCHED
    assert s.cancel_requests([first, *rest]) == 6
    assert s.pending_count == 0
    gate.set()
    ended = []
    for _ in range(200):
        ended += s.tick()
        if not s.busy:
            break
        s.wake.wait(5)
    assert first.state is State.CANCELLED and first.audio is None and first not in ended
    assert len(fast.calls) == 1  # nothing queued behind it was voiced


def _overload_policy(clock: ManualClock) -> RoleAwarePolicy:
    p = RoleAwarePolicy(weights={"LEAD": 10, "EXTRA": 1})
    p.service_s = lambda r: 1.0  # every line costs 1 s of backend time
    p.latency_s = lambda r: 1.0
    return p


def _client(role: str, clock: ManualClock, budget_s: float = 2.0, give_up_s: float = 2.0):  # type: ignore[no-untyped-def]
    r = req(role, f"{role} line", deadline=clock() + budget_s)
    r.give_up_s, r.t_enqueued = give_up_s, clock()
    return r


def test_admission_refuses_what_cannot_be_voiced_in_time_but_admits_the_lead(clock: ManualClock) -> None:
    p = _overload_policy(clock)
    for _ in range(4):  # each finishes by 4 s (deadline 2 s + give-up 2 s); a fifth would not
        r = _client("EXTRA", clock)
        assert p.admit(r, clock()) == 0.0
        p.push(r)
    late = _client("EXTRA", clock)
    assert p.admit(late, clock()) == 1.0  # retry after the 1 s of work too many has drained
    lead = _client("LEAD", clock)
    assert p.admit(lead, clock()) == 0.0  # nothing of its weight or above is queued
    scripted = req("EXTRA", "a show's line", deadline=clock() + 0.1)  # never refused: no give-up
    assert math.isinf(scripted.give_up_s) and p.admit(scripted, clock()) == 0.0


def test_admitted_work_that_falls_behind_is_shed_so_waits_are_bounded(clock: ManualClock) -> None:
    p = _overload_policy(clock)
    minors = [_client("EXTRA", clock) for _ in range(3)]
    for r in minors:
        p.push(r)
    for _ in range(3):  # three leads arrive and go first
        p.push(_client("LEAD", clock))
    served = []
    for _ in range(6):
        clock.advance(0.0)
        served += [r.role for r in p.expire(clock())]
        r = p.pop(clock())
        if r is not None:
            served.append(("served", r.role))
            clock.advance(1.0)
    # every minor line was either served by its give-up time or shed; none waited longer
    assert served.count(("served", "LEAD")) == 3
    assert served.count("EXTRA") + served.count(("served", "EXTRA")) == 3
    assert served.count("EXTRA") >= 2
    assert len(p) == 0


def test_scheduler_raises_overloaded_with_a_retry_after(clock: ManualClock) -> None:
    s, _, _ = _two_backends(clock)
    s.backends["espeak"].rtf = 1.0
    s.backends["espeak"].cost_per_audio_s = 1.0
    with_give_up = []
    try:
        for _k in range(100):
            r = req("EXTRA", "a line of a few words here", backend="espeak", deadline=clock() + 2.0)
            r.give_up_s = 1.0
            with_give_up.append(s.submit(r))
        raise AssertionError("admission never refused")
    except Overloaded as exc:
        assert exc.retry_after_s > 0 and "too busy" in str(exc)
    assert s.stats.refused == 1 and 0 < len(with_give_up) < 100


def test_the_policy_references_no_request_once_it_has_left(clock: ManualClock) -> None:
    p = RoleAwarePolicy(weights={"A": 3})
    refs = []
    for k in range(500):
        r = req(
            "A",
            f"line {k}",
            deadline=clock() + k,
            klass=RequestClass.ADLIB if k % 7 == 0 else RequestClass.SCRIPTED,
        )
        r.t_enqueued = clock()
        r.give_up_s = 100.0
        p.push(r)
        refs.append(weakref.ref(r))
    keep = [p.pop(clock()) for _ in range(250)]
    del keep, r
    gc.collect()
    alive = sum(ref() is not None for ref in refs)
    assert alive == len(p) == 250  # only the queued ones: no finished request is held
