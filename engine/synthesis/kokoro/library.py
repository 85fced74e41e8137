"""Troupe's designed English voices: Kokoro styles made from the packs that ship with the
model (blends, extrapolations and seeded steps in the style space), each kept by
`troupe voices design` only where it passed the measured gates (intelligibility, pitch,
distinctness, quality). The library is data in this package: `library.json` (each voice's
name, gender, age, accent, gate figures and the recipe that makes it) and `library.npz`
(the styles). A recipe rebuilds its style from the shipped packs exactly, so the
library can be checked and remade anywhere the model is installed."""

from __future__ import annotations

import functools
import importlib.resources as resources
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from engine.core.errors import SynthesisError
from engine.synthesis.effects import semitone_ratio

Style = NDArray[np.float32]
TIMBRE = slice(0, 128)
"""The half of a style row the decoder reads: who is speaking."""
PROSODY = slice(128, 256)
"""The half the duration and pitch predictor reads: how they speak."""
LIBRARY_JSON = "library.json"
LIBRARY_NPZ = "library.npz"
LIBRARY_VERSION = 1


class Shift(NamedTuple):
    """How a voice's takes are moved, in semitones. `pitch_st` and `formant_st` go through
    Rubber Band after synthesis (a formant shift of 3 semitones cost DNSMOS OVRL 0.15-0.45);
    `resample_st` plays the take that much faster (or slower), pitch and formants moving
    together as a smaller (or larger) speaker's would, after voicing it as much slower
    (Kokoro's speed), so its length is kept and nothing of a pitch shifter is heard (DNSMOS
    -0.23 to +0.07 at +-3 semitones); `f0_st` moves the pitch the model itself predicts
    (its F0 curve scaled before the vocoder voices it: `pitch_graph`), formants kept and
    no pitch shifter heard, where the model takes it, else it joins `pitch_st`."""

    pitch_st: float = 0.0
    formant_st: float = 0.0
    resample_st: float = 0.0
    f0_st: float = 0.0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Shift:
        """The shift a recipe's fields name (each 0 where absent)."""
        return cls(*(float(data.get(name, 0.0)) for name in cls._fields))

    def speed_factor(self) -> float:
        """What the voicing speed is multiplied by so the resampled take keeps its length."""
        return 1.0 / semitone_ratio(self.resample_st)

    def with_role(self, pitch_st: float, timbre_st: float) -> Shift:
        """This shift and a role's own (its pitch in all, and its timbre: the apparent size,
        done by resampling, the pitch that moves with it given back by Rubber Band)."""
        if not pitch_st and not timbre_st:
            return self
        return self._replace(
            pitch_st=self.pitch_st + pitch_st - timbre_st, resample_st=self.resample_st + timbre_st
        )

    def after_model(self, native_f0: bool) -> Shift:
        """What is left to do after a model call: all of it but `f0_st` where the model moved
        its pitch itself (`native_f0`), else with `f0_st` done by Rubber Band."""
        if not self.f0_st:
            return self
        return self._replace(f0_st=0.0, pitch_st=self.pitch_st + (0.0 if native_f0 else self.f0_st))


