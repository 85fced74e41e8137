"""`voices design --base moved`: voices of the other gender made from the library's own (the
model's pitch and the size moved), kept farthest-first; the judges stand in for Whisper,
DNSMOS and the speaker encoder here (bench_voices.py measures the shipped voices)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from engine.synthesis.kokoro.library import Library, LibraryVoice, Recipe, read_library
from engine.voicelib import design_moved as dm
from engine.voicelib.gates import Figures, Targets

F0 = {"m": 100.0, "f": 220.0}
"""Each stand-in voice's own pitch, by the first timbre weight's name."""


def _voice(vid: str, gender: str, resample: float = 0.0) -> LibraryVoice:
    recipe = Recipe({gender[0]: 1.0}, {gender[0]: 1.0}, seed=len(vid), resample_st=resample)
    return LibraryVoice(vid, vid.capitalize(), gender, "adult", "en-us", recipe, F0[gender[0]])


def _embedding(recipe: Recipe) -> np.ndarray:
    """A unit vector turning with the pitch and size moved (and apart for each source)."""
    angle = 0.08 * recipe.f0_st + 0.1 * recipe.resample_st + (0.0 if "m" in recipe.timbre else 3.0)
    return np.array([np.cos(angle), np.sin(angle)], np.float32)


def _voicer(style: np.ndarray, recipe: Recipe, texts: Sequence[str]) -> list[np.ndarray]:
    """Takes that carry their recipe's figures to the stand-in judges."""
    source = next(iter(recipe.timbre))
    f0 = F0[source] * 2 ** ((recipe.f0_st + recipe.resample_st) / 12)
    take = np.array([*_embedding(recipe), f0, recipe.resample_st, float(style[0, 0])], np.float32)
    return [take for _ in texts]


def _judges(monkeypatch: pytest.MonkeyPatch, poor_over_st: float = 99.0) -> None:
    def measure(takes: Sequence[np.ndarray], _rate: int, _t: Sequence[str], quality: bool = True) -> Figures:
        t = takes[0]
        return Figures(0.02, float(t[2]), 2.9 if t[3] > poor_over_st else 3.3, t[:2] / np.linalg.norm(t[:2]))

    monkeypatch.setattr(dm, "measure", measure)

    def embed(takes: Sequence[np.ndarray], _rate: int) -> np.ndarray:
        return takes[0][:2] / np.linalg.norm(takes[0][:2])

    monkeypatch.setattr(dm, "speaker_embedding", embed)


def _library() -> Library:
    voices = (_voice("bruno", "male", -1.0), _voice("ada", "female"))
    styles = {"bruno": np.full((4, 256), 1.0, np.float32), "ada": np.full((4, 256), 2.0, np.float32)}
    return Library(voices, styles, {"troupe_voice_library": 1, "seed": 7})


def _design(tmp_path: Path, counts: dict[str, int], poor_over_st: float = 99.0,
            monkeypatch: pytest.MonkeyPatch | None = None) -> dict:  # fmt: skip
    reference = Figures(0.03, 90.0, 3.35, np.array([1.0, 0.0], np.float32))
    names = {"female": ("frances", "greta", "hazel"), "male": ("jasper", "kenneth")}
    return dm.design_moved(tmp_path, _library(), _voicer, names, {"joe": np.array([0.0, -1.0], np.float32)},
                           reference, Targets(), ["a line"] * 6, counts, say=lambda _m: None)  # fmt: skip


def test_moved_voices_pass_apart_and_rebuild_from_their_source(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:  # fmt: skip
    """Kept voices are of the gender asked for, apart from every voice (the library's, the
    others given, each other), named in turn; the written library holds the old voices as
    they were and each new one with its source's style and recipe, only its pitch and size
    moved (so it rebuilds from the packs), and says what it was moved from."""
    _judges(monkeypatch)
    data = _design(tmp_path, {"female": 3, "male": 0})
    meta = json.loads((tmp_path / "library.json").read_text())
    written = read_library(meta, (tmp_path / "library.npz").read_bytes())
    old = {v.id: v for v in _library().voices}
    ids = [v.id for v in written.voices]
    assert ids[:2] == ["bruno", "ada"] and written.by_id()["bruno"] == old["bruno"]
    new = [v for v in written.voices if v.id not in old]
    assert new and [v.id for v in new] == ["frances", "greta", "hazel"][: len(new)]
    embeddings = [_embedding(v.recipe) for v in written.voices] + [np.array([0.0, -1.0], np.float32)]
    for v in new:
        assert v.gender == "female" and data["moved"]["kept"][v.id] == "bruno"
        assert replace(v.recipe, f0_st=0.0, resample_st=-1.0) == old["bruno"].recipe
        assert v.recipe.f0_st in dm.MOVES["female"][0]
        assert round(v.recipe.resample_st + 1.0, 2) in dm.MOVES["female"][1]  # bruno's own -1 and a move
        assert np.array_equal(written.styles[v.id], written.styles["bruno"])
        own = _embedding(v.recipe)
        closest = max(float(np.dot(own, e)) for e in embeddings if not np.allclose(e, own))
        assert closest <= 0.80 - dm.COSINE_MARGIN + 1e-6
        assert v.gates["max_cosine"] == pytest.approx(closest, abs=1e-4) and v.f0_median_hz >= 165


def test_a_move_under_the_quality_gate_is_passed_over(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:  # fmt: skip
    """Moves past a size the judges call poor are rejected as such, never kept."""
    _judges(monkeypatch, poor_over_st=1.7)  # bruno's -1 plus 3 or more: poor; plus 2.5: kept
    data = _design(tmp_path, {"female": 3, "male": 0})
    kept = [v for v in data["voices"] if v["id"] in data["moved"]["kept"]]
    assert kept and all(v["recipe"]["resample_st"] == 1.5 for v in kept)
    assert data["moved"]["rejected"].get("quality", 0) >= 1


def test_no_more_than_asked_and_the_other_way(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A count bounds each gender; a man made from the female voice has its pitch moved down."""
    _judges(monkeypatch)
    data = _design(tmp_path, {"female": 1, "male": 2})
    kept = data["moved"]["kept"]
    genders = {v["id"]: v["gender"] for v in data["voices"]}
    assert sum(1 for k in kept if genders[k] == "female") == 1
    men = [v for v in data["voices"] if v["id"] in kept and v["gender"] == "male"]
    assert 1 <= len(men) <= 2 and all(kept[v["id"]] == "ada" and v["recipe"]["f0_st"] < 0 for v in men)


def test_a_fit_started_from_a_moved_voice_keeps_its_pitch() -> None:
    """The fit's search vector carries the model's own pitch, so a fit that starts from a
    moved voice (frances) starts from that voice, not from its source at a man's pitch."""
    from engine.voicelib.fit import _recipe, _vector

    moved = Recipe({"jm_kumo": 1.0}, {"jm_kumo": 0.9, "jf_alpha": 0.1}, resample_st=3.5, f0_st=8.5)
    packs = ["jf_alpha", "jm_kumo"]
    back = _recipe(_vector(moved, packs), packs)
    assert (back.f0_st, back.resample_st) == (8.5, 3.5) and back.timbre == moved.timbre
    unmoved = replace(moved, f0_st=0.0)  # a voice that does not move it: searched as before
    assert len(_vector(unmoved, packs)) == len(_vector(moved, packs)) - 1
    assert _recipe(_vector(unmoved, packs), packs) == replace(unmoved, prosody=back.prosody)
