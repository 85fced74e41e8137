"""`main.py build-engine`: export the batched torch Kokoro to ONNX (dynamic batch and token
axes) and, where onnxruntime has TensorRT, build and cache its fp16 engine by running the
model once."""

from __future__ import annotations

import json
import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from engine.core.errors import SynthesisError
from engine.synthesis.kokoro.torch_model import BatchedGraph, load_kmodel, pad_tokens

log = logging.getLogger("troupe.kokoro")
ONNX_NAME = "kokoro.onnx"
INPUTS = ["input_ids", "input_lengths", "ref_s", "speed"]
OUTPUTS = ["waveform", "sample_lengths", "durations"]
DYNAMIC_AXES = {
    "input_ids": {0: "batch", 1: "tokens"}, "input_lengths": {0: "batch"}, "ref_s": {0: "batch"},
    "speed": {0: "batch"}, "waveform": {0: "batch", 1: "samples"}, "sample_lengths": {0: "batch"},
    "durations": {0: "batch", 1: "tokens"},
}  # fmt: skip
MAX_BATCH = 16
"""Written beside the model: the batch size the ONNX backend offers the scheduler."""


def sidecar(onnx_path: Path) -> Path:
    """The JSON beside an exported model that says how to feed it."""
    return onnx_path.with_suffix(".json")


@dataclass(frozen=True)
class BuildResult:
    onnx_path: Path
    export_s: float
    tensorrt: bool
    """A TensorRT engine was built into the cache beside the ONNX file."""
    message: str


def export_onnx(weights_dir: Path, out_dir: Path, opset: int = 17, max_batch: int = MAX_BATCH) -> Path:
    """ONNX of the Kokoro in `weights_dir` (config.json and a .pth), and its sidecar JSON."""
    return export_graph(load_kmodel(weights_dir, disable_complex=True), out_dir, opset, max_batch)


def export_graph(kmodel: Any, out_dir: Path, opset: int = 17, max_batch: int = MAX_BATCH) -> Path:
    """ONNX of `BatchedGraph` over `kmodel` (any batch size, tokens of any length, every
    item its own voice and speed). The model must use the real-valued STFT
    (`disable_complex=True`), which the exporter can write."""
    graph = BatchedGraph(kmodel.eval(), mask_frames=True).eval()
    # Two items of different lengths, so that nothing traces as a batch-1 or equal-length special case.
    ids, lengths = pad_tokens([[(k % 170) + 1 for k in range(30)], [(k % 90) + 3 for k in range(17)]])
    example = (ids, lengths, torch.zeros(2, 256), torch.tensor([1.0, 1.1]))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ONNX_NAME
    try:
        with warnings.catch_warnings(), torch.no_grad():
            # The TorchScript exporter is chosen on purpose (the model's data-dependent
            # alignment traces cleanly with it); its deprecation and tracer warnings are expected.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                graph, example, str(path), input_names=INPUTS, output_names=OUTPUTS,
                dynamic_axes=DYNAMIC_AXES, opset_version=opset, dynamo=False,
            )  # fmt: skip
    except Exception as exc:  # the exporter raises many kinds; the user needs the message
        raise SynthesisError(f"ONNX export failed: {exc}") from exc
    sidecar(path).write_text(json.dumps({"inputs": INPUTS, "outputs": OUTPUTS, "max_batch": max_batch}))
    return path


def build_engine(weights_dir: Path, out_dir: Path, max_batch: int = MAX_BATCH) -> BuildResult:
    t0 = time.perf_counter()
    path = export_onnx(weights_dir, out_dir, max_batch=max_batch)
    export_s = time.perf_counter() - t0
    import onnxruntime as ort

    if "TensorrtExecutionProvider" not in ort.get_available_providers():
        note = "TensorRT is not available to onnxruntime here, so the ONNX model runs on CUDA or the CPU"
        return BuildResult(path, export_s, False, f"wrote {path} (batches of up to {max_batch}); {note}")
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx

    KokoroOnnx(model=path).load()  # TensorRT builds the fp16 engine and caches it on first run
    return BuildResult(
        path, export_s, True, f"wrote {path} and a TensorRT fp16 engine in {path.parent / 'trt_cache'}"
    )
