"""`voices design --base piper`: the sizes of a Piper voice kept as voices of their own, by a
grid walked farthest-first; the judges stand in for Whisper, DNSMOS and the speaker
encoder here (their own tests and bench_voices.py measure the real ones)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from engine.synthesis.piper.library import read_designs
from engine.voicelib import design_piper as dp
from engine.voicelib.gates import Figures, Targets


def _embedding(size: float) -> np.ndarray:
    """A unit vector turning with the size: cosine cos(0.25 * the sizes' difference)."""
    return np.array([np.cos(0.25 * size), np.sin(0.25 * size)], np.float32)


def _voicer(size: float, texts: Sequence[str]) -> list[np.ndarray]:
    return [np.full(8, size, np.float32) for _ in texts]  # the size, for the stand-in judges


def _judges(monkeypatch: pytest.MonkeyPatch, misheard_over: float = 99.0) -> None:
    def measure(
        takes: Sequence[np.ndarray], _rate: int, _texts: Sequence[str], quality: bool = True
    ) -> Figures:
        size = float(takes[0][0])
        return Figures(0.5 if size > misheard_over else 0.02, 90.0 * 2 ** (size / 12), 3.3, _embedding(size))

    monkeypatch.setattr(dp, "measure", measure)
    monkeypatch.setattr(dp, "speaker_embedding", lambda takes, _rate: _embedding(float(takes[0][0])))


def test_the_farthest_sizes_that_pass_are_kept_apart_from_everything(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:  # fmt: skip
    _judges(monkeypatch)
    out = tmp_path / "designs.json"
    library = {"ellis": _embedding(6.0)}  # a Kokoro library voice where +6 would be
    data = dp.design_piper(out, ["hugo", "ivor", "jasper"], (_voicer, "en_US-joe-medium", "male"), library,
                           Targets(), ["a line"] * 6, say=lambda _m: None)  # fmt: skip
    kept = read_designs(json.loads(out.read_text()))
    sizes = sorted(v.resample_st for v in kept.values())
    assert sizes == [-3.0, 3.0]  # 3 from the base and from the library voice; nothing else as far
    everything = [_embedding(0.0), _embedding(6.0)] + [_embedding(s) for s in sizes]
    for v in data["voices"]:  # each kept voice's recorded cosine: to all the others, the base included
        own = _embedding(v["recipe"]["resample_st"])
        others = [e for e in everything if not np.allclose(e, own)]
        assert v["gates"]["max_cosine"] == pytest.approx(max(float(np.dot(own, e)) for e in others), abs=1e-4)
        assert (
            v["gates"]["max_cosine"] <= 0.80 and v["gender"] == "male" and v["name"] == v["id"].capitalize()
        )
    assert [v.id for v in sorted(kept.values(), key=lambda v: v.resample_st)] == ["hugo", "ivor"]
    assert kept["hugo"].base == "en_US-joe-medium" and kept["hugo"].age == "older"


def test_a_misheard_size_is_passed_over_for_the_next_farthest(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:  # fmt: skip
    _judges(monkeypatch, misheard_over=2.0)
    voicer = (_voicer, "en_US-joe-medium", "male")
    library = {"ellis": _embedding(6.0)}
    data = dp.design_piper(tmp_path / "d.json", ["hugo", "ivor"], voicer, library, Targets(), ["a line"] * 6,
                           say=lambda _m: None)  # fmt: skip
    assert [v["recipe"]["resample_st"] for v in data["voices"]] == [-3.0]
    assert data["rejected"]["wer"] >= 1


def test_sizes_are_whole_pitch_steps() -> None:
    """A design is voiced at whole steps of the cast's pitch scale, as a role's size is."""
    for s in dp.SIZES:
        steps = dp._size_st(s) / 0.12
        assert abs(steps - round(steps)) < 1e-6 and abs(dp._size_st(s) - s) <= 0.0601


def test_a_size_must_pass_on_every_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Piper's noise moves a size's figures between runs: one pass under the quality gate
    (joe's DNSMOS 3.3 less 0.3) rejects it, though the other passed."""
    _judges(monkeypatch)
    calls: list[float] = []
    fair = dp.measure

    def noisy(takes: Sequence[np.ndarray], rate: int, texts: Sequence[str], quality: bool = True) -> Figures:
        f = fair(takes, rate, texts, quality)
        size = float(takes[0][0])
        calls.append(size)
        worse = size == -3.0 and calls.count(size) == 2
        return Figures(f.wer, f.f0_median_hz, 2.9 if worse else f.dnsmos_ovrl, f.embedding)

    monkeypatch.setattr(dp, "measure", noisy)
    voicer = (_voicer, "en_US-joe-medium", "male")
    library = {"ellis": _embedding(6.0)}
    data = dp.design_piper(tmp_path / "d.json", ["hugo", "ivor"], voicer, library, Targets(), ["a line"] * 6,
                           say=lambda _m: None)  # fmt: skip
    assert (
        -3.0 not in [v["recipe"]["resample_st"] for v in data["voices"]] and data["rejected"]["quality"] == 1
    )
    assert calls.count(-3.0) == dp.PASSES
