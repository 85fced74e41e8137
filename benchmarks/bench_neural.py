"""Neural voice speed: Kokoro-82M.

- ONNX (the shipped int8 model, onnxruntime on the CPU here): real-time factor and time to
  first chunk over the demo's lines.
- torch (the real KModel architecture at full size, random weights, durations biased to
  speech-like lengths; no weights are downloaded): throughput in audio seconds per second
  and p95 batch latency at each batch size, on the CPU and on CUDA where there is one
  (bf16 autocast), plus the GPU memory estimate beside the measured peak.
- `--onnx-batched`: that model exported as `main.py build-engine` does (dynamic batch and
  token axes), run by the ONNX backend at each batch size.

    python benchmarks/bench_neural.py [--batches 1 4 16 64] [--repeats 3] [--device cpu cuda]
                                      [--onnx-batched] [--no-onnx]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import ROOT, save, table

from engine.core.types import Voice
from engine.script import load_script
from engine.synthesis.base import SynthRequest

DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"
LINE = "The harbour lights burned low while we waited for word from the ship."


def bench_onnx(lines: list[str]) -> dict[str, object]:
    from engine.synthesis.kokoro.onnx_model import MODEL_RATE_HZ, KokoroOnnx

    synth = KokoroOnnx()
    t0 = time.perf_counter()
    synth.load()
    load_s = time.perf_counter() - t0
    first_ms, rtf = [], []
    for text in lines:
        req = SynthRequest(text, Voice(backend="kokoro", voice_id="jf_alpha"))
        t0 = time.perf_counter()
        audio_s = 0.0
        for k, chunk in enumerate(synth.stream(req)):
            if k == 0:
                first_ms.append((time.perf_counter() - t0) * 1000)
            audio_s += len(chunk) / 48_000
        rtf.append((time.perf_counter() - t0) / audio_s)
    p50, p95 = (float(np.percentile(first_ms, q)) for q in (50, 95))
    return {"path": "onnx-int8", "device": synth.provider, "lines": len(lines), "load_s": load_s,
            "rtf_median": statistics.median(rtf), "first_chunk_p50_ms": p50, "first_chunk_p95_ms": p95,
            "model_rate_hz": MODEL_RATE_HZ}  # fmt: skip


def bench_torch(device: str, batches: list[int], repeats: int) -> list[dict[str, object]]:
    import torch

    from engine.synthesis.gpu import estimate_batch_bytes
    from engine.synthesis.kokoro.phonemes import Phonemizer
    from engine.synthesis.kokoro.torch_model import SAMPLES_PER_FRAME, BatchItem, full_config, random_kmodel
    from engine.synthesis.kokoro.torch_synth import KokoroTorch
    from engine.synthesis.kokoro.voices import VoiceBank, shipped_vocab, style_for

    vocab = shipped_vocab()
    km = random_kmodel(full_config(vocab), Path(tempfile.mkdtemp()), seed=0)
    synth = KokoroTorch(kmodel=km, device=device, max_batch=max(batches))
    tokens = Phonemizer(vocab)(LINE).tokens
    style = torch.from_numpy(style_for(VoiceBank().get("jf_alpha"), len(tokens)))
    rows = []
    cuda = device == "cuda"
    for n in batches:
        items = [BatchItem(tokens, style, 1.0) for _ in range(n)]
        synth.run_items(items)  # warm-up (kernels, allocator, cuDNN plans)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        lat, audio_s = [], 0.0
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = synth._forward(items)  # one batch, including the copy back to the host
            lat.append(time.perf_counter() - t0)
            audio_s = sum(len(a) for a in out) / 24_000
        frames = len(out[0]) // SAMPLES_PER_FRAME
        row: dict[str, object] = {
            "path": "torch", "device": device, "batch": n, "audio_s_per_batch": audio_s,
            "throughput_audio_s_per_s": audio_s / statistics.median(lat),
            "p50_ms": float(np.percentile(lat, 50) * 1000), "p95_ms": float(np.percentile(lat, 95) * 1000),
            "first_item_ms": float(min(lat) * 1000),
        }  # fmt: skip
        if cuda:
            bpv = 2 if synth.autocast_dtype is not None else 4
            row["peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
            row["estimate_mib"] = estimate_batch_bytes(n, len(tokens) + 2, frames, bpv) / 2**20
        rows.append(row)
    return rows


def bench_onnx_batched(batches: list[int], repeats: int) -> list[dict[str, object]]:
    from engine.synthesis.kokoro.export import export_graph
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx
    from engine.synthesis.kokoro.phonemes import Phonemizer
    from engine.synthesis.kokoro.torch_model import full_config, random_kmodel
    from engine.synthesis.kokoro.voices import shipped_vocab

    vocab = shipped_vocab()
    folder = Path(tempfile.mkdtemp())
    t0 = time.perf_counter()
    kmodel = random_kmodel(full_config(vocab), folder, seed=0, disable_complex=True)
    path = export_graph(kmodel, folder / "engine")
    export_s = time.perf_counter() - t0
    synth = KokoroOnnx(model=path)
    synth.load()
    tokens = Phonemizer(vocab)(LINE).tokens
    style = synth.bank.get("jf_alpha")
    rows = []
    for n in batches:
        parts = [(tokens, style, 1.0)] * n
        synth._run_parts(parts)  # warm-up at this shape
        lat, audio_s = [], 0.0
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = synth._run_parts(parts)
            lat.append(time.perf_counter() - t0)
            audio_s = sum(len(a) for a in out) / 24_000
        rows.append({
            "path": "onnx-batched", "device": synth.provider, "batch": n, "audio_s_per_batch": audio_s,
            "throughput_audio_s_per_s": audio_s / statistics.median(lat),
            "p50_ms": float(np.percentile(lat, 50) * 1000), "p95_ms": float(np.percentile(lat, 95) * 1000),
            "export_s": export_s,
        })  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", nargs="+", default=None, help="default: cpu, and cuda if present")
    ap.add_argument("--no-onnx", action="store_true", help="torch only (the model parts are not installed)")
    ap.add_argument("--onnx-batched", action="store_true", help="also the batched ONNX export (fp32)")
    args = ap.parse_args()
    import torch

    devices = args.device or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    results: dict[str, object] = {}
    if not args.no_onnx:
        lines = [c.text for c in load_script(DEMO).cues]
        onnx = bench_onnx(lines)
        print(table([onnx], ["path", "device", "lines", "load_s", "rtf_median", "first_chunk_p50_ms",
                             "first_chunk_p95_ms"]))  # fmt: skip
        results["onnx"] = onnx
    rows = [r for d in devices for r in bench_torch(d, args.batches, args.repeats)]
    if args.onnx_batched:
        rows += bench_onnx_batched(args.batches, args.repeats)
    cols = ["path", "device", "batch", "audio_s_per_batch", "throughput_audio_s_per_s", "p50_ms", "p95_ms"]
    if any("peak_mib" in r for r in rows):
        cols += ["peak_mib", "estimate_mib"]
    print(table(rows, cols))
    for key in sorted({(str(r["path"]), str(r["device"])) for r in rows}):
        mine = {int(str(r["batch"])): float(str(r["throughput_audio_s_per_s"]))
                for r in rows if (r["path"], r["device"]) == key}  # fmt: skip
        if 1 in mine and 16 in mine:
            ratio = mine[16] / mine[1]
            print(f"{'/'.join(key)}: batch-16 / batch-1 throughput = {ratio:.1f}x (target >= 4x on an H200); "
                  f"best {max(mine.values()):.0f} audio-s/s (target >= 500)")  # fmt: skip
    results["torch"] = rows
    print(f"wrote {save('bench_neural', results)}")


if __name__ == "__main__":
    main()
