"""Streaming audio writers: blocks of float samples in, one file (or byte stream) out.

Every writer turns an OS error into an `ExportError` that names the file and says
"disk full" when that is what happened, because libsndfile alone says only "System error".
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import signal
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import IO, Protocol

import numpy as np
import soundfile as sf
from numpy.typing import NDArray

from engine.export import flac_sparse
from engine.export.formats import (
    FORMATS,
    AudioFormat,
    ExportError,
    describe,
    ffmpeg_path,
    pcm_buffer,
    pcm_bytes,
    require,
    to_int,
)


class AudioWriter(Protocol):
    def write(self, block: NDArray[np.float32]) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class WavWriter:
    """WAV (RF64 past 4 GB) with the samples converted in numpy, in large blocks."""

    _HEADER = struct.Struct("<4sI4s4sI28s4sIHHIIHH")

    def __init__(self, target: IO[bytes], channels: int, sample_rate_hz: int, sample_format: str,
                 where: str) -> None:  # fmt: skip
        self._f, self.where, self.channels = target, where, channels
        self.sample_format = sample_format
        self._width = {"s16": 2, "s24": 3, "f32": 4}[sample_format]
        self._rate = sample_rate_hz
        self._n_bytes = 0
        self._guard(lambda: self._f.write(self._header(0)))

    def _header(self, n_bytes: int) -> bytes:
        tag = 3 if self.sample_format == "f32" else 1
        align = self.channels * self._width
        big = n_bytes + self._HEADER.size > 0xFFFFFFFF
        # A JUNK chunk the size of a ds64 chunk: a file that outgrows RIFF becomes RF64 in place.
        # NB: the RIFF size counts everything after its own 8 bytes: the header struct, the
        # 8-byte data chunk head and the samples
        junk = (b"ds64", struct.pack("<QQQI", self._HEADER.size + n_bytes, n_bytes,
                                     n_bytes // align, 0)) if big else (b"JUNK", bytes(28))  # fmt: skip
        riff = 0xFFFFFFFF if big else self._HEADER.size + n_bytes
        return self._HEADER.pack(
            b"RF64" if big else b"RIFF", riff, b"WAVE", junk[0], 28, junk[1], b"fmt ", 16, tag,
            self.channels, self._rate, self._rate * align, align, self._width * 8,
        ) + b"data" + struct.pack("<I", 0xFFFFFFFF if big else n_bytes)  # fmt: skip

    def _guard(self, op) -> None:  # type: ignore[no-untyped-def]
        try:
            op()
        except OSError as exc:
            raise describe(exc, self.where) from exc

    def write(self, block: NDArray[np.float32]) -> None:
        data = pcm_buffer(block, self.sample_format)
        self._guard(lambda: self._f.write(data))
        self._n_bytes += data.nbytes

    def close(self) -> None:
        def finish() -> None:
            self._f.seek(0)
            self._f.write(self._header(self._n_bytes))
            self._f.flush()

        self._guard(finish)

    def abort(self) -> None:
        pass


class _GuardedFile(io.RawIOBase):
    """A file for libsndfile's virtual I/O that keeps the OS error libsndfile would lose."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        self.error: OSError | None = None

    def write(self, data) -> int:  # type: ignore[no-untyped-def]
        try:
            return self.f.write(data)
        except OSError as exc:
            self.error = self.error or exc
            return 0

    def read(self, n: int = -1) -> bytes:
        return self.f.read(n)

    def seek(self, offset: int, whence: int = 0) -> int:
        try:
            return self.f.seek(offset, whence)
        except OSError as exc:
            self.error = self.error or exc
            return -1

    def tell(self) -> int:
        return self.f.tell()

    def seekable(self) -> bool:
        return True


