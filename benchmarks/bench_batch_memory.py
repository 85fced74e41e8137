"""Peak activation memory of one batched Kokoro forward, measured, beside the estimate in
`engine/synthesis/gpu.py` that splits batches to fit a GPU.

Each point runs in a fresh process: the full-size architecture (random weights) is built,
then one batch of N copies of a line goes through the batched graph with the vectorised
norms (the GPU's arithmetic), in float32 on the CPU. The peak resident memory over the
forward, minus that after building the model, is the activations' peak (glibc is told to
map every large block on its own and return it when freed, so the peak is the graph's). Fitting
`peak = overhead + N * (bytes_per_frame * frames + bytes_per_token * tokens)` over the
points gives constants for fp32; bf16 halves the per-item part. A session lent a GPU
compares them with `torch.cuda.max_memory_allocated` (`bench_neural.py --device cuda`).

    python benchmarks/bench_batch_memory.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
from _common import ROOT, save, table

LINES = {
    "short": "Hold the line.",
    "medium": "The harbour lights burned low while we waited for word from the ship.",
    "long": ("The harbour lights burned low while we waited for word from the ship, and nobody "
             "came home that night, Iris, nobody at all, not even the radio man with his lamp."),
}  # fmt: skip
POINTS = [(line, n, 1.0) for line in LINES for n in (1, 2, 4)] + [
    ("medium", n, speed) for speed in (0.6, 1.6) for n in (2, 4)
]
"""(line, batch size, speed): speed changes frames per token, so that the fit can tell the
two apart. Batch-1 points are shown but not fitted: one item runs without frame masks."""
ENV = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0",
       "MALLOC_ARENA_MAX": "2"}  # fmt: skip
"""glibc: every block over 64 KiB its own mapping, returned when freed, so that the resident
peak follows the live tensors rather than the heap's high-water marks."""

CHILD = r"""
import json, resource, sys, tempfile, warnings
from pathlib import Path
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import torch
from engine.synthesis.kokoro.phonemes import Phonemizer
from engine.synthesis.kokoro.torch_model import BatchedKokoro, BatchItem, full_config, random_kmodel
from engine.synthesis.kokoro.voices import VoiceBank, shipped_vocab, style_for
torch.set_num_threads(2)
vocab = shipped_vocab()
model = BatchedKokoro(random_kmodel(full_config(vocab), Path(tempfile.mkdtemp()), seed=0), vectorised=True)
tokens = Phonemizer(vocab)(sys.argv[2]).tokens
style = torch.from_numpy(style_for(VoiceBank().get("jf_alpha"), len(tokens)))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out = model.forward([BatchItem(tokens, style, float(sys.argv[4]))] * int(sys.argv[3]))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"tokens": len(tokens) + 2, "frames": out[0].shape[0] // 600, "peak_bytes": after - before}))
"""


def main() -> None:
    from engine.synthesis.gpu import estimate_batch_bytes

    rows = []
    for name, n, speed in POINTS:
        argv = [sys.executable, "-c", CHILD, str(ROOT), LINES[name], str(n), str(speed)]
        proc = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=900, check=True)
        point = json.loads(proc.stdout.strip().splitlines()[-1])
        est = estimate_batch_bytes(n, point["tokens"], point["frames"])
        rows.append({"line": name, "batch": n, "speed": speed, **point,
                     "peak_mib": point["peak_bytes"] / 2**20, "estimate_mib": est / 2**20})  # fmt: skip
        print(f"{name} x{n} at speed {speed}: {rows[-1]['peak_mib']:.0f} MiB", flush=True)
    fitted_rows = [r for r in rows if r["batch"] > 1]
    a = np.array([[1.0, r["batch"] * r["frames"], r["batch"] * r["tokens"]] for r in fitted_rows])
    y = np.array([r["peak_bytes"] for r in fitted_rows], float)
    (overhead, per_frame, per_token), *_ = np.linalg.lstsq(a, y, rcond=None)
    for r in rows:
        r["fit_mib"] = (overhead + r["batch"] * (per_frame * r["frames"] + per_token * r["tokens"])) / 2**20
    cols = ["line", "batch", "speed", "tokens", "frames", "peak_mib", "fit_mib", "estimate_mib"]
    print(table(rows, cols))
    worst = float(np.max([abs(r["fit_mib"] - r["peak_mib"]) / r["peak_mib"] for r in fitted_rows]))
    print(f"fit (fp32): overhead {overhead / 2**20:.0f} MiB, {per_frame:,.0f} B/frame, "
          f"{per_token:,.0f} B/token; worst relative error {worst:.1%}")  # fmt: skip
    fitted = {"overhead_bytes": overhead, "bytes_per_frame": per_frame, "bytes_per_token": per_token,
              "worst_relative_error": worst}  # fmt: skip
    print(f"wrote {save('bench_batch_memory', {'points': rows, 'fit': fitted})}")


if __name__ == "__main__":
    main()
