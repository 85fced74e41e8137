"""`troupe voices fit NAME clip.wav [...]`: a Kokoro voice fitted to a speaker from 10-60 s
of their recordings (the design document's per-role adaptation, done in the style space:
the shipped weights stay as they are).

The fit searches the same recipes the library is made of (a blend of the shipped packs for
each half of the style, extrapolations allowed, a pitch and formant shift and a resampling) for the one
whose takes sound most like the clips: the objective is the cosine between the speaker
embedding (Resemblyzer) of a few fixed lines voiced with the candidate and that of the
clips. It starts from the library voice and pack nearest to the clips and walks with a
(1+1) evolution strategy (Gaussian steps, the one-fifth rule for the step size) until its
time budget is spent; the result must still pass the intelligibility gate. The voice is
written as `NAME.npy` (the style) and `NAME.json` (its recipe, figures and shift) into a
folder that Kokoro reads its extra voices from (`TROUPE_KOKORO_VOICES`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from engine.core.errors import TroupeError
from engine.synthesis.kokoro.library import Recipe, Style, build_style, shipped_library
from engine.voicelib.design import Voicer, kokoro_voicer
from engine.voicelib.gates import RATE_16K, pooled_f0, speaker_embedding, to_16k, word_error_rate
from engine.voicelib.lines import JUDGE_LINES

FIT_LINES = JUDGE_LINES[5:9]
"""The lines each candidate is voiced on (apart from the screening lines)."""
MIN_CLIP_S, MAX_CLIP_S = 10.0, 600.0
MAX_SHIFT_ST = 4.0


@dataclass(frozen=True)
class FitResult:
    name: str
    recipe: Recipe
    style: Style
    similarity: float
    similarity_start: float
    start: str
    f0_median_hz: float
    wer: float
    evaluations: int
    seconds: float


def read_clips(paths: Sequence[Path]) -> list[np.ndarray]:
    """Mono 16 kHz audio of each clip; a clear error for a missing, unreadable or too short set."""
    clips = []
    for path in paths:
        try:
            audio, rate = sf.read(str(path), dtype="float32", always_2d=True)
        except (OSError, RuntimeError, sf.LibsndfileError) as exc:
            raise TroupeError(f"{path}: not a readable audio file ({exc})") from exc
        clips.append(to_16k(audio.mean(axis=1), rate))
    total = sum(len(c) for c in clips) / RATE_16K
    if total < MIN_CLIP_S:
        raise TroupeError(f"voices fit: {total:.1f} s of audio; a fit needs {MIN_CLIP_S:.0f} s at least "
                          "(10-60 s of one speaker, little else)")  # fmt: skip
    if total > MAX_CLIP_S:
        raise TroupeError(f"voices fit: {total:.0f} s of audio; give at most {MAX_CLIP_S:.0f} s")
    return clips


MAX_F0_ST = 12.0
"""The most the model's own pitch is moved (`Recipe.f0_st`) in a fitted voice."""


def _vector(recipe: Recipe, packs: Sequence[str]) -> np.ndarray:
    return np.array([recipe.timbre.get(p, 0.0) for p in packs] + [recipe.prosody.get(p, 0.0) for p in packs]
                    + [recipe.pitch_st / 4, recipe.formant_st / 4, recipe.resample_st / 4]
                    + ([recipe.f0_st / 4] if recipe.f0_st else []))  # fmt: skip


