"""`troupe voices design --base piper`: voices made from an installed Piper voice (the shipped
en_US-joe-medium) by resampling it to other speakers' sizes, kept only where they pass the
gates the Kokoro library was kept by and are their own speaker next to every voice kept
before (the Kokoro library's, the base itself, each other).

The search is a grid, not a walk: a Piper voice has no style to move, only its size. Every
size on `SIZES` is voiced on a few screening lines; the size farthest (speaker embedding)
from everything kept is judged on the full line set, kept if it passes, and the rest are
looked at again against what is now kept, until none is far enough. Piper draws its noise
anew for every take (the voice's own variation), so a size's figures move between runs: it
is judged on `PASSES` passes and kept only where the worst of them passes. The noise is
seeded (`piper_voicer(seed)`), so the same seed, base, library and gates give the same
voices."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine.core.errors import TroupeError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import Mono, SynthRequest
from engine.synthesis.effects import SEMITONES_PER_PITCH_STEP
from engine.synthesis.piper.library import LIBRARY_JSON, DesignedVoice
from engine.voicelib.design import SCREEN_MARGIN, age_hint
from engine.voicelib.gates import Figures, Targets, measure, speaker_embedding

SIZES = tuple(round(-3.0 + 0.5 * k, 1) for k in range(19) if abs(-3.0 + 0.5 * k) >= 1.0)
"""Resamplings tried, in semitones: -3 to +6 (past 3 down Whisper began to mishear a Kokoro
voice; joe at +5 still measured WER 0.015 and DNSMOS 3.31); under 1 is the base itself."""
SCREEN_LINES = 5
PASSES = 2
"""Full-set passes a size is judged on (joe at -3 semitones measured DNSMOS 3.15 in one
pass and 3.05 in another, against a gate of 3.06)."""
COSINE_MARGIN = 0.01
"""A size is kept this far under the target cosine: joe's own embedding is one noise draw,
and a size kept at 0.798 against it measured 0.801 against another (bench_voices.py)."""

BaseVoicer = Callable[[float, Sequence[str]], list[Mono]]
"""(resampling in semitones, texts) -> the base's 48 kHz takes at that size."""


def piper_voicer(base: str | None = None, seed: int = 2026) -> tuple[BaseVoicer, str, str]:
    """A voicer over an installed Piper voice (default: the shipped joe), its name
    and its speaker's gender; its noise drawn from `seed` (`seed_noise`: set here, before
    the voice loads)."""
    from engine.synthesis.piper import make_piper, seed_noise
    from engine.synthesis.piper.synth import PiperSynthesizer

    seed_noise(seed)

    piper = make_piper()
    if not isinstance(piper, PiperSynthesizer):
        raise TroupeError("voices design: no Piper voice is installed (the neural extra ships joe)")
    from engine.synthesis.piper import SHIPPED_VOICE

    name = base or (SHIPPED_VOICE if SHIPPED_VOICE in piper.paths else sorted(piper.paths)[0])
    if name not in piper.paths:
        raise TroupeError(f"voices design: no Piper voice {name!r}; have {', '.join(sorted(piper.paths))}")
    gender = next(v.gender for v in piper.voices() if v.voice_id == name)
    if gender not in ("female", "male"):
        raise TroupeError(f"voices design: the gender of Piper voice {name!r} is not known")
    piper.designs = {}  # the base alone, at the sizes asked for

    def voice(size_st: float, texts: Sequence[str]) -> list[Mono]:
        step = 50 + size_st / SEMITONES_PER_PITCH_STEP  # timbre and pitch together: a resampling
        v = Voice(backend="piper", voice_id=name, pitch=round(step), pitch_range=round(step))
        return piper.synthesize([SynthRequest(t, v) for t in texts])

    return voice, name, gender


def kokoro_library_embeddings(lines: Sequence[str]) -> dict[str, NDArray[np.float32]]:
    """The shipped Kokoro library's voices' speaker embeddings on `lines` ({} without Kokoro)."""
    from engine.synthesis.kokoro.library import shipped_library
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx

    library = shipped_library()
    if library is None:
        return {}
    model = KokoroOnnx()
    model.load()
    return {
        v.id: speaker_embedding(
            model.synthesize([SynthRequest(t, Voice(backend="kokoro", voice_id=v.id)) for t in lines]),
            SAMPLE_RATE_HZ,
        )
        for v in library.voices
    }


def _size_st(step: float) -> float:
    """A size as the cast's pitch steps voice it (whole steps of `SEMITONES_PER_PITCH_STEP`)."""
    return round(round(step / SEMITONES_PER_PITCH_STEP) * SEMITONES_PER_PITCH_STEP, 2)


