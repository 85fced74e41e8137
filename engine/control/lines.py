"""Lines: the director's changes to what is said (edits of script lines, ad-libs)."""

from __future__ import annotations

from concurrent.futures import Future

from engine.core.errors import TroupeError
from engine.scheduler import Request
from engine.script.common import normalise_role
from engine.script.limits import MAX_LINE_CHARS
from engine.service import Engine
from engine.show.adlibs import ADLIB_AHEAD_S, refusal

MAX_ADLIB_CHARS = 2000


class Lines:
    """Edit a script line, speak an ad-lib, keep or delete one. Text is checked here, at
    once (a `TroupeError` before anything is queued); the rest runs on the engine thread."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def edit_line(self, index: int, text: str) -> Future[None]:
        """Say cue `index` (0-based) as `text` from its next take on (kept in the project)."""
        text = text.strip()
        if not text:
            raise TroupeError(f"cue {index + 1}: a line cannot be empty")
        if len(text) > MAX_LINE_CHARS:
            raise TroupeError(f"cue {index + 1}: a line is limited to {MAX_LINE_CHARS:,} characters")
        engine = self._engine

        def edit() -> None:
            engine.edits[index] = text
            engine.current_show().retake(index, text)

        return engine.command(edit)

    def adlib(self, role: str, text: str) -> Future[Request]:
        """Speak a typed line as `role` as soon as possible; the future resolves to the
        request once it is placed in the mix (or has failed). Refused at once (a
        `TroupeError`) while the ad-libs before it are more than the show takes at a time."""
        text = text.strip()
        if not text:
            raise TroupeError("an ad-lib needs some text")
        if len(text) > MAX_ADLIB_CHARS:
            raise TroupeError(f"an ad-lib is limited to {MAX_ADLIB_CHARS} characters")
        engine = self._engine
        result: Future[Request] = Future()
        t0 = engine.clock()
        show = engine.show  # NB: one reference read; the engine thread checks again
        if show is not None and t0 < show.adlibs.refused_until:
            raise TroupeError(refusal(show.adlibs.refused_until - t0 + ADLIB_AHEAD_S))

        def finished(req: Request) -> None:
            if req.t_placed:
                engine.adlib_ms.add((req.t_placed - t0) * 1000)
                engine.audible_ms.add((req.t_played - t0) * 1000)
            result.set_result(req)

        def adlib_() -> None:
            try:
                r = engine.current_show().adlib(normalise_role(role), text)
            except TroupeError as exc:
                result.set_exception(exc)
                raise
            r.t_enqueued = t0  # latency counts from the director's Enter, not the engine's pickup
            first = r.on_done

            def done(req: Request) -> None:
                if first is not None:
                    first(req)
                finished(req)

            r.on_done = done

        engine.command(adlib_)
        return result

    def keep_adlib(self, index: int, keep: bool = True) -> Future[None]:
        """Keep an ad-lib in the show: it becomes a cue at the time it was heard
        (`keep=False` undoes that: heard once again)."""

        def keep_() -> None:
            adlibs = self._engine.current_show().adlibs
            adlibs.keep(index) if keep else adlibs.unkeep(index)

        return self._engine.command(keep_)

    def delete_adlib(self, index: int, delete: bool = True) -> Future[None]:
        """Remove an ad-lib from the cue list, the timeline and the mix (`delete=False`
        brings a deleted one back)."""

        def delete_() -> None:
            adlibs = self._engine.current_show().adlibs
            adlibs.delete(index) if delete else adlibs.restore(index)

        return self._engine.command(delete_)
