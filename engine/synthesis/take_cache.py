"""A persistent cache of voiced takes, so reopening a show, playing it again or rendering it
again voices only what changed.

A take is found by the hash of everything that decides its sound: the backend and its model
version, the voice settings that reach the model (voice id, rate, pitch, timbre; not gain,
pan or mute, which the mixer applies), the sample rate, the pronunciation lexicon in force
and the text. Any change is a miss. Entries are files (`ab/abcdef….npz`: the audio and its
word times), written to a temporary name and renamed, so a reader never sees half a take and
two processes can share one folder; a hit touches its file, and once the folder passes its
size cap the least recently used files go until it is under 90% of it. A file that vanishes
or does not read is a miss, never an error.

`CachedSynthesizer` puts the cache in front of any backend (Kokoro, Piper): a batch's hits
come from disk, its misses are voiced together in one call and stored."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.synthesis.base import Mono, Synthesizer, SynthRequest, Take, synthesize_takes
from engine.synthesis.effects import SHIFT_METHOD

log = logging.getLogger("troupe.takes")
DEFAULT_CAP_BYTES = 2 * 1024**3
"""2 GiB: about 3 hours of takes at 48 kHz float32 (`TROUPE_TAKE_CACHE_MB` changes it)."""
CACHE_ENV = "TROUPE_TAKE_CACHE"
"""A folder for the cache, or `off`."""
CAP_ENV = "TROUPE_TAKE_CACHE_MB"
FORMAT = 1


def default_folder() -> Path | None:
    """$TROUPE_TAKE_CACHE, else $XDG_CACHE_HOME/troupe/takes (~/.cache/troupe/takes); None
    when set to `off`."""
    value = os.environ.get(CACHE_ENV, "")
    if value.lower() == "off":
        return None
    if value:
        return Path(value)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "troupe" / "takes"


class TakeCache:
    def __init__(self, folder: Path, cap_bytes: int = DEFAULT_CAP_BYTES) -> None:
        self.folder = folder
        self.cap_bytes = cap_bytes
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        folder.mkdir(parents=True, exist_ok=True)
        self._size: int | None = None
        """Bytes in the folder as this process knows it; read at the first store (not at
        start-up: a full cache is thousands of files)."""

    def _entries(self) -> list[tuple[float, int, Path]]:
        """(last used, bytes, path) of every take in the folder (one vanishing meanwhile is skipped)."""
        entries = []
        for path in self.folder.glob("*/*.npz"):
            try:
                st = path.stat()
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, path))
        return entries

    @staticmethod
    def key(model: str, request: SynthRequest, sample_rate_hz: int, lexicon: str) -> str:
        v = request.voice
        fields = [FORMAT, model, v.backend, v.voice_id, v.rate_wpm, v.pitch, v.pitch_range, SHIFT_METHOD,
                  sample_rate_hz, lexicon, request.text]  # fmt: skip
        return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.npz"

    def has(self, key: str) -> bool:
        return self._path(key).is_file()

    def get(self, key: str) -> Take | None:
        path = self._path(key)
        try:
            with np.load(path, allow_pickle=False) as z:
                audio = np.asarray(z["audio"], np.float32)
                words = json.loads(str(z["words"])) if "words" in z.files else None
            os.utime(path)  # recently used
        except (OSError, ValueError, KeyError, EOFError):
            with self._lock:
                self.misses += 1
            return None
        with self._lock:
            self.hits += 1
        return Take(
            audio, tuple((str(w), float(a), float(b)) for w, a, b in words) if words is not None else None
        )

    def put(self, key: str, take: Take) -> None:
        path = self._path(key)
        buf = io.BytesIO()
        extra: dict[str, Any] = {} if take.words is None else {"words": np.array(json.dumps(take.words))}
        np.savez(buf, audio=np.asarray(take.audio, np.float32), **extra)
        data = buf.getvalue()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError as exc:  # a full disk or a read-only folder: the show goes on uncached
            log.warning("take cache: not stored (%s)", exc)
            return
        first = self._size is None  # the first store: the folder is read once (this take in it)
        scanned = sum(s for _t, s, _p in self._entries()) if first else 0
        with self._lock:
            if self._size is None:
                self._size = scanned
            elif not first:
                self._size += len(data)
            # NB: another thread's first store counted this take in its read, or not: the
            # figure is an estimate that `evict` corrects from the folder itself
            over = self._size > self.cap_bytes
        if over:
            self.evict()

    def evict(self) -> int:
        """Remove the least recently used takes until under 90% of the cap; the count removed."""
        entries = sorted(self._entries())
        total = sum(size for _t, size, _p in entries)
        removed = 0
        for _t, size, path in entries:
            if total <= 0.9 * self.cap_bytes:
                break
            try:
                path.unlink()
            except OSError:
                continue  # another process took it first
            total -= size
            removed += 1
        with self._lock:
            self._size = total
        return removed


def model_version(synth: Synthesizer) -> str:
    """What identifies the model behind `synth`: its own `model_version` where it has one,
    else its class and name."""
    version = getattr(synth, "model_version", None)
    if callable(version):
        return str(version())
    return f"{type(synth).__name__}:{synth.name}"


class CachedSynthesizer:
    """`inner` with a take cache in front (see the module's docstring)."""

    def __init__(self, inner: Synthesizer, cache: TakeCache) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.max_batch = inner.max_batch
        self.sample_rate_hz = inner.sample_rate_hz
        self._model = model_version(inner)

    def __getattr__(self, attr: str) -> Any:
        if attr == "inner":  # not set yet (a copy being made): no recursion
            raise AttributeError(attr)
        return getattr(self.inner, attr)  # load, expected_rtf, provider, …

    def voices(self) -> list[Any]:
        return self.inner.voices()

    def _key(self, request: SynthRequest) -> str:
        from engine.synthesis.lexicon import fingerprint

        return TakeCache.key(self._model, request, self.sample_rate_hz, fingerprint())

    def cached(self, request: SynthRequest, streamed: bool = True) -> bool:
        """Whether `request`'s take is in the cache (a file test: the scheduler asks it to
        know a line costs no model time); with `streamed`, a take kept from a stream (what
        `stream` gives, not `synthesize`) counts too."""
        key = self._key(request)
        return self.cache.has(key) or (streamed and self.cache.has(key + "s"))

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        return [t.audio for t in self.synthesize_takes(batch)]

    def synthesize_takes(self, batch: Sequence[SynthRequest]) -> list[Take]:
        keys = [self._key(r) for r in batch]
        found: list[Take | None] = [self.cache.get(k) for k in keys]
        missing = [k for k, t in enumerate(found) if t is None]
        if missing:
            voiced = synthesize_takes(self.inner, [batch[k] for k in missing])
            for k, take in zip(missing, voiced, strict=True):
                found[k] = take
                self.cache.put(keys[k], take)
        return [t for t in found if t is not None]

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        """The whole take at once where cached (voiced whole or streamed), else the backend's
        stream, stored apart once complete (a streamed take has no word times)."""
        key = self._key(request)
        hit = self.cache.get(key) or self.cache.get(key + "s")
        if hit is not None:
            yield hit.audio
            return
        parts: list[Mono] = []
        for chunk in self.inner.stream(request):
            parts.append(chunk)
            yield chunk
        if parts:  # the whole line was voiced (a stream given up part-way stores nothing)
            self.cache.put(key + "s", Take(np.concatenate(parts).astype(np.float32)))

    def close(self) -> None:
        self.inner.close()


def with_cache(synth: Synthesizer, folder: Path | None = None) -> Synthesizer:
    """`synth` behind the take cache in `folder` (default: `default_folder()`), or `synth`
    itself where the cache is off or its folder cannot be made."""
    folder = folder or default_folder()
    if folder is None:
        return synth
    try:
        cap = int(float(os.environ.get(CAP_ENV, "0")) * 1024**2) or DEFAULT_CAP_BYTES
        return CachedSynthesizer(synth, TakeCache(folder, cap))
    except (OSError, ValueError) as exc:
        log.warning("take cache: off (%s)", exc)
        return synth
