"""Several voice backends behind one `Synthesizer`, for the offline render: each line goes to
the backend its role is cast to, and a line that backend cannot voice (it failed, or it is
not installed here) is voiced by an espeak-ng stand-in, as in a live show."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping, Sequence

from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ
from engine.synthesis.base import (
    Mono,
    Synthesizer,
    SynthRequest,
    Take,
    VoiceInfo,
    at_rate,
    by_backend,
    synthesize_takes,
)
from engine.synthesis.espeak import stand_in

log = logging.getLogger("troupe.render")


class Router:
    """A `Synthesizer` over `synths` by backend name; `fallback` (espeak-ng) stands in. Lines
    come out at `sample_rate_hz`: a backend at another rate is resampled."""

    name = "router"

    def __init__(self, synths: Mapping[str, Synthesizer], fallback: str = "espeak",
                 sample_rate_hz: int = SAMPLE_RATE_HZ) -> None:  # fmt: skip
        if fallback not in synths:
            raise ValueError(f"the fallback backend {fallback!r} is not among {sorted(synths)}")
        self.synths = dict(synths)
        self.fallback = fallback
        self.sample_rate_hz = sample_rate_hz
        self.max_batch = max(s.max_batch for s in self.synths.values())
        self.fallbacks: dict[int, str] = {}
        """request_id -> why the stand-in voiced it."""

    def voices(self) -> list[VoiceInfo]:
        return [v for s in self.synths.values() for v in s.voices()]

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        """Each backend's share in one call (so a batching backend batches), in order."""
        return [take.audio for take in self.synthesize_takes(batch)]

    def synthesize_takes(self, batch: Sequence[SynthRequest]) -> list[Take]:
        """`synthesize`, with each line's predicted word times where its backend has them."""
        return by_backend(batch, self._voice)

    def _voice(self, backend: str, share: list[SynthRequest]) -> list[Take]:
        synth = self.synths.get(backend)
        try:
            if synth is None:
                raise SynthesisError(f"no {backend} voices here (is its extra installed?)")
            return self._at_rate(synth, synthesize_takes(synth, share))
        except Exception as exc:  # any backend failure: its lines go to the stand-in, the render goes on
            if backend == self.fallback:
                raise
            if synth is not None and len(share) > 1:  # NB: one bad line fails its batch: each alone
                return self._one_by_one(backend, synth, share)
            return self._stand_in(backend, share, exc)

    def _one_by_one(self, backend: str, synth: Synthesizer, share: list[SynthRequest]) -> list[Take]:
        """A failed share's lines each alone, only those that fail stood in; two failing in a
        row is the backend failing, not its lines: the rest are stood in at once."""
        out: list[Take] = []
        failed = 0
        for k, r in enumerate(share):
            try:
                out += self._at_rate(synth, synthesize_takes(synth, [r]))
                failed = 0
            except Exception as exc:
                failed += 1
                if failed == 2:
                    return out + self._stand_in(backend, share[k:], exc)
                out += self._stand_in(backend, [r], exc)
        return out

    def _stand_in(self, backend: str, share: list[SynthRequest], exc: BaseException) -> list[Take]:
        log.warning("render: %d %s line(s) voiced by espeak-ng instead: %s", len(share), backend, exc)
        for r in share:
            self.fallbacks[r.request_id] = f"{backend}: {exc}"
        stand_ins = [dataclasses.replace(r, voice=stand_in(r.voice)) for r in share]
        fallback = self.synths[self.fallback]
        return self._at_rate(fallback, [Take(a) for a in fallback.synthesize(stand_ins)])

    def _at_rate(self, synth: Synthesizer, takes: list[Take]) -> list[Take]:
        if synth.sample_rate_hz == self.sample_rate_hz:
            return takes
        # NB: word times are seconds, which resampling keeps
        return [Take(at_rate(t.audio, synth.sample_rate_hz, self.sample_rate_hz), t.words) for t in takes]

    def stream(self, request: SynthRequest) -> Iterator[Mono]:
        yield from self.synthesize([request])

    def close(self) -> None:
        for s in self.synths.values():
            s.close()
