"""Offline voice effects on synthesized clips (never on the real-time path): a role's pitch
shift, so several roles can share one natural voice, and the delivery filters (telephone,
room). Built on pedalboard (Rubber Band for pitch, JUCE filters and reverb)."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.synthesis.base import Mono

SEMITONES_PER_PITCH_STEP = 6 / 50
"""A role's pitch 0..100 (50 = as voiced) -> -6..+6 semitones on natural voices."""


SHIFT_METHOD = "timbre-by-resampling"
"""How a role's pitch and timbre are done (`resample_voice`, `pitch_shift`): part of a take's
cache key, so takes shifted another way are not read as these."""


def semitone_ratio(semitones: float) -> float:
    """The frequency ratio of `semitones` (12: an octave, 2.0)."""
    return float(2.0 ** (semitones / 12.0))


def semitones_for(pitch: int) -> float:
    return (pitch - 50) * SEMITONES_PER_PITCH_STEP


def pitch_shift(audio: Mono, sample_rate_hz: int, semitones: float, preserve_formants: bool = True) -> Mono:
    """`audio` `semitones` higher (or lower), same length; with `preserve_formants` the
    speaker's timbre stays (another pitch of the same person); without, the formants move
    too (a smaller or larger person)."""
    if abs(semitones) < 0.05 or audio.size < 256:
        return audio
    from pedalboard import time_stretch

    out = time_stretch(
        audio.reshape(1, -1).astype(np.float32), float(sample_rate_hz), 1.0,
        pitch_shift_in_semitones=float(semitones), preserve_formants=preserve_formants,
    )  # fmt: skip
    shifted = np.asarray(out, np.float32).reshape(-1)
    if shifted.size >= audio.size:
        return np.ascontiguousarray(shifted[: audio.size])
    return np.concatenate([shifted, np.zeros(audio.size - shifted.size, np.float32)])


def time_stretch(audio: Mono, sample_rate_hz: int, factor: float) -> Mono:
    """`audio` played `factor` times faster, same pitch and timbre (Rubber Band)."""
    if abs(factor - 1.0) < 1e-3 or audio.size < 256:
        return audio
    from pedalboard import time_stretch as rubberband

    out = rubberband(audio.reshape(1, -1).astype(np.float32), float(sample_rate_hz), float(factor),
                     preserve_formants=True)  # fmt: skip
    return np.ascontiguousarray(np.asarray(out, np.float32).reshape(-1))


def shift_voice(audio: Mono, sample_rate_hz: int, pitch_semitones: float, timbre_semitones: float) -> Mono:
    """Another character from the same voice: formants (the apparent size of the speaker)
    moved by `timbre_semitones`, the pitch by `pitch_semitones` in all."""
    if abs(timbre_semitones) >= 0.05:
        audio = pitch_shift(audio, sample_rate_hz, timbre_semitones, preserve_formants=False)
    return pitch_shift(audio, sample_rate_hz, pitch_semitones - timbre_semitones)


def resample_voice(audio: Mono, sample_rate_hz: int, semitones: float) -> Mono:
    """The take played `semitones` faster (slower where negative): pitch and formants move
    together, as between a smaller and a larger speaker; the length shrinks by as much."""
    import soxr

    played = sample_rate_hz * semitone_ratio(semitones)
    out = soxr.resample(np.asarray(audio, np.float32), played, sample_rate_hz)
    return np.ascontiguousarray(np.asarray(out, np.float32))


def telephone(audio: Mono, sample_rate_hz: int) -> Mono:
    """A telephone line: 300-3400 Hz band, a little drive."""
    from pedalboard import Distortion, Gain, HighpassFilter, LowpassFilter

    chain = [HighpassFilter(300.0), HighpassFilter(300.0), LowpassFilter(3400.0),
             LowpassFilter(3400.0), Distortion(6.0), Gain(-4.0)]  # fmt: skip
    return _run(chain, audio, sample_rate_hz)


def room(audio: Mono, sample_rate_hz: int, wet: float = 0.25) -> Mono:
    """The voice from another room (off screen): duller, in a reverberant space."""
    from pedalboard import LowpassFilter, Reverb

    chain = [LowpassFilter(2500.0), Reverb(room_size=0.5, wet_level=wet, dry_level=0.7)]
    return _run(chain, audio, sample_rate_hz)


def _run(chain: list[Any], audio: Mono, sample_rate_hz: int) -> Mono:
    block = audio.reshape(1, -1).astype(np.float32)
    for plugin in chain:
        block = plugin(block, float(sample_rate_hz))
    return np.ascontiguousarray(np.asarray(block, np.float32).reshape(-1))


FILTERS = {"telephone": telephone, "room": room}
"""Delivery filter name -> effect."""