@dataclass(frozen=True)
class Recipe:
    """How a library voice is made from the shipped packs: a weighted sum for each half of
    the style (weights sum to 1; a negative weight extrapolates away from that pack), then a
    seeded step of `step` pack-spreads (the per-dimension spread of the packs) in a random
    direction; its takes are then moved by `pitch_st` semitones in pitch and `formant_st`
    in formants (the vocal tract's size: another speaker, not another pitch of the same),
    and by `resample_st` in both together (a smaller or larger speaker; see `Shift`); the
    model's own pitch is moved by `f0_st` (a voice made from another of the other gender)."""

    timbre: dict[str, float]
    prosody: dict[str, float]
    seed: int = 0
    step: float = 0.0
    pitch_st: float = 0.0
    formant_st: float = 0.0
    resample_st: float = 0.0
    f0_st: float = 0.0

    @property
    def shift(self) -> Shift:
        return Shift(self.pitch_st, self.formant_st, self.resample_st, self.f0_st)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if not self.f0_st:  # as the recipes written before the model's pitch could move
            del data["f0_st"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Recipe:
        return cls({str(k): float(v) for k, v in data["timbre"].items()},
                   {str(k): float(v) for k, v in data["prosody"].items()},
                   int(data.get("seed", 0)), float(data.get("step", 0.0)),
                   *Shift.from_dict(data))  # fmt: skip


def _mix(packs: Mapping[str, Style], weights: Mapping[str, float], where: str) -> Style:
    missing = [n for n in weights if n not in packs]
    if missing:
        raise SynthesisError(f"{where}: the recipe names pack(s) not installed: {', '.join(missing)}")
    total = sum(weights.values())
    if abs(total) < 1e-6:
        raise SynthesisError(f"{where}: a recipe's weights must not sum to 0")
    rows = min(p.shape[0] for p in packs.values())
    out = np.zeros((rows, 256), np.float64)
    for name, w in weights.items():
        out += (w / total) * packs[name][:rows].astype(np.float64)
    return out.astype(np.float32)


def build_style(recipe: Recipe, packs: Mapping[str, Style], where: str = "recipe") -> Style:
    """The style a recipe makes from `packs` (name -> (rows, 256)); deterministic."""
    style = _mix(packs, recipe.timbre, where)
    style[:, PROSODY] = _mix(packs, recipe.prosody, where)[:, PROSODY]
    if recipe.step:
        rows = style.shape[0]
        spread = np.std(np.stack([p[:rows] for p in packs.values()]), axis=0).astype(np.float32)
        direction = np.random.default_rng(recipe.seed).standard_normal(256).astype(np.float32)
        direction /= float(np.linalg.norm(direction)) / np.sqrt(256)
        style = style + recipe.step * spread * direction[None, :]
    return np.asarray(style, np.float32)


@dataclass(frozen=True)
class LibraryVoice:
    """One designed voice and what its gates measured."""

    id: str
    name: str
    gender: str
    """'female' or 'male'."""
    age: str
    """'young', 'adult' or 'older': how it was heard when designed, a casting hint."""
    accent: str
    recipe: Recipe
    f0_median_hz: float
    gates: dict[str, float] = field(default_factory=dict)
    """wer, dnsmos_ovrl, max_cosine (to every other kept voice) as measured at design."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["recipe"] = self.recipe.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LibraryVoice:
        return cls(str(data["id"]), str(data["name"]), str(data["gender"]), str(data.get("age", "adult")),
                   str(data.get("accent", "en-us")), Recipe.from_dict(data["recipe"]),
                   float(data["f0_median_hz"]),
                   {str(k): float(v) for k, v in data.get("gates", {}).items()})  # fmt: skip


@dataclass(frozen=True)
class Library:
    voices: tuple[LibraryVoice, ...]
    styles: dict[str, Style]
    meta: dict[str, Any] = field(default_factory=dict)
    """How it was made: the base packs, the line set, the gates' thresholds."""

    def by_id(self) -> dict[str, LibraryVoice]:
        return {v.id: v for v in self.voices}


def library_files() -> tuple[Any, Any]:
    base = resources.files("engine.synthesis.kokoro") / "library"
    return base / LIBRARY_JSON, base / LIBRARY_NPZ


@functools.cache
def shipped_library() -> Library | None:
    """The library that ships with Troupe; None where its files are missing."""
    js, npz = library_files()
    if not js.is_file() or not npz.is_file():
        return None
    return read_library(json.loads(js.read_text(encoding="utf-8")), npz.read_bytes())


def read_library(data: Mapping[str, Any], npz_bytes: bytes) -> Library:
    import io

    voices = tuple(LibraryVoice.from_dict(v) for v in data.get("voices", []))
    with np.load(io.BytesIO(npz_bytes), allow_pickle=False) as z:
        styles = {name: np.asarray(z[name], np.float32) for name in z.files}
    missing = [v.id for v in voices if v.id not in styles]
    if missing:
        raise SynthesisError(f"the voice library has no style for {', '.join(missing)}")
    meta = {k: v for k, v in data.items() if k != "voices"}
    return Library(voices, styles, meta)
