"""The audio formats Troupe writes, what each needs on this machine, and sample conversion."""

from __future__ import annotations

import errno
import functools
import shutil
import subprocess
from dataclasses import dataclass

import numpy as np
import soundfile as sf
from numpy.typing import NDArray

from engine.core.errors import TroupeError


class ExportError(TroupeError):
    """A file could not be written or encoded: names the file and the reason."""


SAMPLE_FORMATS = ("s16", "s24", "f32")
"""Sample formats for the lossless containers: 16-bit, 24-bit integer or 32-bit float."""


@dataclass(frozen=True)
class AudioFormat:
    """One output format: how it is encoded and how big it gets."""

    name: str
    """Short name, also OpenAI's `response_format` where it has one ('mp3', 'opus', ...)."""
    suffixes: tuple[str, ...]
    encoder: str
    """'wav' (Troupe's own writer), 'sndfile' (libsndfile), 'ffmpeg' or 'raw'."""
    media_type: str
    lossy: bool = False
    bytes_per_s: int = 0
    """Lossy formats: the encoded rate, for size estimates."""
    sf_format: str = ""
    sf_subtype: str = ""
    ffmpeg_args: tuple[str, ...] = ()


FORMATS: dict[str, AudioFormat] = {
    f.name: f
    for f in (
        AudioFormat("wav", (".wav",), "wav", "audio/wav"),
        AudioFormat("flac", (".flac",), "sndfile", "audio/flac", sf_format="FLAC"),
        AudioFormat("mp3", (".mp3",), "sndfile", "audio/mpeg", True, 24_000, "MP3", "MPEG_LAYER_III"),
        AudioFormat("opus", (".opus", ".ogg"), "sndfile", "audio/ogg", True, 12_000, "OGG", "OPUS"),
        AudioFormat("aac", (".aac",), "ffmpeg", "audio/aac", True, 16_000,
                    ffmpeg_args=("-c:a", "aac", "-b:a", "128k", "-f", "adts")),
        AudioFormat("m4a", (".m4a", ".m4b"), "ffmpeg", "audio/mp4", True, 16_000,
                    ffmpeg_args=("-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart", "-f", "ipod")),
        AudioFormat("pcm", (".pcm", ".raw"), "raw", "audio/pcm"),
    )
}  # fmt: skip


@functools.cache
def ffmpeg_path() -> str | None:
    """The system's ffmpeg, if it is installed and has the AAC encoder."""
    path = shutil.which("ffmpeg")
    if path is None:
        return None
    try:
        out = subprocess.run([path, "-hide_banner", "-encoders"], capture_output=True, text=True,
                             timeout=20, check=False).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return path if " aac " in out else None


def unavailable_reason(fmt: AudioFormat) -> str | None:
    """Why `fmt` cannot be written on this machine, or None when it can."""
    if fmt.encoder == "sndfile" and fmt.sf_subtype not in ("", *sf.available_subtypes(fmt.sf_format)):
        return f"this libsndfile cannot write {fmt.name} (no {fmt.sf_subtype} encoder)"
    if fmt.encoder == "ffmpeg" and ffmpeg_path() is None:
        return f"{fmt.name} needs ffmpeg with its AAC encoder (e.g. apt-get install ffmpeg)"
    return None


def available_formats() -> list[str]:
    """The format names this install can write (a speech server's `response_format` list)."""
    return list(_available())


@functools.cache
def _available() -> tuple[str, ...]:
    # NB: cached: asking libsndfile for its subtypes costs ~1 ms, and the speech server checks
    # every request's format (it was two thirds of a request's own CPU under load)
    return tuple(name for name, f in FORMATS.items() if unavailable_reason(f) is None)


def format_for_path(path: str) -> AudioFormat:
    """The format a file name asks for, by its suffix; a clear error for any other."""
    suffix = "." + path.rsplit(".", 1)[-1].lower() if "." in path else ""
    for f in FORMATS.values():
        if suffix in f.suffixes:
            return f
    known = ", ".join(s for f in FORMATS.values() for s in f.suffixes)
    raise ExportError(f"{path}: unknown audio format {suffix or '(no suffix)'}; use one of {known}")


def require(fmt: AudioFormat, where: str) -> None:
    reason = unavailable_reason(fmt)
    if reason is not None:
        raise ExportError(f"{where}: {reason}")


def to_int(block: NDArray[np.float32], bits: int) -> NDArray[np.int16] | NDArray[np.int32]:
    """Float samples in [-1, 1] to 16-bit (rounded), or to 24-bit left-aligned in int32
    (the top 24 bits of a 32-bit conversion: within one 24-bit step), clipped, in few passes."""
    if bits == 16:
        x = np.multiply(block, 32768.0, dtype=np.float32)
        np.clip(x, -32768.0, 32767.0, out=x)
        np.rint(x, out=x)
        return x.astype(np.int16)
    x = np.multiply(block, 2147483648.0, dtype=np.float32)
    np.clip(x, -2147483648.0, 2147483392.0, out=x)  # NB: the largest float32 below 2**31
    return x.astype(np.int32)


def pcm_buffer(block: NDArray[np.float32], sample_format: str) -> memoryview:
    """Interleaved little-endian PCM of a (frames, channels) float block, as a flat byte view
    (written to a file without another copy)."""
    if sample_format == "f32":
        data: NDArray[np.generic] = np.ascontiguousarray(block, dtype="<f4")
    elif sample_format == "s16":
        data = to_int(block, 16).astype("<i2", copy=False)
    else:
        data = _pack24(to_int(block, 24).astype(np.int32, copy=False).reshape(-1))
    return data.data.cast("B")


def _pack24(wide: NDArray[np.int32]) -> NDArray[np.uint8]:
    """The top three bytes of each left-aligned sample, little-endian, packed.

    NB: one strided copy: each sample, shifted down, is stored as four bytes three bytes
    after the last, so its zero or sign byte is overwritten by the next sample's low byte
    (numpy copies a 1-D array in order); the last one spills into a spare byte. Four times
    faster than a copy through a 3-byte dtype."""
    n = wide.size
    np.right_shift(wide, 8, out=wide)
    packed = np.empty(3 * n + 1, np.uint8)
    np.ndarray((n,), "<i4", buffer=packed, strides=(3,))[:] = wide
    return packed[:-1]


def pcm_bytes(block: NDArray[np.float32], sample_format: str) -> bytes:
    return bytes(pcm_buffer(block, sample_format))


def describe(exc: OSError, where: str) -> ExportError:
    """`exc` as one line that names the file; "disk full" for ENOSPC and EDQUOT."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ExportError(f"{where}: disk full (no space left on the device)")
    return ExportError(f"{where}: cannot write ({exc.strerror or exc})")
