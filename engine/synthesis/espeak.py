"""The embedded default voice: espeak-ng, resampled to the engine rate."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterator, Sequence

import numpy as np
import soxr
from numpy.typing import NDArray

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.espeak_lib import EspeakLib
from engine.synthesis.lexicon import for_espeak, prepare
from engine.synthesis.text import split_chunks

_VOICE_NAME = re.compile(r"[a-z][a-z]_[a-z0-9]+")
_SILENCE = 1e-3
_LEAD_MS = 5


def stand_in(voice: Voice) -> Voice:
    """The espeak-ng voice that voices a line cast to another backend when it falls back
    (after failures, or to make its deadline): English, British for a voice whose name says
    so (Kokoro's `b*_name`), else American; female or male as the name's second letter says
    (Kokoro's `?f_` / `?m_`; the first voice of a blend; a Piper voice's known speaker or
    designed voice's gender, or the gender its timbre shift moves it to). The role's rate,
    pitch, gain and pan stay as cast."""
    if voice.backend == "espeak":
        return voice
    if voice.backend == "piper":  # the voice's gender, unless the role's timbre moved it
        from engine.synthesis.piper import offered_designs
        from engine.synthesis.piper.names import voice_gender

        design = offered_designs().get(voice.voice_id.split("#")[0])
        gender = (design.gender if design is not None else voice_gender(voice.voice_id))[:1]
        # NB: a designed voice's sharers are other sizes of it (pitch and timbre alike): its
        # own gender; a role moved to the other gender (pitch apart from timbre) follows its
        # pitch (its timbre is held within `cast.MAX_SHARED_RESAMPLE_ST` of the voice's own size)
        if design is None:
            gender = "f" if voice.pitch_range >= 60 else "m" if voice.pitch_range <= 40 else gender
        elif voice.pitch != voice.pitch_range:
            gender = "f" if voice.pitch >= 60 else "m" if voice.pitch <= 40 else gender
        variant = {"f": "+f3", "m": "+m3"}.get(gender, "")
        return dataclasses.replace(voice, backend="espeak", voice_id="en-us" + variant)
    from engine.synthesis.kokoro.library import shipped_library

    library = shipped_library()
    designed = library.by_id().get(voice.voice_id) if library is not None else None
    if designed is not None:  # a library voice: its own gender
        variant = "+f3" if designed.gender == "female" else "+m3"
        return dataclasses.replace(voice, backend="espeak", voice_id="en-us" + variant)
    found = _VOICE_NAME.search(voice.voice_id.lower())
    name = found.group(0) if found else ""
    language = "en" if name[:1] == "b" else "en-us"  # NB: espeak-ng's "en" is British
    variant = {"f": "+f3", "m": "+m3"}.get(name[1:2], "")
    return dataclasses.replace(voice, backend="espeak", voice_id=language + variant)


def voice_name(voice: Voice) -> str:
    """The espeak voice string for `voice`, e.g. 'en-gb-x-rp+f2'."""
    return voice.voice_id


def _lead(raw: NDArray[np.int16], sample_rate_hz: int) -> int:
    """Where to start: espeak starts every utterance with ~20-60 ms of silence, cut so cues
    start on time (up to `_LEAD_MS` before the first sound). Looks at the opening first."""
    threshold = int(_SILENCE * 32768)
    for end in (sample_rate_hz // 4, raw.size):
        head = raw[:end]
        loud = np.flatnonzero((head > threshold) | (head < -threshold))
        if loud.size:
            return max(0, int(loud[0]) - sample_rate_hz * _LEAD_MS // 1000)
    return 0


def synthesize_raw(text: str, voice: Voice) -> tuple[NDArray[np.int16], int]:
    """Voice `text` in this process (serialised by the library lock), the pronunciation
    lexicon applied (its IPA as espeak-ng phoneme mnemonics): espeak-ng's own 16-bit samples,
    the lead cut, and their rate. Half the bytes of float32 and a fraction of 48 kHz's: what a
    worker process sends back."""
    lib = EspeakLib.instance()
    said = for_espeak(prepare(text))
    raw = lib.synthesize(said, voice_name(voice), voice.rate_wpm, voice.pitch, voice.pitch_range)
    return raw[_lead(raw, lib.sample_rate_hz) :], lib.sample_rate_hz


def from_raw(raw: NDArray[np.int16], raw_rate_hz: int, sample_rate_hz: int = SAMPLE_RATE_HZ) -> Mono:
    """`synthesize_raw`'s samples as a clip at `sample_rate_hz` (the lead was cut before
    resampling, which is then the only pass at the engine rate)."""
    audio = np.multiply(raw, np.float32(1 / 32768), dtype=np.float32)
    if raw_rate_hz != sample_rate_hz and audio.size:
        audio = soxr.resample(audio, raw_rate_hz, sample_rate_hz, quality="HQ")
    return np.ascontiguousarray(audio, dtype=np.float32)


def synthesize_text(text: str, voice: Voice, sample_rate_hz: int = SAMPLE_RATE_HZ) -> Mono:
    """Voice `text` in this process as a clip at `sample_rate_hz`."""
    return from_raw(*synthesize_raw(text, voice), sample_rate_hz)


@functools.cache
def espeak_voices() -> list[VoiceInfo]:
    """Every espeak language voice, plus each English voice with each variant."""
    lib = EspeakLib.instance()
    out: list[VoiceInfo] = []
    for v in lib.list_voices():
        vid = v.identifier.rsplit("/", 1)[-1].lower()
        lang = v.languages[0] if v.languages else vid
        out.append(VoiceInfo("espeak", vid, v.name, lang, v.gender))
    return out


@functools.cache
def espeak_variants() -> list[VoiceInfo]:
    """Voice variants ('+m3', '+f2', ...) that combine with any language voice."""
    lib = EspeakLib.instance()
    return [
        VoiceInfo("espeak", v.identifier.rsplit("/", 1)[-1], v.name, "variant", v.gender)
        for v in lib.list_voices(variants=True)
        if v.identifier.startswith("!v/")
    ]


class EspeakSynthesizer:
    """espeak-ng in this process: one call at a time (the library is not thread-safe)."""

    name = "espeak"
    max_batch = 1
    expected_rtf = 0.01
    """A first guess of seconds per spoken second (measured here: 0.004-0.007 per line on one
    core), until the scheduler has timed its own lines; a guess 10x too slow made admission
    refuse most of a server's first burst."""
    sample_rate_hz = SAMPLE_RATE_HZ

    def voices(self) -> list[VoiceInfo]:
        return espeak_voices()

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        return [synthesize_text(r.text, r.voice, self.sample_rate_hz) for r in batch]

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        chunks = split_chunks(request.text)
        if not chunks:
            raise SynthesisError(f"nothing to say in {request.text!r}")
        for chunk in chunks:
            yield synthesize_text(chunk, request.voice, self.sample_rate_hz)

    def close(self) -> None:
        pass
