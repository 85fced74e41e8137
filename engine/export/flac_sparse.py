"""FLAC for stems, where most of the file is digital silence: every silent block is written
here as a CONSTANT frame (a few bytes, no encoding), and only blocks with sound go to libFLAC
(the system's, through ctypes), whose frames are renumbered into place.

The stream is fixed-blocksize (`BLOCK` samples a frame); a frame's header carries its
number, protected by a CRC-8, and the whole frame by a CRC-16. libFLAC numbers only the
frames it sees, so each of its frames gets its real number and both CRCs are mended (the
CRC-16 without reading the frame again: it is linear, see `_mend_crc16`). The STREAMINFO
block is written at the end; it has no MD5 signature (allowed: "not computed").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import struct
from collections import deque
from typing import IO

import numpy as np
from numpy.typing import NDArray

from engine.export.formats import ExportError, describe, to_int

BLOCK = 4096
_LEVEL = 5
_BLOCK_CODE = 12
"""Header code for 4096 samples a frame (256 * 2**(12 - 8))."""
_SIZE_CODE = {16: 0b100, 24: 0b110}


def _table(poly: int, width: int) -> list[int]:
    top, mask = 1 << (width - 1), (1 << width) - 1
    out = []
    for byte in range(256):
        c = byte << (width - 8)
        for _ in range(8):
            c = ((c << 1) ^ poly) & mask if c & top else (c << 1) & mask
        out.append(c)
    return out


_CRC8, _CRC16 = _table(0x07, 8), _table(0x8005, 16)


def crc8(data: bytes) -> int:
    c = 0
    for b in data:
        c = _CRC8[c ^ b]
    return c


def crc16(data: bytes) -> int:
    c = 0
    for b in data:
        c = ((c << 8) & 0xFFFF) ^ _CRC16[(c >> 8) ^ b]
    return c


def _mulmod(a: int, b: int) -> int:
    """a * b in GF(2)[x] modulo FLAC's CRC-16 polynomial x^16 + x^15 + x^2 + 1."""
    r = 0
    for k in range(16):
        if b >> k & 1:
            r ^= a << k
    for k in range(30, 15, -1):
        if r >> k & 1:
            r ^= 0x18005 << (k - 16)
    return r


@functools.cache
def _x_to_8n(n: int) -> int:
    """x^(8n) mod the polynomial: what n zero bytes do to a CRC-16 register."""
    if n == 0:
        return 1
    half = _x_to_8n(n // 2)
    r = _mulmod(half, half)
    return _mulmod(r, 0x100) if n % 2 else r


def _mend_crc16(crc: int, old_head: bytes, new_head: bytes, body_len: int) -> int:
    """The CRC-16 of new_head + body from that of old_head + body: with a zero start and no
    final xor the CRC is linear, and a head's share is its own CRC pushed through the body."""
    delta = crc16(old_head) ^ crc16(new_head)
    return crc ^ _mulmod(delta, _x_to_8n(body_len))


def _utf8(n: int) -> bytes:
    """A frame number as FLAC codes it (UTF-8's scheme, up to 31 bits)."""
    if n < 0x80:
        return bytes([n])
    length = next(k for k in range(2, 7) if n < 1 << (5 * k + 1))
    out = [0x80 | (n >> (6 * k) & 0x3F) for k in range(length - 2, -1, -1)]
    lead = (0xFF00 >> length) & 0xFF | n >> (6 * (length - 1))
    return bytes([lead, *out])


def _header_length(frame: bytes) -> int:
    """Bytes of a frame's header before its CRC-8 (libFLAC's frames: the number is UTF-8)."""
    lead = frame[4]
    k = 4 + (1 if lead < 0x80 else 8 - (~lead & 0xFF).bit_length())
    block_code, rate_code = frame[2] >> 4, frame[2] & 0xF
    k += {6: 1, 7: 2}.get(block_code, 0) + {12: 1, 13: 2, 14: 2}.get(rate_code, 0)
    return k


@functools.cache
def _libflac() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("FLAC")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    lib.FLAC__stream_encoder_new.restype = ctypes.c_void_p
    for fn in ("channels", "bits_per_sample", "sample_rate", "compression_level", "do_md5", "blocksize"):
        f = getattr(lib, f"FLAC__stream_encoder_set_{fn}")
        f.argtypes, f.restype = [ctypes.c_void_p, ctypes.c_uint], ctypes.c_int
    pointer = ctypes.c_void_p
    lib.FLAC__stream_encoder_init_stream.argtypes = [pointer, _WRITE, pointer, pointer, pointer, pointer]
    lib.FLAC__stream_encoder_init_stream.restype = ctypes.c_int
    lib.FLAC__stream_encoder_process_interleaved.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
    lib.FLAC__stream_encoder_process_interleaved.restype = ctypes.c_int
    lib.FLAC__stream_encoder_finish.argtypes = [ctypes.c_void_p]
    lib.FLAC__stream_encoder_delete.argtypes = [ctypes.c_void_p]
    return lib


_WRITE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_ubyte), ctypes.c_size_t,
                          ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p)  # fmt: skip


