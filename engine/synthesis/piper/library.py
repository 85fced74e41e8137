"""Troupe's designed voices on a Piper base: an installed Piper voice (the shipped
en_US-joe-medium) resampled to another speaker's size, kept by `troupe voices design --base
piper` only where it passed the same measured gates as the Kokoro library (intelligibility,
pitch, distinctness from every library voice and from the base itself, quality).

A designed voice is voiced as its base, that much slower, and played that much faster (or
the other way), pitch and formants moving together as a smaller or larger speaker's would,
its length kept (the resampling a role's size uses, `PiperSynthesizer.finish`). The file
`designs.json` in this package holds each voice's name, gender, age hint, F0, gate figures
and its recipe (base and `resample_st`), so it can be remade."""

from __future__ import annotations

import functools
import hashlib
import importlib.resources as resources
import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.core.errors import SynthesisError

LIBRARY_JSON = "designs.json"
MAX_RESAMPLE_ST = 12.0
"""The most a design is resampled (an octave; the shipped ones are within 6 semitones)."""
DESIGNS_ENV = "TROUPE_PIPER_DESIGNS"
"""A `designs.json` of a user's own (`troupe voices design --base piper --out DIR`), offered
beside the shipped designs (one of the same id replaces the shipped one)."""


@dataclass(frozen=True)
class DesignedVoice:
    """One voice made from a Piper base by resampling, and what its gates measured."""

    id: str
    name: str
    gender: str
    age: str
    accent: str
    base: str
    """The Piper voice it is made from (`en_US-joe-medium`)."""
    resample_st: float
    """Semitones it is played faster (up: a smaller speaker) after being voiced as much slower."""
    f0_median_hz: float
    gates: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["recipe"] = {"base": data.pop("base"), "resample_st": data.pop("resample_st")}
        return data

    @classmethod
    def from_dict(cls, data: Any) -> DesignedVoice:
        """A design as `to_dict` writes it; anything else raises `SynthesisError` saying what."""
        try:
            if not isinstance(data, Mapping):
                raise TypeError(f"expected an object, found {type(data).__name__}")
            recipe, gates = data["recipe"], data.get("gates") or {}
            if not isinstance(recipe, Mapping) or not isinstance(gates, Mapping):
                raise TypeError("'recipe' and 'gates' must be objects")
            age, accent = str(data.get("age", "adult")), str(data.get("accent", "en-us"))
            voice = cls(str(data["id"]), str(data["name"]), str(data["gender"]), age, accent,
                        str(recipe["base"]), float(recipe["resample_st"]), float(data["f0_median_hz"]),
                        {str(k): float(v) for k, v in gates.items()})  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise SynthesisError(
                f"a designed Piper voice is not readable ({exc!r} in {str(data)[:200]})"
            ) from exc
        if not (math.isfinite(voice.resample_st) and abs(voice.resample_st) <= MAX_RESAMPLE_ST):
            raise SynthesisError(f"designed Piper voice {voice.id!r}: resample_st {voice.resample_st} is not "
                                 f"within +-{MAX_RESAMPLE_ST:g} semitones")  # fmt: skip
        if voice.gender not in ("female", "male"):
            raise SynthesisError(
                f"designed Piper voice {voice.id!r}: gender {voice.gender!r} (female or male)"
            )
        return voice


def library_file() -> Any:
    return resources.files("engine.synthesis.piper") / LIBRARY_JSON


def read_designs(data: Mapping[str, Any]) -> dict[str, DesignedVoice]:
    voices = [DesignedVoice.from_dict(v) for v in data.get("voices", [])]
    return {v.id: v for v in voices}


@functools.cache
def shipped_designs() -> dict[str, DesignedVoice]:
    """The designed Piper voices that ship with Troupe ({} where the file is missing)."""
    path = library_file()
    if not path.is_file():
        return {}
    return read_designs(json.loads(path.read_text(encoding="utf-8")))


@functools.cache
def _user_designs(path: Path, _stamp: tuple[int, int]) -> dict[str, DesignedVoice]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SynthesisError(f"{path} ({DESIGNS_ENV}): not a designs.json ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("voices"), list):
        raise SynthesisError(f"{path} ({DESIGNS_ENV}): expected an object with a 'voices' list")
    try:
        return read_designs(data)
    except SynthesisError as exc:
        raise SynthesisError(f"{path} ({DESIGNS_ENV}): {exc}") from exc


def designs() -> dict[str, DesignedVoice]:
    """The designed Piper voices on offer: the shipped ones and a user's (`DESIGNS_ENV`);
    a user's file that cannot be read raises `SynthesisError` naming it."""
    raw = os.environ.get(DESIGNS_ENV, "").strip()
    if not raw:
        return shipped_designs()
    path = Path(raw).expanduser()
    try:
        st = path.stat()
    except OSError as exc:
        raise SynthesisError(f"{path} ({DESIGNS_ENV}): cannot read it ({exc.strerror})") from exc
    return {**shipped_designs(), **_user_designs(path, (st.st_mtime_ns, st.st_size))}


def fingerprint(designs: Mapping[str, DesignedVoice]) -> str:
    """What changes when any design's recipe does (the take cache's key)."""
    recipes = sorted((v.id, v.base, v.resample_st) for v in designs.values())
    return hashlib.sha256(json.dumps(recipes).encode()).hexdigest()[:12]