class SndWriter:
    """FLAC, MP3 or Opus through libsndfile; integer samples converted in numpy first."""

    def __init__(self, target: IO[bytes], fmt: AudioFormat, channels: int, sample_rate_hz: int,
                 sample_format: str, where: str) -> None:  # fmt: skip
        if fmt.name == "flac" and sample_format == "f32":
            raise ExportError(f"{where}: FLAC holds 16- or 24-bit samples, not 32-bit float")
        subtype = fmt.sf_subtype or ("PCM_16" if sample_format == "s16" else "PCM_24")
        self._bits = 0 if fmt.lossy else (16 if sample_format == "s16" else 24)
        self.where = where
        self._io = _GuardedFile(target)
        try:
            self._sf = sf.SoundFile(self._io, "w", sample_rate_hz, channels, subtype, format=fmt.sf_format)
        except (sf.LibsndfileError, RuntimeError) as exc:
            raise self._error(exc) from exc

    def _error(self, exc: Exception) -> ExportError:
        if self._io.error is not None:
            return describe(self._io.error, self.where)
        return ExportError(f"{self.where}: cannot write ({exc})")

    def write(self, block: NDArray[np.float32]) -> None:
        data = to_int(block, self._bits) if self._bits else block
        try:
            self._sf.write(data)
        except (sf.LibsndfileError, RuntimeError, AssertionError) as exc:  # AssertionError: a short write
            raise self._error(exc) from exc
        if self._io.error is not None:
            raise describe(self._io.error, self.where)

    def close(self) -> None:
        try:
            self._sf.close()
        except (sf.LibsndfileError, RuntimeError, AssertionError) as exc:
            raise self._error(exc) from exc
        if self._io.error is not None:
            raise describe(self._io.error, self.where)

    def abort(self) -> None:
        with contextlib.suppress(sf.LibsndfileError, RuntimeError, AssertionError):
            self._sf.close()


def _die_with_parent() -> None:
    # Linux: the encoder gets SIGTERM if this process dies, so no ffmpeg outlives a killed render.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class FfmpegWriter:
    """AAC (ADTS or MP4/M4B) through the system's ffmpeg, fed float samples on a pipe."""

    def __init__(self, out: Path, fmt: AudioFormat, channels: int, sample_rate_hz: int, where: str) -> None:
        require(fmt, where)
        exe = ffmpeg_path()
        assert exe is not None  # require() checked it
        self.where = where
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()/abort()
        cmd = [exe, "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "f32le",
               "-ar", str(sample_rate_hz), "-ac", str(channels), "-i", "pipe:0",
               *fmt.ffmpeg_args, str(out)]  # fmt: skip
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                      stderr=self._err, preexec_fn=_die_with_parent)  # fmt: skip

    def _failure(self) -> ExportError:
        self._proc.wait()
        self._err.seek(0)
        text = self._err.read().decode("utf-8", "replace").strip()
        if "No space left" in text:
            return ExportError(f"{self.where}: disk full (no space left on the device)")
        return ExportError(f"{self.where}: ffmpeg failed ({text.splitlines()[-1] if text else 'no message'})")

    def write(self, block: NDArray[np.float32]) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(np.ascontiguousarray(block, dtype="<f4").tobytes())
        except (BrokenPipeError, OSError) as exc:
            raise self._failure() from exc

    def close(self) -> None:
        assert self._proc.stdin is not None
        with contextlib.suppress(OSError):
            self._proc.stdin.close()
        if self._proc.wait() != 0:
            raise self._failure()
        self._err.close()

    def abort(self) -> None:
        self._proc.kill()
        self._proc.wait()
        self._err.close()


