"""The batched torch Kokoro as a `Synthesizer`: phonemize, group by length, split batches
to fit the GPU, run, copy back on a side stream into pinned memory, resample to 48 kHz."""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import Mono, SynthRequest, Take, VoiceInfo
from engine.synthesis.gpu import split_to_fit
from engine.synthesis.kokoro.onnx_model import FIRST_CHUNK_TOKENS, owned_parts, shift_takes
from engine.synthesis.kokoro.phonemes import Phonemizer, length_buckets
from engine.synthesis.kokoro.torch_model import BatchedKokoro, BatchItem, load_kmodel
from engine.synthesis.kokoro.voices import VoiceBank, style_for
from engine.synthesis.kokoro.words import after_cut, join_takes, to_engine_rate

log = logging.getLogger("troupe.kokoro")
FRAMES_PER_TOKEN_GUESS = 6
"""Duration frames per token at speed 1, assumed when sizing a batch before its durations
are known."""


def guessed_frames(item: BatchItem) -> int:
    """The duration frames `item` is assumed to take: more at a slower speed (a slow rate, a
    voice voiced slower to be resampled), as the model's durations stretch."""
    return math.ceil(len(item.tokens) * FRAMES_PER_TOKEN_GUESS / item.speed)


def pick_device(requested: str | None = None) -> torch.device:
    if requested:
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class KokoroTorch:
    """A `Synthesizer` over `BatchedKokoro`; one model, used by one thread at a time."""

    name = "kokoro"
    sample_rate_hz = SAMPLE_RATE_HZ

    def __init__(self, weights_dir: Path | None = None, kmodel: Any = None, voices_dir: Path | None = None,
                 device: str | None = None, precision: str = "auto", max_batch: int = 16,
                 british: bool = False) -> None:  # fmt: skip
        if kmodel is None:
            if weights_dir is None:
                raise SynthesisError("the torch Kokoro needs a weights folder (config.json + .pth)")
            kmodel = load_kmodel(weights_dir)
        self.device = pick_device(device)
        self.model = BatchedKokoro(kmodel.to(self.device).eval())
        self.max_batch = max_batch
        self.bank = VoiceBank(voices_dir)
        self.phonemizer = Phonemizer(kmodel.vocab, british)
        self.autocast_dtype = _autocast_dtype(self.device, precision)
        self.expected_rtf = 0.05 if self.device.type == "cuda" else 0.35
        """Before the first batch is timed (CPU: 0.31 measured at batch 1, bench_neural.py)."""
        self._pinned: torch.Tensor | None = None
        """Page-locked staging for device-to-host copies."""
        self._copy_stream = (
            torch.cuda.Stream(self.device) if self.device.type == "cuda" else None  # type: ignore[no-untyped-call]
        )
        self._lock = threading.Lock()
        log.info("kokoro: torch on %s (%s)", self.device, self.autocast_dtype or "fp32")

    def voices(self) -> list[VoiceInfo]:
        from engine.synthesis.kokoro.onnx_model import kokoro_voices

        return kokoro_voices(self.bank)

    def _items(self, request: SynthRequest, first_tokens: int | None = None) -> list[BatchItem]:
        return [item for item, _owners in self._owned_items(request, first_tokens)]

    def _owned_items(
        self, request: SynthRequest, first_tokens: int | None = None
    ) -> list[tuple[BatchItem, tuple[int, ...]]]:
        parts = owned_parts(request, self.phonemizer, self.bank, first_tokens)
        # NB: the torch model's pitch is not moved in the model: `shift_takes` does it
        return [(BatchItem(tokens, torch.from_numpy(style_for(style, len(tokens))), speed), owners)
                for (tokens, style, speed, _f0), owners in parts]  # fmt: skip

    def run_items(self, items: Sequence[BatchItem]) -> list[np.ndarray]:
        """24 kHz audio per item, batched by length bucket and split to fit the device."""
        return [audio for audio, _frames in self.run_timed(items)]

    def run_timed(self, items: Sequence[BatchItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        """`run_items`, each item's audio with its tokens' durations in frames."""
        empty = (np.zeros(0, np.float32), np.zeros(0, np.int64))
        out: list[tuple[np.ndarray, np.ndarray]] = [empty] * len(items)
        for bucket in length_buckets([len(it.tokens) for it in items], self.max_batch):
            for group in self._fit(bucket, items):
                timed = self._forward([items[k] for k in group])
                for k, t in zip(group, timed, strict=True):
                    out[k] = t
        return out

    def _fit(self, idx: list[int], items: Sequence[BatchItem]) -> list[list[int]]:
        if self.device.type != "cuda":
            return [idx]
        free, _total = torch.cuda.mem_get_info(self.device)
        sizes = [(len(items[k].tokens), guessed_frames(items[k])) for k in idx]
        bpv = 2 if self.autocast_dtype is not None else 4
        return [[idx[j] for j in g] for g in split_to_fit(sizes, int(free * 0.8), bpv)]

    def _forward(self, items: Sequence[BatchItem]) -> list[tuple[np.ndarray, np.ndarray]]:
        ctx = (torch.autocast(self.device.type, dtype=self.autocast_dtype)
               if self.autocast_dtype is not None else contextlib.nullcontext())  # fmt: skip
        with self._lock:  # one batch at a time: the model and the staging buffer are shared
            with ctx:
                timed = self.model.forward_timed(items)
            audio = self._to_host([a for a, _d in timed])
            frames = [d.cpu().numpy() for _a, d in timed]  # NB: after the audio's copy has synced
            return list(zip(audio, frames, strict=True))

    def _to_host(self, audio: list[torch.Tensor]) -> list[np.ndarray]:
        if self._copy_stream is None:
            return [a.float().numpy() for a in audio]
        total = sum(int(a.numel()) for a in audio)
        if self._pinned is None or self._pinned.numel() < total:  # grown, then reused
            self._pinned = torch.empty(max(total, 1 << 20), dtype=torch.float32, pin_memory=True)
        done = torch.cuda.Event()  # type: ignore[no-untyped-call]
        self._copy_stream.wait_stream(torch.cuda.current_stream(self.device))
        views, offset = [], 0
        with torch.cuda.stream(self._copy_stream):  # copies overlap the next batch's compute
            for a in audio:
                view = self._pinned[offset : offset + a.numel()]
                view.copy_(a.float().reshape(-1), non_blocking=True)
                views.append(view)
                offset += a.numel()
            done.record(self._copy_stream)
        done.synchronize()
        return [v.numpy().copy() for v in views]  # NB: a copy, as the next batch reuses the buffer

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        """Every request's parts in one pass of batches; each request's audio at 48 kHz."""
        return [take.audio for take in self.synthesize_takes(batch)]

    def synthesize_takes(self, batch: Sequence[SynthRequest]) -> list[Take]:
        """`synthesize`, each request's audio with its words' times from the model's durations."""
        per_request = [self._owned_items(r) for r in batch]
        flat = [it for items in per_request for it in items]
        timed = self.run_timed([it for it, _o in flat])
        takes = join_takes([r.text for r in batch], [o for _it, o in flat], [len(i) for i in per_request],
                           [a for a, _f in timed], [f for _a, f in timed])  # fmt: skip
        return shift_takes(takes, batch, self.bank)

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        """The first short clause group at once, then the rest in one batch."""
        items = self._items(request, first_tokens=FIRST_CHUNK_TOKENS)

        def out(audio: np.ndarray) -> Mono:
            return shift_takes([Take(to_engine_rate(audio))], [request], self.bank)[0].audio

        yield out(self.run_items(items[:1])[0])  # NB: before the rest is voiced
        for audio in self.run_items(items[1:]):
            yield out(after_cut(audio)[0])

    def close(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


def _autocast_dtype(device: torch.device, precision: str) -> torch.dtype | None:
    if device.type != "cuda" or precision == "fp32":
        return None
    if precision == "fp16":
        return torch.float16
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
