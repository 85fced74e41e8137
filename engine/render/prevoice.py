"""One voice model in memory at a time: a render with two voice models (Kokoro and Piper)
voices each stretch of the script backend by backend into the take cache, every other model
let go before one is used, and the stretch is then mixed from the cache in script order
with no model in memory.

Voicing the lines in script order needs every model of the cast at once: Python and the
engine hold ~100 MB, Kokoro's session ~128 MB, Piper's ~80 MB and ~57 MB more after its
calls, a Kokoro call 2-3 MB a phoneme of its part, and the mix ~130 MB of takes ahead. On a
47-role screenplay with the default cast (`benchmarks/bench_render_natural.py`, 1 hour)
script order peaked at 801 MB; one model at a time, none while the stretch is mixed, at
418 MB (5 hours: 424 MB), and the cold render took 528 s instead of 982 s (one model call
at a time either way, but no longer two voicing threads taking turns at the lock). The passes change
nothing heard: the takes are the ones script order voices, found by the same keys.

Only for a render that owns its models (`main.py render`): the window's live engine shares
its models with its renders and keeps both loaded anyway. Where the cache is off
(`TROUPE_TAKE_CACHE=off`), fewer than two models have lines, or a backend cannot let go of
its model (Kokoro on torch, the cluster), the render voices in script order. What the mix
still voices (a line that failed here, a retake of a line checked by ear) may load a model
beside the other until the next stretch lets it go.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from engine.cast import Cast
from engine.core.memory import release_free_memory
from engine.core.types import Cue
from engine.render.result import RenderCancelled
from engine.synthesis.base import Synthesizer, SynthRequest, synthesize_takes
from engine.synthesis.delivery import delivered_request

log = logging.getLogger("troupe.render")

WINDOW_LINES = 256
"""Lines voiced ahead of the mix in one stretch: each model is loaded at most once a
stretch (Kokoro takes ~2 s to load and warm up; a stretch of a screenplay, ~4 minutes to
voice), and a stretch's takes (~200 MB at 48 kHz) stay in the cache, far below its cap,
until the mix reads them."""

Report = Callable[[int, str], None]
"""Told, after each batch voiced ahead, the lines of the script before the batch's stretch
plus the share of the stretch voiced so far (in lines), and what is being voiced."""


def model_backends(synth: Synthesizer) -> dict[str, Any]:
    """The backends behind `synth` (a render's router) that keep takes and can let go of
    their model: name -> backend."""
    synths = getattr(synth, "synths", None)
    if not isinstance(synths, dict):
        return {}
    return {
        name: s
        for name, s in synths.items()
        if callable(getattr(s, "cached", None)) and callable(getattr(s, "release", None))
    }


class BackendPasses:
    """Voices a stretch of cues backend by backend into the take cache (see the module)."""

    def __init__(self, models: dict[str, Any], cast: Cast, cancel: threading.Event | None = None,
                 report: Report | None = None) -> None:  # fmt: skip
        self.models = models
        self.cast = cast
        self.cancel = cancel
        self.report = report
        self.done_lines = 0
        """Cues of the script before the stretch being voiced."""

    @classmethod
    def for_render(cls, synth: Synthesizer, cues: Sequence[Cue], cast: Cast,
                   cancel: threading.Event | None = None,
                   report: Report | None = None) -> BackendPasses | None:  # fmt: skip
        """The passes for a render of `cues`, or None where script order costs nothing more
        (fewer than two models have lines)."""
        used = {delivered_request(c, cast[c.role]).voice.backend for c in cues}
        models = {name: s for name, s in model_backends(synth).items() if name in used}
        return cls(models, cast, cancel, report) if len(models) > 1 else None

    def stretches(self, cues: Sequence[Cue]) -> Iterator[Sequence[Cue]]:
        """`cues` in stretches of `WINDOW_LINES`, each prepared before it is handed on."""
        for k in range(0, len(cues), WINDOW_LINES):
            stretch = cues[k : k + WINDOW_LINES]
            self.prepare(stretch)
            yield stretch

    def prepare(self, cues: Sequence[Cue]) -> None:
        """Voice `cues`' lines that are not in the cache yet, backend by backend, every
        other model let go before one is used and all of them after (the mix then reads the
        takes with no model in memory). A line that fails here is left to the mix, which
        tries it again and stands in for it."""
        shares: dict[str, dict[tuple[str, Any], SynthRequest]] = {}
        for c in cues:
            request = delivered_request(c, self.cast[c.role])  # NB: as the mix asks: the same cache key
            if request.voice.backend in self.models:
                shares.setdefault(request.voice.backend, {}).setdefault((c.text, request.voice), request)
        todo = {  # NB: a take streamed live is not what a render reads: not counted as voiced
            name: [r for r in share.values() if not self.models[name].cached(r, streamed=False)]
            for name, share in shares.items()
        }
        total = sum(len(rs) for rs in todo.values())
        done = 0
        for name, requests in todo.items():
            if requests:
                self._release_all()
                done = self._voice(name, requests, done, total, len(cues))
        self._release_all()  # NB: the mix holds ~130 MB of takes ahead: no model beside it
        self.done_lines += len(cues)

    def _release_all(self) -> None:
        for synth in self.models.values():
            synth.release()
        release_free_memory()

    def _voice(self, name: str, requests: list[SynthRequest], done: int, total: int, lines: int) -> int:
        synth = self.models[name]
        step = max(1, synth.max_batch) * 8
        for k in range(0, len(requests), step):
            batch = requests[k : k + step]
            self._check_cancel()
            try:
                synthesize_takes(synth, batch)
            except Exception:  # NB: one bad line fails its batch: the others go alone
                for request in batch:
                    self._voice_alone(synth, request)
            done += len(batch)
            if self.report is not None:
                at = self.done_lines + round(lines * done / total)
                self.report(at, f"voicing ahead with {name}: {done} of {total} new lines")
        return done

    def _voice_alone(self, synth: Any, request: SynthRequest) -> None:
        self._check_cancel()
        try:
            synthesize_takes(synth, [request])
        except Exception as exc:  # left to the mix: it tries again and stands in for it
            log.info("render: cue %d left to the mix (%s: %s)", request.request_id, synth.name, exc)

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RenderCancelled("render cancelled")
