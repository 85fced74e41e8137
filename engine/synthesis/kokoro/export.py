"""`main.py build-engine`: export the torch Kokoro to ONNX (dynamic token axis) and, where
onnxruntime has TensorRT, build and cache its fp16 engine by running the model once."""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.core.errors import SynthesisError
from engine.synthesis.kokoro.torch_model import kokoro_module

log = logging.getLogger("troupe.kokoro")
ONNX_NAME = "kokoro.onnx"
DYNAMIC_AXES = {"input_ids": {1: "tokens"}, "waveform": {0: "samples"}, "duration": {0: "tokens"}}
"""Any token count; the batch axis stays 1 (the model's alignment is built for one utterance)."""


@dataclass(frozen=True)
class BuildResult:
    onnx_path: Path
    export_s: float
    tensorrt: bool
    """A TensorRT engine was built into the cache beside the ONNX file."""
    message: str


def export_onnx(weights_dir: Path, out_dir: Path, opset: int = 17) -> Path:
    """ONNX of `KModel.forward_with_tokens` (one utterance; tokens of any length)."""
    config, weights = weights_dir / "config.json", sorted(weights_dir.glob("*.pth"))
    if not config.is_file() or not weights:
        raise SynthesisError(f"{weights_dir}: expected config.json and a .pth weights file")
    km = kokoro_module().KModel(repo_id="hexgrad/Kokoro-82M", config=str(config), model=str(weights[0]),
                                disable_complex=True)  # fmt: skip
    wrapper = kokoro_module().KModelForONNX(km).eval()
    ids = torch.zeros((1, 32), dtype=torch.long)
    ids[0, 1:-1] = torch.arange(1, 31) % 170 + 1
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ONNX_NAME
    try:
        with warnings.catch_warnings():
            # The TorchScript exporter is chosen on purpose (the model's data-dependent
            # alignment traces cleanly with it); its deprecation and tracer warnings are expected.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                wrapper, (ids, torch.zeros(1, 256), torch.ones(1)), str(path),
                input_names=["input_ids", "ref_s", "speed"], output_names=["waveform", "duration"],
                dynamic_axes=DYNAMIC_AXES, opset_version=opset, dynamo=False,
            )  # fmt: skip
    except Exception as exc:  # the exporter raises many kinds; the user needs the message
        raise SynthesisError(f"ONNX export failed: {exc}") from exc
    return path


def build_engine(weights_dir: Path, out_dir: Path) -> BuildResult:
    t0 = time.perf_counter()
    path = export_onnx(weights_dir, out_dir)
    export_s = time.perf_counter() - t0
    import onnxruntime as ort

    if "TensorrtExecutionProvider" not in ort.get_available_providers():
        note = "TensorRT is not available to onnxruntime here, so the ONNX model runs on CUDA or the CPU"
        return BuildResult(path, export_s, False, f"wrote {path}; {note}")
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx

    KokoroOnnx(model=path).load()  # TensorRT builds the fp16 engine and caches it on first run
    return BuildResult(
        path, export_s, True, f"wrote {path} and a TensorRT fp16 engine in {path.parent / 'trt_cache'}"
    )
