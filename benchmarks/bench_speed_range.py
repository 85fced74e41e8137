"""OpenAI's whole speed range (0.25-4.0) on each backend, by length and by ear.

For each voice (Kokoro's `ada`, Piper's joe, espeak-ng's en-us) and speed, four lines are
voiced through the speech service's own path (`SpeechService.submit`: the voice's rate as
far as `RATE_REACH` carries it, a Rubber Band time-stretch beyond) and, side by side, the
way the server did it before (`rate first`: the rate as far as the rate limits allow, the
stretch only past them). Reported: the spoken length against 1/speed of speed 1's (target
0.8-1.25) and whisper tiny.en's word error rate (median of the four lines; target at most
0.35 from 0.25x to 2x: a listener follows; 4x is reported, no target: tiny.en loses words
of any voice at four times the speed).

    python benchmarks/bench_speed_range.py          # needs the asr extra
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from _common import save, table

from engine.asr import normalise, shared_transcriber, wer
from engine.core.limits import limit
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.scheduler import RequestClass
from engine.server import SpeechService, SpeechSettings
from engine.server import speech as sp

LINES = (
    "The harbour lights burned low over the quiet water tonight.",
    "Bring the lantern down to the boat before the tide turns.",
    "Nobody in the village remembers who built the old tower.",
    "Keep your voice down, the guards are changing at midnight.",
)
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)
VOICES = ("kokoro:ada", "piper:en_US-joe-medium", "en-us")
TARGET_LENGTH = (0.8, 1.25)
TARGET_WER = 0.35


def _rate_first(voice: Voice, speed: float) -> tuple[Voice, float]:
    """Before: the voice's rate as far as the rate limits allow, then a stretch."""
    if speed == 1.0:
        return voice, 1.0
    lo, hi = limit("rate_wpm")
    rate = int(min(max(round(voice.rate_wpm * speed), lo), hi))
    return replace(voice, rate_wpm=rate), speed * voice.rate_wpm / rate


def _spoken_s(audio: np.ndarray) -> float:
    loud = np.flatnonzero(np.abs(audio) > 0.01)
    return float(loud[-1] - loud[0]) / SAMPLE_RATE_HZ if loud.size else 0.0


def _voice(service: SpeechService, name: str, speed: float, text: str) -> np.ndarray:
    role, voice = service.resolve_voice(name)
    futures = service.submit(role, text, speed, RequestClass.SCRIPTED, voice)
    parts = [f.result(timeout=300) for f in futures]
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def run(service: SpeechService, way: str, split: Callable[[Voice, float], tuple[Voice, float]]) -> list[dict]:
    sp.speed_parts = split  # the service resolves speed through this one function
    rows = []
    heard = shared_transcriber()
    for name in VOICES:
        base = [_spoken_s(_voice(service, name, 1.0, t)) for t in LINES]
        for speed in SPEEDS:
            lengths, errors = [], []
            for k, text in enumerate(LINES):
                audio = _voice(service, name, speed, text)
                lengths.append(_spoken_s(audio) * speed / base[k])
                errors.append(wer(normalise(text), normalise(heard.transcribe(audio, SAMPLE_RATE_HZ).text)))
            length, err = statistics.median(lengths), statistics.median(errors)
            ok_len = TARGET_LENGTH[0] <= length <= TARGET_LENGTH[1]
            ok_wer = err <= TARGET_WER or speed > 2.0
            target_wer = TARGET_WER if speed <= 2.0 else "-"
            rows.append({"way": way, "voice": name, "speed": speed, "length_ratio": round(length, 3),
                         "target_length": "0.8-1.25", "wer": round(err, 3), "target_wer": target_wer,
                         "ok": ok_len and ok_wer})  # fmt: skip
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    service = SpeechService(SpeechSettings(budget_s=60, give_up_s=600))  # no refusals: a quality test
    own = sp.speed_parts
    try:
        rows = run(service, "rate reach + stretch", own) + run(service, "rate first", _rate_first)
    finally:
        sp.speed_parts = own
        service.close()
    cols = ["way", "voice", "speed", "length_ratio", "target_length", "wer", "target_wer", "ok"]
    print(table(rows, cols))
    print(f"wrote {save('bench_speed_range', {'lines': list(LINES), 'rows': rows})}")


if __name__ == "__main__":
    main()
