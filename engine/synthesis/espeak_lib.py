"""ctypes binding to libespeak-ng from the espeakng-loader wheel.

NB: libespeak-ng keeps global state and is not thread-safe: two threads inside one
library instance crash the process. Every call goes through `EspeakLib.lock`, and
parallelism comes from a process pool (see `engine.synthesis.pool`).
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from engine.core.errors import SynthesisError

_AUDIO_OUTPUT_SYNCHRONOUS = 2
_CHARS_UTF8 = 1
_ENDPAUSE = 0x1000
_PHONEME_INPUT = 0x100
"""espeakPHONEMES: `[[...]]` in the text is phoneme mnemonics (the lexicon's IPA, converted)."""
_POS_CHARACTER = 1
_PARAM_RATE, _PARAM_VOLUME, _PARAM_PITCH, _PARAM_RANGE = 1, 2, 3, 4
_PHONEMES_IPA = 0x02
_BUFFER_MS = 1000
"""Audio handed to the callback a second at a time (the library's default, 60 ms, costs a
Python call and a copy per 60 ms: a tenth of the synthesis time)."""


class _Voice(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_void_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


_SynthCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)


@dataclass(frozen=True)
class EspeakVoiceInfo:
    """One entry of espeak-ng's voice list."""

    name: str
    identifier: str
    languages: tuple[str, ...]
    gender: str
    """'m', 'f' or '' when espeak does not say."""


def _languages(ptr: int | None) -> tuple[str, ...]:
    # The list is (priority byte, zero-terminated name)* ending with a zero priority byte.
    if not ptr:
        return ()
    out: list[str] = []
    offset = 0
    while True:
        priority = ctypes.c_ubyte.from_address(ptr + offset).value
        if priority == 0:
            return tuple(out)
        name = ctypes.string_at(ptr + offset + 1)
        out.append(name.decode("utf-8", "replace"))
        offset += 2 + len(name)


class EspeakLib:
    """One initialised libespeak-ng in this process; use `EspeakLib.instance()`."""

    _instance: EspeakLib | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        try:
            import espeakng_loader
        except ImportError as exc:  # pragma: no cover - a hard dependency
            raise SynthesisError("espeakng-loader is not installed") from exc
        self.lock = threading.Lock()
        self._lib = ctypes.CDLL(espeakng_loader.get_library_path())
        self._declare()
        data_dir = Path(espeakng_loader.get_data_path())
        rate = self._lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, _BUFFER_MS, str(data_dir.parent).encode(), 0
        )
        if rate <= 0:
            raise SynthesisError(f"espeak-ng failed to initialise with data at {data_dir}")
        self.sample_rate_hz: int = rate
        self._chunks: list[bytes] = []
        self._voice: str | None = None
        """The voice the library holds now (setting it again costs a seventh of a line's
        synthesis: it re-reads the voice file; the parameters are set on every call anyway)."""
        # Keep a reference: ctypes does not, and a collected callback crashes the library.
        self._callback = _SynthCallback(self._on_audio)
        self._lib.espeak_SetSynthCallback(self._callback)

    @classmethod
    def instance(cls) -> EspeakLib:
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def _declare(self) -> None:
        lib = self._lib
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_SetSynthCallback.argtypes = [_SynthCallback]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_SetParameter.restype = ctypes.c_int
        lib.espeak_Synth.argtypes = [
            ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int,
            ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
        ]  # fmt: skip
        lib.espeak_Synth.restype = ctypes.c_int
        lib.espeak_Synchronize.restype = ctypes.c_int
        lib.espeak_ListVoices.argtypes = [ctypes.POINTER(_Voice)]
        lib.espeak_ListVoices.restype = ctypes.POINTER(ctypes.POINTER(_Voice))
        lib.espeak_TextToPhonemes.argtypes = [
            ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int,
        ]  # fmt: skip
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p

    def _on_audio(self, wav: ctypes._Pointer, n_samples: int, _events: int) -> int:  # type: ignore[type-arg]
        if n_samples > 0 and wav:
            self._chunks.append(ctypes.string_at(wav, 2 * n_samples))
        return 0  # 0 = continue synthesis

    def list_voices(self, variants: bool = False) -> list[EspeakVoiceInfo]:
        """Every installed voice, or every voice variant (`+m3`, `+f2`, ...)."""
        spec = _Voice()
        spec_ptr = None
        if variants:
            lang = ctypes.create_string_buffer(b"\x00variant\x00")
            spec.languages = ctypes.cast(lang, ctypes.c_void_p).value
            spec_ptr = ctypes.pointer(spec)
        with self.lock:
            array = self._lib.espeak_ListVoices(spec_ptr)
            out: list[EspeakVoiceInfo] = []
            i = 0
            while array[i]:
                v = array[i].contents
                out.append(
                    EspeakVoiceInfo(
                        name=(v.name or b"").decode("utf-8", "replace"),
                        identifier=(v.identifier or b"").decode("utf-8", "replace"),
                        languages=_languages(v.languages),
                        gender={1: "m", 2: "f"}.get(v.gender, ""),
                    )
                )
                i += 1
        return out

    def _use_voice(self, voice: str) -> None:
        """Under the lock: make `voice` the library's voice, unless it already is."""
        if voice == self._voice:
            return
        self._voice = None
        if self._lib.espeak_SetVoiceByName(voice.encode()) != 0:
            raise SynthesisError(f"espeak-ng has no voice {voice!r}")
        self._voice = voice

    def synthesize(
        self, text: str, voice: str, rate_wpm: int, pitch: int, pitch_range: int
    ) -> NDArray[np.int16]:
        """Synthesize `text` at the library's native rate (int16 mono, read-only)."""
        encoded = text.encode("utf-8") + b"\x00"
        flags = _CHARS_UTF8 | _ENDPAUSE | (_PHONEME_INPUT if "[[" in text else 0)
        with self.lock:
            self._use_voice(voice)
            for param, value in (
                (_PARAM_RATE, rate_wpm),
                (_PARAM_PITCH, pitch),
                (_PARAM_RANGE, pitch_range),
                (_PARAM_VOLUME, 100),
            ):
                self._lib.espeak_SetParameter(param, int(value), 0)
            self._chunks = []
            buf = ctypes.create_string_buffer(encoded)
            err = self._lib.espeak_Synth(buf, len(encoded), 0, _POS_CHARACTER, 0, flags, None, None)
            if err != 0:
                raise SynthesisError(f"espeak-ng synthesis failed (error {err}) for {text[:40]!r}")
            self._lib.espeak_Synchronize()
            chunks, self._chunks = self._chunks, []
        return np.frombuffer(b"".join(chunks), np.int16)

    def phonemes(self, text: str, voice: str = "en-us") -> str:
        """IPA phonemes of `text` as espeak-ng pronounces it with `voice`."""
        encoded = ctypes.create_string_buffer(text.encode("utf-8") + b"\x00")
        parts: list[str] = []
        with self.lock:
            self._use_voice(voice)
            ptr = ctypes.c_void_p(ctypes.cast(encoded, ctypes.c_void_p).value)
            while ptr.value:
                res = self._lib.espeak_TextToPhonemes(ctypes.byref(ptr), _CHARS_UTF8, _PHONEMES_IPA)
                if res:
                    parts.append(res.decode("utf-8", "replace"))
        return " ".join(p.strip() for p in parts if p.strip())
