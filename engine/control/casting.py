"""Casting: which voices there are, and each role's voice and mix settings, live."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import replace
from typing import Any

from engine.audio_io.output import play_once
from engine.cast import validate_voice
from engine.core.errors import SynthesisError, TroupeError
from engine.core.types import Voice
from engine.scheduler import Request, State
from engine.scheduler.backend import neural_voice_ids
from engine.script.common import normalise_role
from engine.service import Engine
from engine.show.adlibs import PREVIEW_ROLE
from engine.synthesis.base import VoiceInfo
from engine.synthesis.espeak import espeak_variants, espeak_voices


class Casting:
    """The voices a role can have, and changing a role's voice live."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def voice_ids(self) -> list[str]:
        """Voices a role can be cast to: each backend's list, as `voice_id` strings."""
        ids = [v.voice_id for v in espeak_voices()]
        english = [v for v in ids if v.startswith("en")]
        variants = [v.voice_id for v in espeak_variants()]
        return neural_voice_ids(self._engine.scheduler.backends) + sorted(
            set(ids) | {f"{e}+{k}" for e in english for k in variants}
        )

    def voice_catalog(self) -> list[VoiceInfo]:
        """Every voice a role can be cast to, with its language and gender: each backend's
        voices, and each English espeak-ng voice with each variant (named after both).
        `voice_id` is what a cast names (`backend:voice` beyond espeak-ng)."""
        out: list[VoiceInfo] = []
        for b in self._engine.scheduler.backends.values():
            if b.name != "espeak":
                out += [replace(v, voice_id=f"{b.name}:{v.voice_id}") for v in b.synth.voices()]
        langs = espeak_voices()
        out += [replace(v, gender="") for v in langs]  # a language voice's timbre is its variant's
        for lang in (v for v in langs if v.voice_id.startswith("en")):
            for var in espeak_variants():
                gender = {"f": "female", "m": "male"}.get(var.gender, "")
                vid, name = f"{lang.voice_id}+{var.voice_id}", f"{lang.name} · {var.name}"
                out.append(VoiceInfo("espeak", vid, name, lang.language, gender))
        return out

    def natural_voices(self) -> list[VoiceInfo]:
        """The non-espeak voices of this engine's backends (what auto-casting offers)."""
        return self._engine.natural_voices()

    def set_voice(self, role: str, **changes: Any) -> Future[None]:
        """Change a role's voice or mix settings live (validated; errors go to the banner).
        `role` as the script writes it or any spelling of it ('Iris (V.O.)' is IRIS)."""
        engine, key = self._engine, normalise_role(role)

        def recast() -> None:
            script = engine.script
            if script is not None and key not in script.roles and key not in engine.cast.voices:
                raise TroupeError(
                    f"no role {key!r} in this script; its roles: {', '.join(list(script.roles)[:8])}"
                )
            engine.current_show().recast(key, **changes)
            if "backend" in changes or "voice_id" in changes:
                engine.prepare_roles([key])

        return engine.command(recast)

    def preview(self, voice_id: str, text: str) -> Future[None]:
        """Speak `text` in a voice (`kokoro:af_heart`, or an espeak-ng id) for the director:
        over the show when it plays, else on the output device by itself. No cue item; the
        future resolves once it is voiced."""
        engine = self._engine
        text = text.strip() or "This is how I sound."
        voice = validate_voice(Voice(voice_id=voice_id.strip() or "en-us"), "preview")
        result: Future[None] = Future()

        def voiced(r: Request) -> None:
            if r.state is not State.DONE or r.audio is None or not r.audio.size:
                why = r.error or "nothing was voiced"
                result.set_exception(SynthesisError(f"preview of {voice_id}: {why}"))
                return
            show = engine.show
            try:
                if show is not None and show.running and engine.guard.output is not None:
                    show.adlibs.splice(PREVIEW_ROLE, r.audio, -1)
                else:
                    play_once(r.audio, engine.settings.output)
            except Exception as exc:  # a busy or missing device: the banner says so
                result.set_exception(TroupeError(f"preview of {voice_id}: cannot play it ({exc})"))
                return
            result.set_result(None)

        def start() -> None:
            try:
                engine.current_show().adlibs.preview(voice, text, voiced)
            except TroupeError as exc:
                result.set_exception(exc)

        engine.command(start)
        return result
