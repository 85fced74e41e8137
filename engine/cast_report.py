"""What auto-casting decided and why, for a director to check before anything is voiced:
each role's lines, voice and gender guess with its evidence (`troupe cast SCRIPT [--json]`,
the cast view's tooltips)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.cast import Cast, speaking_order
from engine.core.types import Script
from engine.gender import guess_all_with_evidence
from engine.synthesis.base import VoiceInfo


def cast_report(script: Script, cast: Cast, natural: Sequence[VoiceInfo] = ()) -> list[dict[str, Any]]:
    """One entry a role, the most-spoken first: name, lines, words, voice (`backend:id`),
    the voice's own gender where known, pitch, the gender guessed and its evidence."""
    guesses = guess_all_with_evidence(script)
    genders = {(v.backend, v.voice_id): v.gender for v in natural}
    out = []
    for name in speaking_order(script):
        cues = script.cues_for(name)
        voice = cast[name]
        guess = guesses[name]
        out.append({
            "role": name,
            "lines": len(cues),
            "words": sum(len(c.text.split()) for c in cues),
            "voice": f"{voice.backend}:{voice.voice_id}",
            "voice_gender": genders.get((voice.backend, voice.voice_id), ""),
            "pitch": voice.pitch,
            "gender": guess.label,
            "evidence": list(guess.evidence),
        })  # fmt: skip
    return out


def format_report(rows: Sequence[dict[str, Any]]) -> str:
    """The report as a table for a terminal."""
    lines = [f"{'role':<24} {'lines':>5}  {'voice':<28} {'gender':<8} evidence"]
    for r in rows:
        voice = r["voice"] + (f" @{r['pitch']}" if r["pitch"] != 50 else "")
        lines.append(f"{r['role'][:24]:<24} {r['lines']:>5}  {voice[:28]:<28} {r['gender']:<8} "
                     f"{'; '.join(r['evidence'])}")  # fmt: skip
    return "\n".join(lines)
