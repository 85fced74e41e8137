"""What a delivered file measures once encoded: decoded as a player decodes it, then its
integrated loudness (BS.1770), loudness range (EBU Tech 3342), true peak (4x oversampled),
RMS, noise floor and room tone at head and tail, for the whole file and each chapter, and
the ACX checks. A lossy encoder moves peaks (AAC at 128 kb/s put a -3.1 dBTP premaster at
-2.6 dBTP), so a render measures the encoded file, not what it fed the encoder."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import soundfile as sf
from numpy.typing import NDArray

from engine.export.formats import AudioFormat, ExportError, ffmpeg_path
from engine.export.loudness import LoudnessMeter, LoudnessTarget, true_peak_envelope
from engine.export.tags import Chapter

BLOCK_FRAMES = 1 << 16
SILENCE_DB = -60.0
"""Room tone is what lies below this (ACX's noise-floor limit): the head and tail runs,
measured as the RMS of each `TONE_WINDOW_S` (a room's noise has sample peaks above its RMS)."""
TONE_WINDOW_S = 0.01
NOISE_WINDOW_S = 0.5
"""The noise floor is the quietest window of this length (as ACX's own check measures it)."""

ACX_NOISE_DB = -60.0
ROOM_TONE_MIN_DB = -90.0
"""Quieter than this, the gaps are heard as dead air (digital silence, or close to it): ACX's
reviewers ask for room tone between the words, not a noise gate's nothing."""
ACX_HEAD_S = (0.5, 1.0)
ACX_TAIL_S = (1.0, 5.0)


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    measured: str
    wanted: str


@dataclass(frozen=True)
class Part:
    """One chapter's figures."""

    title: str
    start_s: float
    end_s: float
    integrated_lufs: float
    true_peak_db: float


@dataclass
class Compliance:
    """What the encoded file measures (dB figures; -inf for digital silence)."""

    path: str
    target: str
    integrated_lufs: float
    loudness_range_lu: float
    true_peak_db: float
    rms_db: float
    noise_floor_db: float
    head_room_tone_s: float
    tail_room_tone_s: float
    duration_s: float
    chapters: list[Part] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    encodes: int = 1
    """How often the mix was encoded: more than once when the first file's true peak was over."""

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def to_json(self) -> str:
        def clean(v: object) -> object:
            if isinstance(v, float):
                return None if not math.isfinite(v) else round(v, 2)
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(x) for x in v]
            return v

        data = clean(asdict(self))
        assert isinstance(data, dict)
        data["passed"] = self.passed
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def decoded(path: Path, fmt: AudioFormat, channels: int, rate_hz: int) -> Iterator[NDArray[np.float32]]:
    """The file's audio as a player decodes it, in blocks of (frames, channels) float32:
    libsndfile for what it reads (WAV, FLAC, MP3, Opus), ffmpeg for MP4/AAC."""
    if fmt.encoder != "ffmpeg":
        with sf.SoundFile(str(path)) as f:
            while True:
                block = f.read(BLOCK_FRAMES, dtype="float32", always_2d=True)
                if not len(block):
                    return
                yield block
    exe = ffmpeg_path()
    if exe is None:
        raise ExportError(f"{path}: measuring it needs ffmpeg")
    cmd = [exe, "-hide_banner", "-loglevel", "error", "-nostdin", "-i", str(path), "-f", "f32le",
           "-ac", str(channels), "-ar", str(rate_hz), "-"]  # fmt: skip
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        step = BLOCK_FRAMES * channels * 4
        while chunk := proc.stdout.read(step):
            usable = len(chunk) - len(chunk) % (channels * 4)
            yield np.frombuffer(chunk[:usable], np.float32).reshape(-1, channels)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise ExportError(f"{path}: ffmpeg could not decode it to measure it ({err.strip()[-200:]})")


def _db(x: float) -> float:
    return 20 * math.log10(x) if x > 0 else -math.inf


def _lra(short_term: NDArray[np.float64]) -> float:
    """EBU Tech 3342: short-term loudness gated at -70 LUFS and 20 LU under their mean,
    the spread from the 10th to the 95th percentile."""
    with np.errstate(divide="ignore"):
        loud = -0.691 + 10 * np.log10(short_term)
    kept = short_term[loud > -70]
    if len(kept) < 2:
        return 0.0
    relative = -0.691 + 10 * math.log10(float(kept.mean())) - 20
    gated = loud[(loud > -70) & (loud > relative)]
    if len(gated) < 2:
        return 0.0
    return float(np.percentile(gated, 95) - np.percentile(gated, 10))


def measure(path: Path, fmt: AudioFormat, channels: int, rate_hz: int, target: LoudnessTarget,
            chapters: Sequence[Chapter] = ()) -> Compliance:  # fmt: skip
    """Decode `path` and measure it against `target` (the ACX checks for the acx preset);
    one pass, memory flat (a few numbers per 100 ms)."""
    meter = LoudnessMeter(rate_hz, channels)
    hop = round(0.1 * rate_hz)
    window = round(NOISE_WINDOW_S * rate_hz)  # NB: a whole number of hops at every render rate
    hop_peaks: list[NDArray[np.float64]] = []  # the true peak of each 100 ms
    windows: list[NDArray[np.float64]] = []  # each 0.5 s window's mean square
    total_sq, frames = 0.0, 0
    first_loud = last_loud = -1
    silence = 10 ** (SILENCE_DB / 20)
    carry = np.zeros((0, channels), np.float32)

    def take(x: NDArray[np.float32]) -> None:
        env = true_peak_envelope(x, 0.25)
        n_hops = -(-len(x) // hop)
        padded = np.zeros(n_hops * hop)
        padded[: len(env)] = env
        hop_peaks.append(padded.reshape(n_hops, hop).max(axis=1))

    tone = round(TONE_WINDOW_S * rate_hz)

    def loud_runs(sq: NDArray[np.float64], at: int) -> None:
        """The first and last `tone` window (from frame `at`) whose RMS passes the silence."""
        nonlocal first_loud, last_loud
        starts = np.arange(0, len(sq), tone)
        lengths = np.diff(np.append(starts, len(sq)))  # a last short window: its own length
        means = np.add.reduceat(sq, starts) / lengths
        loud = np.flatnonzero(means > silence**2)
        if len(loud):
            if first_loud < 0:
                first_loud = at + int(loud[0]) * tone
            last_loud = min(at + len(sq), at + (int(loud[-1]) + 1) * tone) - 1

    for block in decoded(path, fmt, channels, rate_hz):
        meter.add(block)
        joined = np.concatenate([carry, block]) if len(carry) else block
        whole = (len(joined) // window) * window
        if whole:
            part = joined[:whole]
            sq = (part.astype(np.float64) ** 2).mean(axis=1)
            total_sq += float(sq.sum())
            windows.append(sq.reshape(-1, window).mean(axis=1))
            loud_runs(sq, frames)
            take(part)
            frames += whole
        carry = joined[whole:]
    if len(carry):
        sq = (carry.astype(np.float64) ** 2).mean(axis=1)
        total_sq += float(sq.sum())
        loud_runs(sq, frames)
        take(carry)
        frames += len(carry)
    peaks = np.concatenate(hop_peaks) if hop_peaks else np.zeros(0)
    quiet = float(np.concatenate(windows).min()) if windows else 0.0
    duration = frames / rate_hz
    hops = meter.hop_energies().sum(axis=1)
    short = np.convolve(hops, np.ones(30), mode="valid") / (3.0 * rate_hz) if len(hops) >= 30 else hops[:0]
    result = Compliance(
        str(path), target.name or f"{target.lufs:g} LUFS", meter.integrated_lufs(), _lra(short),
        _db(float(peaks.max(initial=0.0))), _db(math.sqrt(total_sq / frames)) if frames else -math.inf,
        10 * math.log10(quiet) if quiet > 0 else -math.inf,
        first_loud / rate_hz if first_loud >= 0 else duration,
        (frames - 1 - last_loud) / rate_hz if last_loud >= 0 else duration, duration,
    )  # fmt: skip
    for k, ch in enumerate(chapters):
        end = chapters[k + 1].start_s if k + 1 < len(chapters) else duration
        a = int(ch.start_s * 10)
        b = max(a + 1, math.ceil(end * 10))
        result.chapters.append(Part(ch.title, ch.start_s, end, meter.integrated_lufs(a, b),
                                    _db(float(peaks[a:b].max(initial=0.0)))))  # fmt: skip
    result.checks = checks(result, target)
    return result


def checks(m: Compliance, target: LoudnessTarget) -> list[Check]:
    """The target's limits; with an RMS range (ACX), ACX's whole list in place of loudness."""
    out = [Check("true peak", m.true_peak_db <= target.true_peak_db, f"{m.true_peak_db:.1f} dBTP",
                 f"<= {target.true_peak_db:g} dBTP")]  # fmt: skip
    if target.rms_db is None:
        return [Check("integrated loudness", abs(m.integrated_lufs - target.lufs) <= 1.0,
                      f"{m.integrated_lufs:.1f} LUFS", f"{target.lufs:g} ±1 LUFS"), *out]  # fmt: skip
    lo, hi = target.rms_db
    floor = "digital silence" if m.noise_floor_db == -math.inf else f"{m.noise_floor_db:.1f} dB"
    return [
        Check("RMS", lo <= m.rms_db <= hi, f"{m.rms_db:.1f} dB", f"{lo:g} to {hi:g} dB"), *out,
        Check("noise floor", m.noise_floor_db <= ACX_NOISE_DB, floor, f"<= {ACX_NOISE_DB:g} dB"),
        Check("room tone, not digital silence", m.noise_floor_db > ROOM_TONE_MIN_DB, floor,
              f"> {ROOM_TONE_MIN_DB:g} dB"),
        Check("room tone at the head", ACX_HEAD_S[0] <= m.head_room_tone_s <= ACX_HEAD_S[1] + 0.05,
              f"{m.head_room_tone_s:.2f} s", f"{ACX_HEAD_S[0]:g} to {ACX_HEAD_S[1]:g} s"),
        Check("room tone at the tail", ACX_TAIL_S[0] <= m.tail_room_tone_s <= ACX_TAIL_S[1],
              f"{m.tail_room_tone_s:.2f} s", f"{ACX_TAIL_S[0]:g} to {ACX_TAIL_S[1]:g} s"),
    ]  # fmt: skip
