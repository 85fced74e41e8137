"""Piper voices as a `Synthesizer`: a line's phonemes (espeak-ng IPA, as for Kokoro) cut at
sentence ends, voiced in batches per voice, resampled to the engine rate, then shifted to the
role's pitch so several roles can share one voice."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soxr

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.effects import pitch_shift, semitone_ratio, semitones_for, time_stretch
from engine.synthesis.kokoro.phonemes import clause_phonemes
from engine.synthesis.piper.library import DesignedVoice, fingerprint, shipped_designs
from engine.synthesis.piper.model import PiperConfig, PiperModel
from engine.synthesis.piper.names import voice_gender

BASE_RATE_WPM = 175
"""A role's rate_wpm at which the voice speaks at its own length_scale."""
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
BATCH_IDS = 0
"""Most padded phoneme ids in one model call (items x the longest); 0: one sentence a call.
The decoder's memory grows with the padded batch, and on CPU a batch is no faster: 16
sentences a call peaked at ~2 GB against ~0.35-0.5 GB one at a time, 480 ids at 0.9 GB,
all at the same real-time factor (0.12-0.15, 96 lines of the demo, in one run)."""
LENGTH_SCALES = (0.25, 4.0)
"""The length scales voiced (4x faster to 4x slower than the voice's own pace); a role's
rate and sizes past them are made up by stretching the take (Rubber Band) in `finish`."""


def voiced_scale(length: float) -> float:
    """The length scale a take is voiced at for the `length` it wants (`LENGTH_SCALES`)."""
    return float(min(LENGTH_SCALES[1], max(LENGTH_SCALES[0], length)))


@dataclass(frozen=True)
class Part:
    """One sentence to voice: which voice, its ids, the speaker and the scales."""

    voice: str
    ids: list[int]
    speaker: int
    scales: tuple[float, float, float]


def split_voice_id(voice_id: str) -> tuple[str, str]:
    """`NAME#speaker` -> (NAME, speaker); speaker is '' when absent."""
    name, _, speaker = voice_id.partition("#")
    return name.strip(), speaker.strip()


