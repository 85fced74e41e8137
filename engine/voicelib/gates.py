"""The measured gates of a voice, by ear proxies: how much of its speech a recogniser gets
right (Whisper tiny.en WER), its pitch (median F0), who it sounds like (a speaker embedding,
Resemblyzer's d-vector) and how clean it sounds (DNSMOS P.835 OVRL). Each proxy loads once.

The recogniser comes with the `asr` extra, the embedding and DNSMOS with the `design` extra;
a missing one is a `TroupeError` that names the extra."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import soxr
from numpy.typing import NDArray

from engine.core.errors import TroupeError
from engine.voicelib.pitch import f0_track

RATE_16K = 16_000
DNSMOS_WINDOW_S = 9.01
"""DNSMOS scores 9 s windows: lines are joined before scoring."""


@dataclass(frozen=True)
class Targets:
    """What a library voice must measure (issue figures: WER <= 0.08, distinct at cosine <=
    0.80, female F0 >= 165 Hz, male <= 150 Hz, DNSMOS OVRL within 0.3 of Piper joe's)."""

    max_wer: float = 0.08
    max_cosine: float = 0.80
    female_min_f0_hz: float = 165.0
    female_max_f0_hz: float = 300.0
    """Above this a voice is heard as a child's: kept out of the adult library."""
    male_max_f0_hz: float = 150.0
    male_min_f0_hz: float = 70.0
    max_dnsmos_drop: float = 0.3

    def pitch_ok(self, gender: str, f0_hz: float) -> bool:
        if gender == "female":
            return self.female_min_f0_hz <= f0_hz <= self.female_max_f0_hz
        return self.male_min_f0_hz <= f0_hz <= self.male_max_f0_hz

    def failed(self, figs: Figures, gender: str, reference_dnsmos: float, closest: float,
               cosine_margin: float = 0.0) -> str:  # fmt: skip
        """The first gate `figs` fail ("wer", "quality", "pitch", "similar"), or "" where
        they pass: `closest` is the highest cosine to any other voice, `reference_dnsmos`
        the quality reference's (Piper's joe), `cosine_margin` kept under the target."""
        return ("wer" if figs.wer > self.max_wer
                else "quality" if figs.dnsmos_ovrl < reference_dnsmos - self.max_dnsmos_drop
                else "pitch" if not self.pitch_ok(gender, figs.f0_median_hz)
                else "similar" if closest > self.max_cosine - cosine_margin else "")  # fmt: skip


@dataclass(frozen=True)
class Figures:
    wer: float
    f0_median_hz: float
    dnsmos_ovrl: float
    embedding: NDArray[np.float32]

    def cosine(self, other: NDArray[np.float32]) -> float:
        return float(np.dot(self.embedding, other))


def to_16k(audio: NDArray[np.float32], sample_rate_hz: int) -> NDArray[np.float32]:
    a = np.asarray(audio, np.float32).reshape(-1)
    if sample_rate_hz != RATE_16K:
        a = np.asarray(soxr.resample(a, sample_rate_hz, RATE_16K), np.float32)
    return a


@functools.cache
def _encoder() -> Any:
    try:
        from resemblyzer import VoiceEncoder  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise TroupeError(
            f"speaker embeddings need the design extra: pip install -e '.[design]' ({exc})"
        ) from exc
    return VoiceEncoder("cpu", verbose=False)


def speaker_embedding(takes: Sequence[NDArray[np.float32]], sample_rate_hz: int) -> NDArray[np.float32]:
    """One unit-length d-vector for the speaker of `takes` (the mean of each take's)."""
    enc = _encoder()
    vectors = [enc.embed_utterance(to_16k(t, sample_rate_hz)) for t in takes if len(t) > sample_rate_hz // 4]
    if not vectors:
        raise TroupeError("no take long enough to tell the speaker (a quarter second at least)")
    mean = np.mean(np.stack(vectors), axis=0)
    return np.asarray(mean / max(float(np.linalg.norm(mean)), 1e-9), np.float32)


def dnsmos_ovrl(takes: Sequence[NDArray[np.float32]], sample_rate_hz: int) -> float:
    """DNSMOS P.835 overall score of the takes joined with 0.2 s gaps (mean over 9 s windows)."""
    try:
        from speechmos import dnsmos  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise TroupeError(f"DNSMOS needs the design extra: pip install -e '.[design]' ({exc})") from exc
    gap = np.zeros(int(0.2 * RATE_16K), np.float32)
    joined = np.concatenate([x for t in takes for x in (to_16k(t, sample_rate_hz), gap)])
    joined = np.clip(joined, -1.0, 1.0)
    window = int(DNSMOS_WINDOW_S * RATE_16K)
    scores = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, max(1, len(joined) - window + 1), window):
            piece = joined[start : start + window]
            scores.append(float(dnsmos.run(piece, sr=RATE_16K)["ovrl_mos"]))
    return float(np.mean(scores))


def word_error_rate(takes: Sequence[NDArray[np.float32]], sample_rate_hz: int, texts: Sequence[str]) -> float:
    """Word errors over reference words, all takes pooled (Whisper tiny.en, the `asr` extra)."""
    from engine.asr import asr_available, shared_transcriber
    from engine.asr.text import normalise
    from engine.asr.wer import word_errors

    missing = asr_available()
    if missing:
        raise TroupeError(f"the intelligibility gate needs the asr extra: {missing}")
    transcriber = shared_transcriber()
    errors = words = 0
    for audio, text in zip(takes, texts, strict=True):
        heard = transcriber.transcribe(audio, sample_rate_hz)
        e = word_errors(normalise(text), [t for w in heard.words for t in normalise(w.text)])
        errors += e.substitutions + e.deletions + e.insertions
        words += e.n_reference
    return errors / max(1, words)


def pooled_f0(takes: Sequence[NDArray[np.float32]], sample_rate_hz: int) -> float:
    tracks = [f0_track(t, sample_rate_hz) for t in takes]
    frames = np.concatenate(tracks) if tracks else np.zeros(0)
    return float(np.median(frames)) if len(frames) else 0.0


def measure(takes: Sequence[NDArray[np.float32]], sample_rate_hz: int, texts: Sequence[str],
            quality: bool = True) -> Figures:  # fmt: skip
    """Every gate's figure for one voice's takes of `texts` (DNSMOS only when `quality`)."""
    return Figures(
        wer=word_error_rate(takes, sample_rate_hz, texts),
        f0_median_hz=pooled_f0(takes, sample_rate_hz),
        dnsmos_ovrl=dnsmos_ovrl(takes, sample_rate_hz) if quality else float("nan"),
        embedding=speaker_embedding(takes, sample_rate_hz),
    )