def _recipe(x: np.ndarray, packs: Sequence[str]) -> Recipe:
    n = len(packs)
    timbre, prosody = x[:n], x[n : 2 * n]

    def weights(w: np.ndarray) -> dict[str, float]:
        total = float(w.sum())
        w = w / total if abs(total) > 0.2 else np.full(n, 1.0 / n)
        return {p: round(float(v), 4) for p, v in zip(packs, w, strict=True) if abs(v) > 1e-4}

    def shift(v: float) -> float:
        return round(float(np.clip(v * 4, -MAX_SHIFT_ST, MAX_SHIFT_ST)), 2)

    if len(x) == 2 * n + 3:  # NB: the model's own pitch is searched only from a voice that moves it
        return Recipe(weights(timbre), weights(prosody), 0, 0.0, shift(x[-3]), shift(x[-2]), shift(x[-1]))
    f0 = round(float(np.clip(x[-1] * 4, -MAX_F0_ST, MAX_F0_ST)), 2)  # a moved voice's own (frances)
    return Recipe(weights(timbre), weights(prosody), 0, 0.0, shift(x[-4]), shift(x[-3]), shift(x[-2]), f0)


def fit(name: str, clips: Sequence[np.ndarray], budget_s: float = 600.0, seed: int = 0,
        voicer: tuple[Voicer, dict[str, Style]] | None = None, lines: Sequence[str] = FIT_LINES,
        say: Callable[[str], None] = print) -> FitResult:  # fmt: skip
    """Fit a voice to 16 kHz `clips` of one speaker within `budget_s` (see the module)."""
    from engine.core.types import SAMPLE_RATE_HZ as rate

    started = time.monotonic()
    voice, packs = voicer or kokoro_voicer()
    target = speaker_embedding(list(clips), RATE_16K)
    target_f0 = pooled_f0(list(clips), RATE_16K)
    names = sorted(packs)
    evaluations = 0

    def score(recipe: Recipe) -> float:
        nonlocal evaluations
        evaluations += 1
        return float(
            np.dot(speaker_embedding(voice(build_style(recipe, packs), recipe, lines), rate), target)
        )

    starts: dict[str, Recipe] = {p: Recipe({p: 1.0}, {p: 1.0}) for p in names}
    library = shipped_library()
    for v in library.voices if library is not None else ():
        male = target_f0 and target_f0 < 160
        if (v.gender == "male") == bool(male):  # the library voices of the clips' pitch range
            starts[v.id] = v.recipe
    scored = {k: score(r) for k, r in starts.items()}
    start = max(scored, key=lambda k: scored[k])
    best, best_score = starts[start], scored[start]
    say(f"start: {start} (similarity {best_score:.3f}; clips' F0 {target_f0:.0f} Hz)")
    rng = np.random.default_rng(seed)
    x = _vector(best, names)
    sigma, successes, tries = 0.15, 0, 0
    while time.monotonic() - started < budget_s:
        candidate = _recipe(x + sigma * rng.standard_normal(x.shape), names)
        s = score(candidate)
        tries += 1
        if s > best_score:
            best, best_score, x = candidate, s, _vector(candidate, names)
            successes += 1
            say(f"  {evaluations}: similarity {best_score:.3f}")
        if tries == 10:  # one-fifth rule
            sigma *= 1.5 if successes > 2 else 0.7
            sigma = float(np.clip(sigma, 0.02, 0.6))
            successes = tries = 0
    style = build_style(best, packs)
    takes = voice(style, best, JUDGE_LINES[:5])
    wer = word_error_rate(takes, rate, JUDGE_LINES[:5])
    return FitResult(name, best, style, round(best_score, 4), round(scored[start], 4), start,
                     round(pooled_f0(takes, rate), 1), round(wer, 4), evaluations,
                     round(time.monotonic() - started, 1))  # fmt: skip


def save(result: FitResult, folder: Path) -> Path:
    """`NAME.npy` (Kokoro reads it as a voice) and `NAME.json` (recipe and figures)."""
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / f"{result.name}.npy", result.style.astype(np.float32))
    meta: Mapping[str, object] = {
        "name": result.name, "recipe": result.recipe.to_dict(), "similarity": result.similarity,
        "similarity_start": result.similarity_start, "start": result.start,
        "f0_median_hz": result.f0_median_hz, "wer": result.wer, "evaluations": result.evaluations,
        "seconds": result.seconds,
    }  # fmt: skip
    (folder / f"{result.name}.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return folder / f"{result.name}.npy"
