"""The shipped voice library (the Kokoro voices and the voices designed on Piper's joe),
measured again by the gates that kept it: each voice on the fixed 20-line English set
(Whisper tiny.en WER, median F0, DNSMOS P.835 OVRL, the highest speaker-embedding cosine to
any other voice of the cast, Piper's joe included), beside the targets; and the
clone-from-clip fit with Piper's joe as the "actor": fitted on ~30 s of his lines, tested
on ~30 other seconds against the nearest library voice.

Needs the asr and design extras. Kokoro's synthesis is deterministic: one pass a voice (a
second pass gives the same takes; the fit is one seeded run within its 10-minute budget).
Piper draws its noise anew for every take, so a Piper voice (joe, the voices designed on
him) is measured on `PIPER_PASSES` passes: the median of each figure, the mean embedding;
the noise is seeded (`SEED`, before any model is loaded), so a rerun gives the same figures.

    python benchmarks/bench_voices.py [--fit-minutes 10] [--no-fit]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings

import numpy as np
from _common import machine, save, table

from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import SynthRequest
from engine.synthesis.kokoro.library import shipped_library
from engine.voicelib.gates import RATE_16K, Figures, Targets, measure, speaker_embedding, to_16k
from engine.voicelib.lines import JUDGE_LINES

TARGETS = Targets()
TARGET = (f"each voice: WER <= {TARGETS.max_wer}, max cosine <= {TARGETS.max_cosine}, female F0 >= "
          f"{TARGETS.female_min_f0_hz:.0f} Hz, male <= {TARGETS.male_max_f0_hz:.0f} Hz, DNSMOS OVRL >= "
          f"joe's - {TARGETS.max_dnsmos_drop}; >= 24 voices, >= 10 female and 10 male; fit: fitted >= "
          "nearest + 0.05 and >= 0.80")  # fmt: skip
ACTOR_LINES = (
    "I was born in a small town on the coast, where the winters were long and grey.",
    "My father mended nets and my mother kept the books for the harbour master.",
    "Every morning the fishing boats went out before the sun came up.",
    "We children waited on the sea wall to count them coming home.",
    "Some days the fog was so thick you could not see the end of the pier.",
    "On those days the bell on the point rang every minute until noon.",
    "I learned to read from the shipping forecast and the tide tables.",
    "When I was twelve a storm took the roof off the school.",
    "We had our lessons in the church hall for the rest of that year.",
    "The teacher played the piano badly, but she played it every afternoon.",
)
HELD_OUT_LINES = (
    "Years later I went back and found the harbour full of pleasure boats.",
    "The net sheds had become cafes, and the chapel sold antiques.",
    "Nobody remembered the bell, though the tower was still standing.",
    "I walked out along the pier and counted the boats, as I used to.",
    "There were more than I could count, and none of them were going anywhere.",
    "I sat on the sea wall until the lights came on along the front.",
    "A boy asked me if I was waiting for someone, and I said I supposed I was.",
    "Then I caught the last bus inland and did not look back.",
    "Some places keep you, even after you have left them.",
    "That town kept the part of me that still counts boats.",
)


PIPER_PASSES = 3
SEED = 2026


def _piper_figures(piper, voice_id: str) -> Figures:  # type: ignore[no-untyped-def]
    requests = [SynthRequest(t, Voice(backend="piper", voice_id=voice_id)) for t in JUDGE_LINES]
    passes = [measure(piper.synthesize(requests), SAMPLE_RATE_HZ, JUDGE_LINES) for _ in range(PIPER_PASSES)]
    mean = np.mean([f.embedding for f in passes], axis=0)
    return Figures(statistics.median(f.wer for f in passes),
                   statistics.median(f.f0_median_hz for f in passes),
                   statistics.median(f.dnsmos_ovrl for f in passes),
                   (mean / float(np.linalg.norm(mean))).astype(np.float32))  # fmt: skip


def _kokoro():  # type: ignore[no-untyped-def]
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx

    model = KokoroOnnx()
    model.load()
    return model


def _voice_rows(model) -> tuple[list[dict[str, object]], dict[str, object]]:  # type: ignore[no-untyped-def]
    from engine.synthesis.piper import make_piper

    library = shipped_library()
    if library is None:
        raise SystemExit("no voice library is installed")
    piper = make_piper()
    assert piper is not None
    joe_id = piper.voices()[0].voice_id
    joe = _piper_figures(piper, joe_id)
    figures = {}
    for v in library.voices:
        takes = model.synthesize(
            [SynthRequest(t, Voice(backend="kokoro", voice_id=v.id)) for t in JUDGE_LINES]
        )
        figures[v.id] = (v, measure(takes, SAMPLE_RATE_HZ, JUDGE_LINES))
        print(f"  {v.id}: measured", flush=True)
    for d in sorted(getattr(piper, "designs", {}).values(), key=lambda d: d.id):  # on joe, resampled
        figures[d.id] = (d, _piper_figures(piper, d.id))
        print(f"  {d.id} (piper): measured", flush=True)
    rows = []
    for vid, (v, f) in figures.items():
        others = [joe.embedding] + [g.embedding for k, (_w, g) in figures.items() if k != vid]
        cos = max(f.cosine(o) for o in others)
        rows.append({
            "id": vid, "backend": "piper" if vid in getattr(piper, "designs", {}) else "kokoro",
            "gender": v.gender, "age": v.age, "wer": round(f.wer, 4),
            "f0_median_hz": round(f.f0_median_hz, 1), "dnsmos_ovrl": round(f.dnsmos_ovrl, 3),
            "max_cosine_to_others": round(cos, 4),
            "passes": not TARGETS.failed(f, v.gender, joe.dnsmos_ovrl, cos),
        })  # fmt: skip
    reference = {"voice": f"piper:{joe_id}", "wer": round(joe.wer, 4),
                 "f0_median_hz": round(joe.f0_median_hz, 1),
                 "dnsmos_ovrl": round(joe.dnsmos_ovrl, 3)}  # fmt: skip
    return rows, reference


def _fit(model, minutes: float) -> dict[str, object]:  # type: ignore[no-untyped-def]
    from engine.synthesis.piper import make_piper
    from engine.voicelib.fit import fit

    piper = make_piper()
    assert piper is not None
    joe = Voice(backend="piper", voice_id=piper.voices()[0].voice_id)
    train = [to_16k(a, SAMPLE_RATE_HZ) for a in piper.synthesize([SynthRequest(t, joe) for t in ACTOR_LINES])]
    test = [
        to_16k(a, SAMPLE_RATE_HZ) for a in piper.synthesize([SynthRequest(t, joe) for t in HELD_OUT_LINES])
    ]
    held_out = speaker_embedding(test, RATE_16K)
    result = fit("actor", train, budget_s=minutes * 60)
    model.bank.styles["_fitted"] = result.style
    model.bank.shifts["_fitted"] = result.recipe.shift

    def similarity(voice_id: str) -> float:
        takes = model.synthesize(
            [SynthRequest(t, Voice(backend="kokoro", voice_id=voice_id)) for t in HELD_OUT_LINES]
        )
        return float(np.dot(speaker_embedding(takes, SAMPLE_RATE_HZ), held_out))

    library = shipped_library()
    assert library is not None
    nearest = max((similarity(v.id), v.id) for v in library.voices if v.gender == "male")
    fitted = similarity("_fitted")
    # NB: the actor is joe, so the voices designed on joe itself are the actor resampled: shown
    # apart, not as the library the fit (which moves Kokoro styles) is measured against
    designed = [
        (float(np.dot(speaker_embedding(piper.synthesize([SynthRequest(t, Voice(backend="piper", voice_id=d))
                                                          for t in HELD_OUT_LINES]), SAMPLE_RATE_HZ),
                      held_out)), d)
        for d in sorted(getattr(piper, "designs", {}))
    ]  # fmt: skip
    on_joe = max(designed) if designed else (float("nan"), "")
    return {
        "train_s": round(sum(len(a) for a in train) / RATE_16K, 1),
        "test_s": round(sum(len(a) for a in test) / RATE_16K, 1),
        "similarity_fitted": round(fitted, 4), "similarity_nearest_library": round(nearest[0], 4),
        "nearest_library_voice": nearest[1], "similarity_at_start_on_train": result.similarity_start,
        "similarity_nearest_designed_on_actor": round(on_joe[0], 4), "nearest_designed_on_actor": on_joe[1],
        "similarity_on_train": result.similarity, "fit_seconds": result.seconds,
        "evaluations": result.evaluations, "fitted_wer": result.wer,
        "passes": bool(fitted >= nearest[0] + 0.05 and fitted >= 0.80),
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit-minutes", type=float, default=10.0)
    ap.add_argument("--no-fit", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from engine.synthesis.piper import seed_noise

    seed_noise(SEED)  # NB: before any model is loaded
    model = _kokoro()
    rows, reference = _voice_rows(model)
    genders = [r["gender"] for r in rows]
    summary = {
        "voices": len(rows), "female": genders.count("female"), "male": genders.count("male"),
        "passing": sum(bool(r["passes"]) for r in rows),
        "median_wer": statistics.median(float(r["wer"]) for r in rows),  # type: ignore[arg-type]
        "worst_max_cosine": max(float(r["max_cosine_to_others"]) for r in rows),  # type: ignore[arg-type]
    }  # fmt: skip
    print(f"target: {TARGET}")
    print(f"reference {reference}")
    print(table(rows, ["id", "backend", "gender", "age", "wer", "f0_median_hz", "dnsmos_ovrl",
                       "max_cosine_to_others", "passes"]))  # fmt: skip
    print(summary)
    out: dict[str, object] = {"target": TARGET, "machine": machine(), "reference": reference,
                              "summary": summary, "voices": rows}  # fmt: skip
    if not args.no_fit:
        out["fit"] = _fit(model, args.fit_minutes)
        print("fit:", out["fit"])
    save("bench_voices", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
