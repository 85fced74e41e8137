"""Building the voices: the one place the synthesizers are made, for the live show, the
speech server, the offline render and the cluster's workers alike."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from engine.synthesis.base import Synthesizer

NATURAL = ("kokoro", "piper")
"""The natural-voice backends, in the order they are built."""


@dataclass(frozen=True)
class SynthSpec:
    """Which synthesizers to build, and how."""

    processes: int = 1
    """espeak-ng worker processes (1: espeak-ng in this process)."""
    offline: bool = False
    """An offline render or a cluster worker: espeak-ng's workers run at normal priority (no
    live stream to yield to) and start at once."""
    natural: Collection[str] | None = NATURAL
    """The natural-voice backends to build where installed (None or empty: espeak-ng alone)."""
    cache: bool = True
    """Keep natural voices' takes on disk (a show opened again starts at once)."""
    rate_hz: int | None = None
    """espeak-ng's output rate (None: the engine's)."""


def build_synthesizers(spec: SynthSpec = SynthSpec()) -> dict[str, Synthesizer]:
    """Backend name -> synthesizer: espeak-ng always, and each natural backend `spec` names
    that is installed here (one that is not is left out: its roles get espeak-ng stand-ins)."""
    from engine.synthesis.espeak import EspeakSynthesizer
    from engine.synthesis.pool import EspeakPool

    if spec.processes > 1:
        pool = EspeakPool(spec.processes, niceness=0) if spec.offline else EspeakPool(spec.processes)
        espeak: Synthesizer = pool
    else:
        espeak = EspeakSynthesizer()
    if spec.rate_hz is not None:
        espeak.sample_rate_hz = spec.rate_hz
    if spec.offline and spec.processes > 1:
        from engine.core.types import Voice

        for _ in range(spec.processes):  # the workers start now, while the script is read
            pool.submit("a", Voice())
    return {"espeak": espeak, **build_natural(spec.natural or (), spec.cache)}


def build_natural(names: Collection[str], cache: bool = True) -> dict[str, Synthesizer]:
    """Backend name -> synthesizer for each natural backend in `names` installed here, each
    behind the take cache with `cache`."""
    synths: dict[str, Synthesizer] = {}
    for name in NATURAL:
        if name not in names:
            continue
        synth = _natural(name)
        if synth is not None:
            if cache:
                from engine.synthesis.take_cache import with_cache

                synth = with_cache(synth)
            synths[name] = synth
    return synths


def _natural(name: str) -> Synthesizer | None:
    if name == "kokoro":
        from engine.synthesis.kokoro import make_kokoro

        return make_kokoro()
    from engine.synthesis.piper import make_piper

    return make_piper()
