"""An answered request's audio is freed when its answer is, not at the garbage collector's
next full pass: no reference cycle between a request and its client's future."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Iterator
from concurrent.futures import wait

import pytest

from engine.core.memory import IdleTrimmer, keep_large_blocks_mapped, release_free_memory
from engine.server.openai_api import LIVE
from engine.server.speech import SpeechService, SpeechSettings, cancel


@pytest.fixture(scope="module")
def service() -> Iterator[SpeechService]:
    s = SpeechService(SpeechSettings(neural=False))
    s.add_role("HERO")
    yield s
    s.close()


def _collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


collector_off = pytest.fixture(_collector_off)


@pytest.mark.usefixtures("collector_off")
@pytest.mark.parametrize("outcome", ["answered", "cancelled"])
def test_a_finished_request_and_its_audio_go_with_the_answer(service: SpeechService, outcome: str) -> None:
    futures = service.submit("HERO", "The harbour lights are out. Nobody came home.", 1.0, LIVE)
    requests = [weakref.ref(cb.keywords["r"]) for f in futures for cb in f._done_callbacks]  # type: ignore[attr-defined]
    assert len(requests) == len(futures) == 2  # each future knows its request (to withdraw it)
    if outcome == "cancelled":
        cancel(futures)  # NB: not a for loop here: its variable would hold the last future
    else:
        wait(futures, timeout=60)
    audio = [weakref.ref(f.result()) for f in futures if not f.cancelled()]
    assert len(audio) == (2 if outcome == "answered" else 0)
    del futures
    # the engine thread lets go of an ended request within a tick or two (no event says so)
    deadline = time.monotonic() + 10
    while any(r() is not None for r in requests) and time.monotonic() < deadline:
        service.scheduler.wake.set()
        time.sleep(0.01)
    assert all(r() is None for r in requests), "an ended request outlived its answer (a reference cycle)"
    assert all(a() is None for a in audio), "the audio outlived its answer"


def test_idle_trimmer_trims_once_after_work_and_never_while_busy() -> None:
    t = IdleTrimmer(idle_s=0.5)
    t.tick(False, 0.0)
    t.tick(False, 10.0)
    assert t.trims == 0  # never worked: nothing to give back
    t.tick(True, 11.0)
    t.tick(False, 11.1)
    t.tick(False, 11.3)
    assert t.trims == 0  # idle for less than idle_s
    t.tick(False, 11.7)
    assert t.trims == 1
    t.tick(False, 20.0)
    assert t.trims == 1  # once per burst


def test_allocator_controls_do_not_fail() -> None:
    # glibc here (Debian): both are available and succeed
    assert keep_large_blocks_mapped() is True
    assert release_free_memory() in (True, False)