def available() -> bool:
    """Whether the system's libFLAC can be loaded (else stems go through libsndfile)."""
    return _libflac() is not None


@functools.lru_cache(maxsize=1 << 12)
def _silent_frame(channels: int, bits: int, number: int, frames: int = BLOCK) -> bytes:
    """Frame `number` of silence (CONSTANT subframes of 0); cached, as every stem of a render
    writes the same silent frames at about the same time."""
    code = _BLOCK_CODE if frames == BLOCK else 7
    head = bytes([0xFF, 0xF8, code << 4, (channels - 1) << 4 | _SIZE_CODE[bits] << 1])
    head += _utf8(number) + (struct.pack(">H", frames - 1) if code == 7 else b"")
    head += bytes([crc8(head)])
    zeros = (1 + bits // 8) * channels
    crc = _mulmod(crc16(head), _x_to_8n(zeros))  # NB: zero bytes only push the register on
    return head + bytes(zeros) + crc.to_bytes(2, "big")


class SparseFlacWriter:
    """FLAC to `target` (a seekable binary file) with silent blocks as CONSTANT frames."""

    def __init__(self, target: IO[bytes], channels: int, sample_rate_hz: int, sample_format: str,
                 where: str) -> None:  # fmt: skip
        lib = _libflac()
        if lib is None:
            raise ExportError(f"{where}: the system's libFLAC is not installed")
        if sample_format not in ("s16", "s24"):
            raise ExportError(f"{where}: FLAC holds 16- or 24-bit samples, not {sample_format}")
        self._lib, self._f, self.where = lib, target, where
        self.channels, self.rate = channels, sample_rate_hz
        self.bits = 16 if sample_format == "s16" else 24
        self._carry = np.zeros((0, channels), np.int32)
        self._frames = 0
        self._samples = 0
        self._queue: deque[bytes | int] = deque()
        """Frames in file order: bytes ready to write, or the number of one libFLAC still holds."""
        self.encoded = 0
        """Frames libFLAC encoded (the others were silent)."""
        self._error: BaseException | None = None
        self._callback = _WRITE(self._on_frame)  # NB: kept, or ctypes frees it under libFLAC
        self._enc = lib.FLAC__stream_encoder_new()
        settings = (("channels", channels), ("bits_per_sample", self.bits), ("sample_rate", sample_rate_hz),
                    ("compression_level", _LEVEL), ("do_md5", 0), ("blocksize", BLOCK))  # fmt: skip
        for fn, value in settings:
            getattr(lib, f"FLAC__stream_encoder_set_{fn}")(self._enc, value)
        if lib.FLAC__stream_encoder_init_stream(self._enc, self._callback, None, None, None, None) != 0:
            lib.FLAC__stream_encoder_delete(self._enc)
            raise ExportError(f"{where}: libFLAC would not start ({channels} channels, {sample_rate_hz} Hz)")
        self._write(b"fLaC" + bytes([0x80, 0, 0, 34]) + bytes(34))  # STREAMINFO, filled in at the end

    def _write(self, data: bytes) -> None:
        try:
            self._f.write(data)
        except OSError as exc:
            raise describe(exc, self.where) from exc

    def _on_frame(self, _enc: int, buf: ctypes._Pointer, n: int, samples: int, _frame: int,  # type: ignore[type-arg]
                  _data: int) -> int:  # fmt: skip
        if samples == 0:
            return 0  # libFLAC's own stream header and metadata: this writer writes its own
        try:
            data = ctypes.string_at(buf, n)
            k = next(i for i, q in enumerate(self._queue) if isinstance(q, int))
            number = self._queue[k]
            assert isinstance(number, int)
            self._queue[k] = self._renumber(data, number)
            self.encoded += 1
            self._drain()
        except BaseException as exc:  # reported by the next write, close or abort
            self._error = self._error or exc
            return 1  # FLAC__STREAM_ENCODER_WRITE_STATUS_FATAL_ERROR
        return 0

    def _renumber(self, frame: bytes, number: int) -> bytes:
        hl = _header_length(frame)
        old_head = frame[: hl + 1]
        head = frame[:4] + _utf8(number) + frame[4 + len(_utf8_span(frame)) : hl]
        new_head = head + bytes([crc8(head)])
        body = frame[hl + 1 : -2]
        crc = _mend_crc16(int.from_bytes(frame[-2:], "big"), old_head, new_head, len(body))
        return new_head + body + crc.to_bytes(2, "big")

    def _drain(self) -> None:
        while self._queue and isinstance(self._queue[0], bytes):
            self._write(self._queue.popleft())  # type: ignore[arg-type]

    def _silence(self, n: int) -> None:
        """`n` frames of silence, whole blocks in one go."""
        if len(self._carry):
            fill = min(n, BLOCK - len(self._carry))
            self._carry = np.concatenate([self._carry, np.zeros((fill, self.channels), np.int32)])
            n -= fill
            if len(self._carry) < BLOCK:
                return
            self._block(self._carry)
            self._carry = self._carry[:0]
        whole = n // BLOCK
        data = b"".join(_silent_frame(self.channels, self.bits, self._frames + k) for k in range(whole))
        self._frames += whole
        self._samples += whole * BLOCK
        if self._queue:
            self._queue.append(data)
        else:
            self._write(data)
        self._carry = np.zeros((n - whole * BLOCK, self.channels), np.int32)

    def _block(self, ints: NDArray[np.int32]) -> None:
        """One frame's samples (BLOCK of them, or fewer at the end)."""
        if ints.any():
            self._queue.append(self._frames)
            data = np.ascontiguousarray(ints)
            if not self._lib.FLAC__stream_encoder_process_interleaved(self._enc, data.ctypes.data, len(data)):
                raise self._error or ExportError(f"{self.where}: libFLAC failed to encode")
        elif self._queue:
            self._queue.append(_silent_frame(self.channels, self.bits, self._frames, len(ints)))
        else:
            self._write(_silent_frame(self.channels, self.bits, self._frames, len(ints)))
        self._frames += 1
        self._samples += len(ints)

    def write(self, block: NDArray[np.float32]) -> None:
        if self._error is not None:
            raise self._error
        if not block.any():
            self._silence(len(block))
            return
        ints = to_int(block, 16).astype(np.int32) if self.bits == 16 else to_int(block, 24) >> 8
        if len(self._carry):
            ints = np.concatenate([self._carry, ints])
        whole = len(ints) // BLOCK * BLOCK
        for k in range(0, whole, BLOCK):
            self._block(ints[k : k + BLOCK])
        self._carry = ints[whole:]

    def close(self) -> None:
        if len(self._carry):
            self._block(self._carry)
            self._carry = self._carry[:0]
        self._lib.FLAC__stream_encoder_finish(self._enc)
        self._lib.FLAC__stream_encoder_delete(self._enc)
        self._enc = None
        if self._error is not None:
            raise self._error
        if self._queue:
            raise ExportError(f"{self.where}: libFLAC did not return every frame")
        info = struct.pack(">HH", BLOCK, BLOCK) + bytes(6)  # frame sizes: unknown
        packed = self.rate << 44 | (self.channels - 1) << 41 | (self.bits - 1) << 36 | self._samples
        info += packed.to_bytes(8, "big") + bytes(16)  # no MD5 signature
        try:
            self._f.seek(8)
            self._f.write(info)
            self._f.flush()
        except OSError as exc:
            raise describe(exc, self.where) from exc

    def abort(self) -> None:
        if self._enc is not None:
            self._lib.FLAC__stream_encoder_delete(self._enc)
            self._enc = None


def _utf8_span(frame: bytes) -> bytes:
    """The coded frame number at the start of a frame's header."""
    lead = frame[4]
    n = 1 if lead < 0x80 else 8 - (~lead & 0xFF).bit_length()
    return frame[4 : 4 + n]