class FileWriter:
    """Any format to a file; `close` finishes it, `abort` leaves a partial file for the caller."""

    def __init__(self, path: Path, fmt: AudioFormat, channels: int, sample_rate_hz: int,
                 sample_format: str = "s24", where: str | None = None,
                 sparse: bool = False) -> None:  # fmt: skip
        """`sparse`: mostly digital silence (a stem), which FLAC then writes without encoding
        it, where the system's libFLAC is installed."""
        require(fmt, str(where or path))
        self.where = str(where or path)
        self._file: IO[bytes] | None = None
        self._writer: AudioWriter
        if fmt.encoder == "ffmpeg":
            self._writer = FfmpegWriter(path, fmt, channels, sample_rate_hz, self.where)
            return
        try:
            # unbuffered: every write goes out (in large blocks) and fails where it fails
            self._file = open(path, "w+b", buffering=0)  # noqa: SIM115 - closed by close()/abort()
        except OSError as exc:
            raise describe(exc, self.where) from exc
        try:
            if sparse and fmt.name == "flac" and flac_sparse.available():
                self._writer = flac_sparse.SparseFlacWriter(self._file, channels, sample_rate_hz,
                                                            sample_format, self.where)  # fmt: skip
            elif fmt.encoder == "sndfile":
                self._writer = SndWriter(self._file, fmt, channels, sample_rate_hz, sample_format, self.where)
            elif fmt.encoder == "raw":
                self._writer = _RawWriter(self._file, self.where)
            else:
                self._writer = WavWriter(self._file, channels, sample_rate_hz, sample_format, self.where)
        except BaseException:
            self._file.close()
            raise

    def write(self, block: NDArray[np.float32]) -> None:
        self._writer.write(block)

    def close(self) -> None:
        self._writer.close()
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                raise describe(exc, self.where) from exc

    def abort(self) -> None:
        try:
            self._writer.abort()
        finally:
            if self._file is not None:
                with contextlib.suppress(OSError):
                    self._file.close()


class _RawWriter:
    """Headerless 16-bit little-endian PCM (OpenAI's `pcm`)."""

    def __init__(self, target: IO[bytes], where: str) -> None:
        self._f, self.where = target, where

    def write(self, block: NDArray[np.float32]) -> None:
        try:
            self._f.write(pcm_buffer(block, "s16"))
        except OSError as exc:
            raise describe(exc, self.where) from exc

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


OPUS_RATES_HZ = (8_000, 12_000, 16_000, 24_000, 48_000)


def encode(audio: NDArray[np.float32], sample_rate_hz: int, fmt: str) -> bytes:
    """`audio` (frames,) or (frames, channels) float32 as the bytes of a file in `fmt`
    (one of `available_formats()`), e.g. for a speech server's `response_format`."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown audio format {fmt!r}; this install writes: {', '.join(FORMATS)}")
    spec = FORMATS[fmt]
    require(spec, fmt)
    block = audio.reshape(len(audio), -1).astype(np.float32, copy=False)
    if spec.name == "opus" and sample_rate_hz not in OPUS_RATES_HZ:
        import soxr  # Opus codes only a few rates: bring the audio to the one it likes best

        up = soxr.resample(block, sample_rate_hz, 48_000)
        block = np.asarray(up, np.float32).reshape(-1, block.shape[1])
        sample_rate_hz = 48_000
    channels = block.shape[1]
    if spec.encoder == "ffmpeg":
        # MP4 needs a seekable output; ffmpeg writes it to a temporary file.
        with tempfile.TemporaryDirectory(prefix="troupe-") as tmp:
            path = Path(tmp) / f"out{spec.suffixes[0]}"
            w = FfmpegWriter(path, spec, channels, sample_rate_hz, fmt)
            try:
                w.write(block)
            except ExportError:
                w.abort()
                raise
            w.close()
            return path.read_bytes()
    buf = io.BytesIO()
    writer: AudioWriter
    if spec.encoder == "sndfile":
        writer = SndWriter(buf, spec, channels, sample_rate_hz, "s16", fmt)
    elif spec.encoder == "wav":
        writer = WavWriter(buf, channels, sample_rate_hz, "s16", fmt)
    else:
        return pcm_bytes(block, "s16")
    writer.write(block)
    writer.close()
    return buf.getvalue()
