"""Roles that share a natural voice: how far apart they sound, and at what cost in quality.

Once a cast has more roles of a gender than voices, roles share a voice at another of the
casting's offsets (`engine.cast._SHARED_PITCH`). Two ways are measured on the same voices and
lines: the pitch alone (timbre 50: Rubber Band moves the pitch, the formants stay: the same
speaker at another pitch) and the pitch and timbre together (the casting's way now on a
library voice, and what a role's timbre does on any: the take resampled, pitch and formants
moving as between a smaller and a larger speaker, no pitch shifter). For each: the
speaker-embedding cosine (Resemblyzer) to the voice's own take (lower: heard as another
speaker), DNSMOS P.835 OVRL and Whisper tiny.en WER.

Piper runs without its sampling noise here (both ways then voice the same phonemes the same
way), Kokoro is deterministic: one pass. Needs the asr and design extras.

    python benchmarks/bench_shared_voices.py [--lines 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings

import numpy as np
from _common import machine, save, table

from engine.cast import _SHARED_PITCH
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import SynthRequest
from engine.voicelib.gates import dnsmos_ovrl, speaker_embedding, word_error_rate
from engine.voicelib.lines import JUDGE_LINES

VOICES = (("kokoro", "ada"), ("kokoro", "clara"), ("kokoro", "ellis"), ("piper", "en_US-joe-medium"))
OFFSETS = tuple(o for o in _SHARED_PITCH if o != 50)
TARGET = "sharing roles farther apart (cosine to the voice's own take lower) at no loss of DNSMOS or WER"


def _synths() -> dict[str, object]:
    os.environ["TROUPE_PIPER_NOISE_SCALE"] = "0"
    os.environ["TROUPE_PIPER_NOISE_W"] = "0"
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx
    from engine.synthesis.piper import make_piper

    kokoro = KokoroOnnx()
    kokoro.load()
    return {"kokoro": kokoro, "piper": make_piper()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=6, help="lines of the judges' set each take set has (6)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    lines = list(JUDGE_LINES[: args.lines])
    synths = _synths()
    rows = []

    def takes(backend: str, voice_id: str, pitch: int, timbre: int) -> list[np.ndarray]:
        voice = Voice(backend=backend, voice_id=voice_id, pitch=pitch, pitch_range=timbre)
        return synths[backend].synthesize([SynthRequest(t, voice) for t in lines])  # type: ignore[attr-defined, no-any-return]

    for backend, voice_id in VOICES:
        own = speaker_embedding(takes(backend, voice_id, 50, 50), SAMPLE_RATE_HZ)
        for offset in OFFSETS:
            row: dict[str, object] = {"voice": f"{backend}:{voice_id}", "offset": offset - 50}
            for way, timbre in (("pitch", 50), ("size", offset)):
                t = takes(backend, voice_id, offset, timbre)
                row[f"cos_{way}"] = round(float(np.dot(speaker_embedding(t, SAMPLE_RATE_HZ), own)), 3)
                row[f"dnsmos_{way}"] = round(dnsmos_ovrl(t, SAMPLE_RATE_HZ), 2)
                row[f"wer_{way}"] = round(word_error_rate(t, SAMPLE_RATE_HZ, lines), 3)
            rows.append(row)
            print(row, flush=True)
    summary = {
        k: statistics.median(float(r[k]) for r in rows)  # type: ignore[arg-type]
        for k in ("cos_pitch", "cos_size", "dnsmos_pitch", "dnsmos_size", "wer_pitch", "wer_size")
    }
    summary["mean_wer_pitch"] = round(statistics.mean(float(r["wer_pitch"]) for r in rows), 4)  # type: ignore[arg-type]
    summary["mean_wer_size"] = round(statistics.mean(float(r["wer_size"]) for r in rows), 4)  # type: ignore[arg-type]
    print(f"target: {TARGET}")
    print(table(rows, ["voice", "offset", "cos_pitch", "cos_size", "dnsmos_pitch", "dnsmos_size",
                       "wer_pitch", "wer_size"]))  # fmt: skip
    print("medians:", summary)
    save("bench_shared_voices", {"target": TARGET, "machine": machine(), "lines": len(lines),
                                 "rows": rows, "summary": summary})  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
