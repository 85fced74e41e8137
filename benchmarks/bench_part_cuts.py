"""What the CPU's part bound costs the lines it cuts: a line of the default render's
screenplay (`bench_render_natural.py`'s, cast as a user gets it) that Kokoro would voice in
one part is, over `CPU_PART_TOKENS` phonemes' worth of audio, voiced in two or more. Each
such line voiced whole, cut with every part's silence kept (as cuts were joined before
`words.after_cut`), and cut as now; its length, WER (Whisper tiny.en) and DNSMOS OVRL.

    python benchmarks/bench_part_cuts.py [--hours 0.25] [--bound 90]

Also the share of the screenplay's parts that bounds of 80-160 phonemes' worth cut (the
render's memory: docs/rendering.md). No target of its own: the cut lines should sound as
the whole ones do (length within a few hundredths of a second, WER and DNSMOS alike).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import save, table
from bench_render import many_roles

from engine.cast import Cast
from engine.script import load_script
from engine.synthesis.base import SynthRequest
from engine.synthesis.delivery import delivered_request
from engine.synthesis.kokoro import make_kokoro
from engine.synthesis.kokoro import words as kokoro_words
from engine.synthesis.kokoro.onnx_model import CPU_PART_TOKENS, owned_parts
from engine.voicelib.gates import dnsmos_ovrl, word_error_rate
from main import _natural_voices

RATE_HZ = 48_000
SHARES = (80, 90, 100, 120, 160)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=0.25)
    ap.add_argument("--bound", type=int, default=CPU_PART_TOKENS)
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="troupe-bench-") as tmp:
        script = load_script(str(many_roles(Path(tmp), args.hours, 47)))
    cast = Cast.auto(script, None, natural=_natural_voices())
    kokoro: Any = make_kokoro()
    kokoro.load()
    seen: set[tuple[str, str]] = set()
    requests: list[SynthRequest] = []
    parts_at: dict[int, int] = dict.fromkeys(SHARES, 0)
    n_parts = 0
    for cue in script.cues:
        if cast[cue.role].backend != "kokoro":
            continue
        request = delivered_request(cue, cast[cue.role])
        n_parts += 1

        def parts(bound: int | None, request: SynthRequest = request) -> int:
            return len(owned_parts(request, kokoro.phonemizer, kokoro.bank, audio_tokens=bound))

        for bound in SHARES:
            parts_at[bound] += parts(bound) > 1
        key = (cue.text, request.voice.voice_id)
        if key not in seen and parts(args.bound) > 1 and parts(None) == 1:
            seen.add(key)
            requests.append(request)
    trimmed = kokoro_words.after_cut
    rows = []
    for request in requests:
        takes = {}
        kokoro.part_audio = None
        takes["whole"] = kokoro.synthesize([request])[0]
        kokoro.part_audio = args.bound
        kokoro_words.after_cut = lambda audio, frames=None: (audio, frames)  # the cuts as joined before
        try:
            takes["kept"] = kokoro.synthesize([request])[0]
        finally:
            kokoro_words.after_cut = trimmed
        takes["cut"] = kokoro.synthesize([request])[0]
        row: dict[str, Any] = {"voice": request.voice.voice_id, "words": len(request.text.split())}
        for name, audio in takes.items():
            row[f"{name}_s"] = len(audio) / RATE_HZ
            row[f"{name}_wer"] = word_error_rate([audio], RATE_HZ, [request.text])
            row[f"{name}_dnsmos"] = dnsmos_ovrl([audio], RATE_HZ)
        rows.append(row)
    columns = [f"{n}_{m}" for m in ("s", "wer", "dnsmos") for n in ("whole", "kept", "cut")]
    summary = {c: statistics.mean(r[c] for r in rows) for c in columns} if rows else {}
    print(f"{len(rows)} lines cut at {args.bound} phonemes' worth, of {n_parts} Kokoro lines")
    print(table(rows, ["voice", "words", *columns]))
    print(table([{"lines": len(rows), **summary}], ["lines", *columns]))
    shares = [{"bound": b, "lines_cut": parts_at[b], "share": parts_at[b] / max(1, n_parts)} for b in SHARES]
    print(table(shares, ["bound", "lines_cut", "share"]))
    path = save("bench_part_cuts", {
        "hours": args.hours, "bound": args.bound, "kokoro_lines": n_parts, "rows": rows, "mean": summary,
        "cut_by_bound": {str(b): parts_at[b] for b in SHARES}, "bench_wall_s": time.perf_counter() - t0,
    })  # fmt: skip
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