def _worst(passes: Sequence[Figures]) -> Figures:
    """The passes' worst WER and DNSMOS, their mean F0 and speaker embedding."""
    mean = np.mean([f.embedding for f in passes], axis=0)
    return Figures(max(f.wer for f in passes), float(np.mean([f.f0_median_hz for f in passes])),
                   min(f.dnsmos_ovrl for f in passes),
                   (mean / float(np.linalg.norm(mean))).astype(np.float32))  # fmt: skip


def design_piper(out_file: Path, names: Sequence[str], voicer: tuple[BaseVoicer, str, str],
                 others: Mapping[str, NDArray[np.float32]], targets: Targets, lines: Sequence[str],
                 sizes: Sequence[float] = SIZES, say: Callable[[str], None] = print,
                 reference: Figures | None = None) -> dict[str, Any]:  # fmt: skip
    """Keep the sizes of the voicer's base that pass every gate, each named from `names` in
    turn, apart (cosine) from `others` (id -> embedding: the Kokoro library), the base and
    each other; write them to `out_file` (the Piper voices' `designs.json`) and return it."""
    voice, base, gender = voicer
    language = base.split("-")[0]  # `en_US-joe-medium`: en-us
    accent = language.replace("_", "-").lower() if "_" in language else "en-us"
    ref = reference or measure(voice(0.0, lines), SAMPLE_RATE_HZ, lines)
    say(
        f"base piper:{base} ({gender}): WER {ref.wer:.3f}, F0 {ref.f0_median_hz:.0f} Hz, "
        f"DNSMOS {ref.dnsmos_ovrl:.2f}"
    )
    apart: dict[str, NDArray[np.float32]] = {**others, f"piper:{base}": ref.embedding}
    screen = list(lines[:SCREEN_LINES])
    pending = {_size_st(s): speaker_embedding(voice(_size_st(s), screen), SAMPLE_RATE_HZ) for s in sizes}
    kept: list[tuple[DesignedVoice, Figures]] = []
    left = list(names)
    rejected: dict[str, int] = {}

    def nearest(e: NDArray[np.float32]) -> float:
        return max(float(np.dot(e, o)) for o in apart.values())

    while pending and left:
        size = min(pending, key=lambda s: nearest(pending[s]))
        if nearest(pending.pop(size)) > targets.max_cosine + SCREEN_MARGIN:
            break  # the farthest left is too close: so is every other
        passes = [measure(voice(size, lines), SAMPLE_RATE_HZ, lines) for _ in range(PASSES)]
        figs = _worst(passes)
        closest = max(nearest(f.embedding) for f in passes)
        reason = targets.failed(figs, gender, ref.dnsmos_ovrl, closest, COSINE_MARGIN)
        if reason:
            rejected[reason] = rejected.get(reason, 0) + 1
            say(
                f"  {size:+.2f} st: {reason} (WER {figs.wer:.3f}, DNSMOS {figs.dnsmos_ovrl:.2f}, "
                f"cos {closest:.2f})"
            )
            continue
        name = left.pop(0)
        gates = {"wer": round(figs.wer, 4), "dnsmos_ovrl": round(figs.dnsmos_ovrl, 3)}
        entry = DesignedVoice(name, name.capitalize(), gender, age_hint(gender, figs.f0_median_hz), accent,
                              base, size, round(figs.f0_median_hz, 1), gates)  # fmt: skip
        kept.append((entry, figs))
        apart[name] = figs.embedding
        say(f"kept {name} ({size:+.2f} st, F0 {figs.f0_median_hz:.0f} Hz, WER {figs.wer:.3f}, "
            f"DNSMOS {figs.dnsmos_ovrl:.2f}, cos {closest:.2f})")  # fmt: skip
    voices = []
    for entry, figs in kept:
        cos = max(float(np.dot(figs.embedding, e)) for k, e in apart.items() if k != entry.id)
        voices.append({**entry.to_dict(), "gates": {**entry.gates, "max_cosine": round(cos, 4)}})
    data = {
        "troupe_piper_designs": 1,
        "base": f"piper:{base}",
        "sizes_tried": [_size_st(s) for s in sizes],
        "lines": list(lines),
        "targets": targets.__dict__,
        "apart_from": sorted(others),
        "reference": {"voice": f"piper:{base}", "wer": round(ref.wer, 4),
                      "f0_median_hz": round(ref.f0_median_hz, 1), "dnsmos_ovrl": round(ref.dnsmos_ovrl, 3)},
        "rejected": rejected,
        "voices": voices,
    }  # fmt: skip
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data


def default_out(out_dir: Path) -> Path:
    return out_dir / LIBRARY_JSON
