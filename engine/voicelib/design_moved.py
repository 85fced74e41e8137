"""`troupe voices design --base moved`: voices of the other gender made from the library's
own, by moving the pitch the model itself predicts (`Shift.f0_st`: the vocoder voices the new
pitch, formants kept) and the speaker's size (`resample_st`: a woman's vocal tract is
~15-20% shorter than a man's), kept only where they pass the gates the library was kept by
and are their own speaker next to every voice kept before (the Kokoro library, Piper's joe
and the voices designed on him, each other).

Like the Piper grid (`design_piper`), a grid, farthest first: every (library voice, pitch,
size) on `MOVES` is voiced on a few screening lines; the one farthest (speaker embedding)
from everything kept is judged on the full line set and kept if it passes, and so on until
none left is far enough. Kokoro draws no noise, so one pass judges a candidate. The result
is the shipped library with the kept voices added (`library.json`, `library.npz`): a moved
voice's recipe is its source's, with its pitch and size, so it rebuilds from the packs."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from engine.core.errors import TroupeError
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.kokoro.library import LIBRARY_JSON, LIBRARY_NPZ, Library, LibraryVoice
from engine.voicelib.design import MAX_RESAMPLE_ST, SCREEN_MARGIN, Voicer, age_hint
from engine.voicelib.design_piper import COSINE_MARGIN
from engine.voicelib.gates import Figures, Targets, measure, speaker_embedding

MOVES: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "female": ((6.0, 7.0, 8.5, 10.0), (2.5, 3.0, 3.5, 4.0, 4.5)),
    "male": ((-10.0, -8.0), (-3.0, -2.0)),
}
"""Target gender -> (pitch moves, size moves) in semitones tried on each library voice of
the other gender (none resampled past `MAX_RESAMPLE_ST` in all, the library's own bound).
Measured on 20 lines (one run, not committed): bruno +8.1/+3.0 F0 193 Hz, WER 0.010, DNSMOS
3.30; albert +8.1/+3.5 F0 200 Hz, DNSMOS 3.14; gordon +5.8/+3.0 DNSMOS 3.02 (under the gate);
Rubber Band's shift of joe to a woman's pitch measured DNSMOS 2.95-3.10. Women moved down
to men's pitch were misheard (delia -8/-3 and -10/-3: WER 0.33-0.36)."""
SCREEN_LINES = 5


def candidates(library: Library, gender: str) -> list[LibraryVoice]:
    """Every move on `MOVES` of every library voice of the other gender, as unnamed voices."""
    pitches, sizes = MOVES[gender]
    out = []
    for src in library.voices:
        if src.gender == gender:
            continue
        for f0 in pitches:
            for size in sizes:
                if abs(src.recipe.resample_st + size) > MAX_RESAMPLE_ST:
                    continue
                recipe = replace(src.recipe, f0_st=f0, resample_st=round(src.recipe.resample_st + size, 2))
                out.append(LibraryVoice(f"{src.id}{f0:+g}{size:+g}", "", gender, "", src.accent, recipe, 0.0))
    return out


def design_moved(out_dir: Path, library: Library, voice: Voicer, names: Mapping[str, Sequence[str]],
                 others: Mapping[str, NDArray[np.float32]], reference: Figures, targets: Targets,
                 lines: Sequence[str], counts: Mapping[str, int],
                 say: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    """Up to `counts[gender]` moved voices of each gender, named from `names[gender]` in turn,
    apart (cosine) from `others` (id -> embedding on `lines`: voices outside the library) and
    the library's own; written with the library to `out_dir` and returned."""
    styles = library.styles
    apart = dict(others)
    for v in library.voices:
        apart[v.id] = speaker_embedding(voice(styles[v.id], v.recipe, lines), SAMPLE_RATE_HZ)
    screen = list(lines[:SCREEN_LINES])
    pending: dict[str, tuple[LibraryVoice, NDArray[np.float32]]] = {}
    for gender, count in counts.items():
        if count > 0:
            for c in candidates(library, gender):
                takes = voice(styles[_moved_from(c, library)], c.recipe, screen)
                pending[c.id] = (c, speaker_embedding(takes, SAMPLE_RATE_HZ))
    say(f"{len(pending)} candidates screened on {len(screen)} lines")
    kept: list[tuple[LibraryVoice, Figures]] = []
    left = {g: [n for n in names[g] if n not in apart] for g in counts}
    rejected: dict[str, int] = {}

    def nearest(e: NDArray[np.float32]) -> float:
        return max(float(np.dot(e, o)) for o in apart.values())

    while pending:
        key = min(pending, key=lambda k: nearest(pending[k][1]))
        cand, emb = pending.pop(key)
        if nearest(emb) > targets.max_cosine + SCREEN_MARGIN:
            break  # the farthest left is too close: so is every other
        if (
            sum(1 for v, _f in kept if v.gender == cand.gender) >= counts[cand.gender]
            or not left[cand.gender]
        ):
            continue
        figs = measure(voice(styles[_moved_from(cand, library)], cand.recipe, lines), SAMPLE_RATE_HZ, lines)
        closest = nearest(figs.embedding)
        reason = targets.failed(figs, cand.gender, reference.dnsmos_ovrl, closest, COSINE_MARGIN)
        if reason:
            rejected[reason] = rejected.get(reason, 0) + 1
            say(f"  {key}: {reason} (F0 {figs.f0_median_hz:.0f} Hz, WER {figs.wer:.3f}, "
                f"DNSMOS {figs.dnsmos_ovrl:.2f}, cos {closest:.2f})")  # fmt: skip
            continue
        name = left[cand.gender].pop(0)
        gates = {"wer": round(figs.wer, 4), "dnsmos_ovrl": round(figs.dnsmos_ovrl, 3)}
        entry = replace(cand, id=name, name=name.capitalize(), age=age_hint(cand.gender, figs.f0_median_hz),
                        f0_median_hz=round(figs.f0_median_hz, 1), gates=gates)  # fmt: skip
        kept.append((entry, figs))
        apart[name] = figs.embedding
        say(f"kept {name} ({key}: F0 {figs.f0_median_hz:.0f} Hz, WER {figs.wer:.3f}, "
            f"DNSMOS {figs.dnsmos_ovrl:.2f}, cos {closest:.2f})")  # fmt: skip
    return _write(out_dir, library, kept, apart, rejected)


def _write(out_dir: Path, library: Library, kept: Sequence[tuple[LibraryVoice, Figures]],
           apart: Mapping[str, NDArray[np.float32]],
           rejected: Mapping[str, int]) -> dict[str, Any]:  # fmt: skip
    voices = [v.to_dict() for v in library.voices]
    styles = dict(library.styles)
    for entry, figs in kept:
        cos = max(float(np.dot(figs.embedding, e)) for k, e in apart.items() if k != entry.id)
        voices.append({**entry.to_dict(), "gates": {**entry.gates, "max_cosine": round(cos, 4)}})
        styles[entry.id] = library.styles[_moved_from(entry, library)]
    data = {**library.meta, "voices": voices,
            "moved": {"moves": {g: {"f0_st": list(p), "resample_st": list(s)} for g, (p, s) in MOVES.items()},
                      "kept": {e.id: _moved_from(e, library) for e, _f in kept},
                      "rejected": dict(rejected)}}  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / LIBRARY_JSON).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    buf = io.BytesIO()
    arrays: dict[str, Any] = {k: np.asarray(v, np.float32) for k, v in styles.items()}
    np.savez_compressed(buf, **arrays)
    (out_dir / LIBRARY_NPZ).write_bytes(buf.getvalue())
    return data


def _moved_from(entry: LibraryVoice, library: Library) -> str:
    """The library voice whose recipe a moved voice shares (all but its pitch and size)."""
    for v in library.voices:
        if replace(v.recipe, f0_st=0.0, resample_st=0.0) == replace(entry.recipe, f0_st=0.0, resample_st=0.0):
            return v.id
    raise TroupeError(f"voices design: {entry.id} was not moved from a library voice")
