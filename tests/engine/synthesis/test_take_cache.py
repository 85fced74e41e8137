"""The persistent take cache: a hit gives the same take without voicing, any setting that
reaches the model misses, the least recently used takes go past the cap, and two processes
share one folder without a torn read."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from engine.core.types import Voice
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.take_cache import CachedSynthesizer, TakeCache, with_cache


class Counting:
    """A backend whose take is a tone set by the text and the voice, counting what it voices."""

    name = "counting"
    max_batch = 8
    sample_rate_hz = 48_000

    def __init__(self) -> None:
        self.voiced: list[str] = []

    def voices(self) -> list[VoiceInfo]:
        return []

    def _tone(self, r: SynthRequest) -> Mono:
        f = 100 + (hash((r.text, r.voice.voice_id, r.voice.pitch, r.voice.rate_wpm)) % 400)
        return np.sin(np.arange(4800) * 2 * np.pi * f / 48_000).astype(np.float32)

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        self.voiced += [r.text for r in batch]
        return [self._tone(r) for r in batch]

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        self.voiced.append(request.text)
        tone = self._tone(request)
        yield tone[:2400]
        yield tone[2400:]

    def close(self) -> None:
        pass


def _req(text: str, **voice: object) -> SynthRequest:
    settings: dict[str, object] = {"voice_id": "ada", **voice}
    return SynthRequest(text, Voice(backend="kokoro", **settings))  # type: ignore[arg-type]


def test_hit_miss_and_every_setting_that_reaches_the_model(tmp_path: Path) -> None:
    inner = Counting()
    synth = CachedSynthesizer(inner, TakeCache(tmp_path))
    first = synth.synthesize([_req("Hello."), _req("Goodbye.")])
    again = synth.synthesize([_req("Goodbye."), _req("Hello.")])
    assert inner.voiced == ["Hello.", "Goodbye."]  # the second batch came from disk
    assert np.array_equal(first[0], again[1]) and np.array_equal(first[1], again[0])
    for changed in (_req("Hello!"), _req("Hello.", pitch=60), _req("Hello.", rate_wpm=150),
                    _req("Hello.", pitch_range=40), _req("Hello.", voice_id="bruno")):  # fmt: skip
        synth.synthesize([changed])
    assert len(inner.voiced) == 7  # each a miss
    synth.synthesize([_req("Hello.", gain_db=-6.0, pan=0.5, mute=True)])  # the mixer's settings
    assert len(inner.voiced) == 7
    assert synth.cache.hits == 3


def test_a_stream_is_stored_once_complete(tmp_path: Path) -> None:
    inner = Counting()
    synth = CachedSynthesizer(inner, TakeCache(tmp_path))
    chunks = list(synth.stream(_req("A long line.")))
    assert len(chunks) == 2
    again = list(synth.stream(_req("A long line.")))
    assert len(again) == 1 and np.array_equal(again[0], np.concatenate(chunks))
    gen = synth.stream(_req("Cut short."))
    next(gen)
    gen.close()  # the listener left: nothing stored
    assert list(synth.stream(_req("Cut short."))) and inner.voiced.count("Cut short.") == 2


def test_eviction_keeps_the_recently_used(tmp_path: Path) -> None:
    cache = TakeCache(tmp_path, cap_bytes=10**9)
    synth = CachedSynthesizer(Counting(), cache)
    for k in range(10):
        synth.synthesize([_req(f"Line {k}.")])
        time.sleep(0.01)
    one = next(tmp_path.glob("*/*.npz")).stat().st_size
    synth.synthesize([_req("Line 0.")])  # touched: now the most recent
    cache.cap_bytes = 5 * one
    assert cache.evict() == 6  # down to 90% of the cap: 4 takes
    inner = Counting()
    again = CachedSynthesizer(inner, TakeCache(tmp_path, cap_bytes=5 * one))
    again.synthesize([_req("Line 0."), _req("Line 9."), _req("Line 1.")])
    assert inner.voiced == ["Line 1."]


def test_a_damaged_file_is_a_miss_and_the_cache_can_be_off(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    inner = Counting()
    synth = CachedSynthesizer(inner, TakeCache(tmp_path))
    synth.synthesize([_req("Hello.")])
    for path in tmp_path.glob("*/*.npz"):
        path.write_bytes(b"not a take")
    synth.synthesize([_req("Hello.")])
    assert inner.voiced == ["Hello.", "Hello."]
    monkeypatch.setenv("TROUPE_TAKE_CACHE", "off")
    plain = Counting()
    assert with_cache(plain) is plain


def _writer(folder: str, seed: int) -> None:
    synth = CachedSynthesizer(Counting(), TakeCache(Path(folder)))
    for k in range(60):
        synth.synthesize([_req(f"Shared {k % 20}.", pitch=seed % 2 * 10 + 45)])


def test_two_processes_share_one_folder(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), s)) for s in range(2)]
    for p in procs:
        p.start()
    reader = TakeCache(tmp_path)
    deadline = time.monotonic() + 60
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        for path in list(tmp_path.glob("*/*.npz")):
            take = reader.get(path.stem)
            assert take is None or take.audio.shape == (4800,)  # never half a take
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert len(list(tmp_path.glob("*/*.npz"))) == 40
    assert os.listdir(tmp_path)


def test_a_new_pronunciation_misses(tmp_path: Path) -> None:
    from engine.synthesis.lexicon import Lexicon, use_project_lexicon

    inner = Counting()
    synth = CachedSynthesizer(inner, TakeCache(tmp_path))
    try:
        synth.synthesize([_req("Meet Siobhan.")])
        use_project_lexicon(Lexicon.from_mapping({"Siobhan": "shi-VAWN"}))
        synth.synthesize([_req("Meet Siobhan.")])
        assert inner.voiced == ["Meet Siobhan.", "Meet Siobhan."]
    finally:
        use_project_lexicon(Lexicon())


def test_the_scheduler_counts_a_cached_take_as_free_and_learns_no_speed_from_it(tmp_path: Path) -> None:
    from engine.scheduler.backend import Backend
    from engine.scheduler.request import Request, RequestClass

    synth = CachedSynthesizer(Counting(), TakeCache(tmp_path))
    backend = Backend(synth)
    voice = Voice(backend="kokoro", voice_id="ada")
    synth.synthesize([SynthRequest("Known line.", voice)])
    known = Request("ADA", "Known line.", voice, 10.0, RequestClass.SCRIPTED, 0, 0, 1)
    fresh = Request("ADA", "A line never voiced before.", voice, 10.0, RequestClass.SCRIPTED, 1, 0, 1)
    assert backend.estimate_s(known) == Backend.CACHED_S and backend.cost_s(known) == Backend.CACHED_S
    assert backend.estimate_s(fresh) > 10 * Backend.CACHED_S
    rtf = backend.rtf
    from engine.scheduler.backend import Batch

    batch = Batch(
        "kokoro", [known], 0.0, 10.0, results=synth.synthesize([SynthRequest("Known line.", voice)])
    )
    batch.t_start, batch.t_end = 0.0, 0.001
    backend.observe(batch)
    assert backend.rtf == rtf  # an instant cached take is not the model's speed
