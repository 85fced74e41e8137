"""espeak-ng on threads: private library instances run side by side, lines come back in order."""

from __future__ import annotations

import threading

import numpy as np

from engine.core.types import Voice
from engine.synthesis.base import SynthRequest
from engine.synthesis.espeak_lib import EspeakLib
from engine.synthesis.espeak_threads import EspeakThreads

LINES = [
    "The lighthouse keeper climbs the stairs.",
    "Hello.",
    "Is anyone listening to this frequency tonight, or am I talking to the fog?",
    "Keep the lamp burning.",
]


def test_private_instances_voice_side_by_side_without_sharing_state() -> None:
    """Two fresh instances voicing the same lines at the same time give the same audio: a
    library instance shared between them would crash or mix up its voices and buffers."""
    libs = [EspeakLib.private(), EspeakLib.private()]
    assert libs[0]._lib._handle != libs[1]._lib._handle != EspeakLib.instance()._lib._handle
    out: list[list[np.ndarray]] = [[], []]
    start = threading.Barrier(2)

    def voice(k: int) -> None:
        start.wait()
        for n in range(3):
            for text, voice_id in zip(LINES, ["en-us+m3", "en-gb-x-rp+f2", "en-us", "en+f3"], strict=True):
                out[k].append(libs[k].synthesize(text, voice_id, 160 + 10 * n, 50, 50))

    threads = [threading.Thread(target=voice, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out[0]) == len(out[1]) == 12
    for a, b in zip(*out, strict=True):
        assert a.size > 2000
        np.testing.assert_array_equal(a, b)


def test_threads_return_each_line_in_order() -> None:
    synth = EspeakThreads(2)
    try:
        assert synth.max_batch == 2 and len({id(lib) for lib in synth.libs}) == 2
        requests = [SynthRequest(text, Voice(voice_id="en-us")) for text in LINES * 3]
        got = synth.synthesize(requests)
        alone = synth.synthesize([SynthRequest(text, Voice(voice_id="en-us")) for text in LINES])
    finally:
        synth.close()
    lengths = [len(a) for a in got]
    assert all(a.dtype == np.float32 and a.ndim == 1 for a in got)
    # each line as long as the same line voiced alone (espeak keeps a little state between
    # lines, so the samples may differ slightly, not the length to within 50 ms)
    for k, n in enumerate(lengths):
        assert abs(n - len(alone[k % len(LINES)])) < 2400, (k, n)
    assert lengths[1] < lengths[0] < lengths[2]