class PiperSynthesizer:
    """Piper voices by name (`en_US-joe-medium`, `NAME#speaker`, or a designed voice's id:
    its base resampled, `engine.synthesis.piper.library`), each model loaded on first use."""

    name = "piper"
    sample_rate_hz = SAMPLE_RATE_HZ
    expected_rtf = 0.3
    """Before the first line is timed; bench_neural.py measures the real figure."""

    def __init__(self, voices: Mapping[str, Path], noise_scale: float | None = None,
                 noise_w: float | None = None, max_batch: int = 4,
                 threads: int | None = None, batch_ids: int = BATCH_IDS,
                 designs: Mapping[str, DesignedVoice] | None = None) -> None:  # fmt: skip
        """`voices`: name -> `.onnx` path (its config beside it as `.onnx.json`);
        `noise_scale`/`noise_w`: override every voice's own (0 makes synthesis repeatable);
        `designs`: the designed voices offered on these bases (default: the shipped ones)."""
        if not voices:
            raise SynthesisError("no Piper voices given")
        self.paths = dict(voices)
        self.noise_scale = noise_scale
        self.noise_w = noise_w
        self.max_batch = max_batch
        """Lines a caller may hand over at once (a render voices 8x this many ahead)."""
        self.batch_ids = batch_ids
        self.threads = threads
        self.configs = {n: PiperConfig.load(p.with_name(p.name + ".json")) for n, p in self.paths.items()}
        self._models: dict[str, PiperModel] = {}
        self.designs: dict[str, DesignedVoice] = {
            k: v for k, v in (designs if designs is not None else shipped_designs()).items()
            if v.base in self.paths and k not in self.paths
        }  # fmt: skip
        """The designed voices whose base is installed (a voice file of the same name wins)."""

    def resolve(self, voice_id: str) -> tuple[str, str, float]:
        """(model name, speaker, the voice's own resampling in semitones) for a voice id."""
        name, speaker = split_voice_id(voice_id)
        design = self.designs.get(name)
        if design is not None:
            return design.base, speaker, design.resample_st
        return name, speaker, 0.0

    def model_version(self) -> str:
        """What decides this backend's sound besides the request (the take cache's key)."""
        files = []
        for name, path in sorted(self.paths.items()):
            try:
                st = path.stat()
                files.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
            except OSError:
                files.append(f"{name}:?")
        return f"piper:{','.join(files)}:{self.noise_scale}:{self.noise_w}:{fingerprint(self.designs)}"

    def model(self, name: str) -> PiperModel:
        if name not in self.paths:
            have = ", ".join(sorted(self.paths))
            raise SynthesisError(f"unknown Piper voice {name!r}; have {have}")
        if name not in self._models:
            self._models[name] = PiperModel(self.paths[name], self.configs[name], self.threads,
                                            batches=self.batch_ids > 0)  # fmt: skip
        return self._models[name]

    def load(self) -> None:
        """Load the first voice (a warm-up, so the first line does not wait for it)."""
        first = sorted(self.paths)[0]
        self.model(first).run([self.configs[first].ids("ə")], (0.0, 1.0, 0.0), [0])

    def voices(self) -> list[VoiceInfo]:
        out: list[VoiceInfo] = []
        for name, cfg in sorted(self.configs.items()):
            gender = voice_gender(name)
            out.append(VoiceInfo("piper", name, name, cfg.language, gender if cfg.num_speakers <= 1 else ""))
            for speaker in sorted(cfg.speakers, key=cfg.speakers.__getitem__):
                out.append(VoiceInfo("piper", f"{name}#{speaker}", f"{name} ({speaker})", cfg.language))
        for v in sorted(self.designs.values(), key=lambda d: d.id):  # after the models themselves
            out.append(VoiceInfo("piper", v.id, f"{v.name} ({v.age}, {v.f0_median_hz:.0f} Hz)", v.accent,
                                 v.gender, v.resample_st))  # fmt: skip
        return out

    def parts(self, request: SynthRequest) -> list[Part]:
        """The request's sentences as model input, with the role's speed and the noise scales."""
        name, speaker, own = self.resolve(request.voice.voice_id)
        model = self.model(name)
        cfg = model.config
        sid = cfg.speaker_id(speaker, f"Piper voice {request.voice.voice_id!r}")
        noise = cfg.noise_scale if self.noise_scale is None else self.noise_scale
        noise_w = cfg.noise_w if self.noise_w is None else self.noise_w
        length = self._length(cfg, request.voice, own)
        scales = (float(noise), voiced_scale(length), float(noise_w))
        phonemes = clause_phonemes(request.text, cfg.espeak_voice)
        out = [Part(name, cfg.ids(s), sid, scales) for s in _SENTENCE_END.split(phonemes) if s.strip()]
        if not out:
            raise SynthesisError(f"nothing to say in {request.text!r}")
        return out

    @staticmethod
    def _length(cfg: PiperConfig, voice: Voice, own: float) -> float:
        """The length scale a role's takes want: its rate, and the voice's own and the role's
        resampling (`finish` plays the take that much faster, so it is voiced that much slower)."""
        length = cfg.length_scale * BASE_RATE_WPM / max(1, voice.rate_wpm)
        return length * semitone_ratio(own + semitones_for(voice.pitch_range))

    def run_parts(self, parts: Sequence[Part]) -> list[np.ndarray]:
        """Audio at each voice's rate; parts of one voice and one scale triple in batches."""
        out: list[np.ndarray] = [np.zeros(0, np.float32)] * len(parts)
        groups: dict[tuple[str, tuple[float, float, float]], list[int]] = {}
        for k, p in enumerate(parts):
            groups.setdefault((p.voice, p.scales), []).append(k)
        for (voice, scales), idx in groups.items():
            idx.sort(key=lambda k: len(parts[k].ids))  # alike lengths together: less padding
            for chunk in self._calls(idx, parts):
                audio = self.model(voice).run([parts[k].ids for k in chunk], scales,
                                              [parts[k].speaker for k in chunk])  # fmt: skip
                for k, a in zip(chunk, audio, strict=True):
                    out[k] = a
        return out

    def _calls(self, idx: Sequence[int], parts: Sequence[Part]) -> Iterator[list[int]]:
        """`idx` (sorted by length) cut into calls of at most `max_batch` items and
        `batch_ids` padded ids (an item longer than that goes alone)."""
        chunk: list[int] = []
        for k in idx:
            width = len(parts[k].ids)  # the longest so far: idx is sorted
            if chunk and (len(chunk) >= self.max_batch or (len(chunk) + 1) * width > self.batch_ids):
                yield chunk
                chunk = []
            chunk.append(k)
        if chunk:
            yield chunk

    def finish(self, audio: np.ndarray, voice: Voice) -> Mono:
        """Model audio -> the role's clip: engine rate, the role's timbre (its `pitch_range`:
        50 leaves the voice's own; higher sounds smaller: the clip, voiced that much slower
        in `parts`, played faster, pitch and formants together, in the same resampling) and
        its pitch (its `pitch`, in all: Rubber Band gives back what the timbre moved). A
        designed voice's own resampling goes into the same pass and is not given back."""
        name, _speaker, own = self.resolve(voice.voice_id)
        rate = self.configs[name].sample_rate_hz
        timbre = semitones_for(voice.pitch_range)
        played = rate * semitone_ratio(own + timbre)
        clip = soxr.resample(audio.astype(np.float32), played, SAMPLE_RATE_HZ, quality="HQ")
        clip = np.asarray(clip, np.float32)
        length = self._length(self.configs[name], voice, own)
        clip = time_stretch(clip, SAMPLE_RATE_HZ, voiced_scale(length) / length)  # what the clamp left out
        return pitch_shift(clip, SAMPLE_RATE_HZ, semitones_for(voice.pitch) - timbre)

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        per_request = [self.parts(r) for r in batch]
        audio = self.run_parts([p for parts in per_request for p in parts])
        out, k = [], 0
        for r, parts in zip(batch, per_request, strict=True):
            pieces = audio[k : k + len(parts)]
            k += len(parts)
            out.append(self.finish(np.concatenate(pieces), r.voice))
        return out

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        """The first sentence at once, then the rest in one batch."""
        parts = self.parts(request)
        yield self.finish(self.run_parts(parts[:1])[0], request.voice)
        if len(parts) > 1:
            yield self.finish(np.concatenate(self.run_parts(parts[1:])), request.voice)

    def close(self) -> None:
        for m in self._models.values():
            m.close()

    def release(self) -> None:
        """Let go of the voices' sessions until their next lines load them again."""
        self.close()
