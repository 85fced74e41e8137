"""Transport: what the director's transport buttons and keys do to the show."""

from __future__ import annotations

from concurrent.futures import Future

from engine.service import Engine


class Transport:
    """Play, pause, stop, GO, jumps and loops. Every command runs on the engine thread and
    returns a future; a command that fails also reports its error in the banner."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def play(self) -> Future[None]:
        """Play from where the clock is (from the top after Stop or the end)."""
        return self._engine.command(lambda: self._engine.current_show().pause(False))

    def pause(self) -> Future[None]:
        return self._engine.command(lambda: self._engine.current_show().pause(True))

    def toggle(self) -> Future[None]:
        """Pause when playing, play when paused."""

        def toggle_() -> None:
            show = self._engine.current_show()
            show.pause(show.running)

        return self._engine.command(toggle_)

    def stop(self) -> Future[None]:
        """Stop and go back to the top: clock 0, every cue pending."""
        return self._engine.command(lambda: self._engine.current_show().stop())

    def panic(self) -> Future[None]:
        """Silence now: pause and drop everything queued in the ring."""
        engine = self._engine

        def panic_() -> None:
            if engine.show is None:
                engine.ring.controls.set(playing=False, gain=engine.ring.controls.gain)
                engine.ring.reset()
                return
            engine.show.pause(True)
            engine.show.seek(engine.show.times.playhead_s)

        return engine.command(panic_)

    def seek(self, show_s: float) -> Future[None]:
        """Jump to a show time (seconds from the top)."""
        return self._engine.command(lambda: self._engine.current_show().seek(show_s))

    def jump_to_cue(self, index: int) -> Future[None]:
        """Jump to where cue `index` (0-based) starts."""

        def jump() -> None:
            show = self._engine.current_show()
            show.seek(show.times.planned_start_s(index))

        return self._engine.command(jump)

    def go(self) -> Future[None]:
        """GO fires the Standby cue: in cue-stack mode it is released at once; in free play
        the playhead jumps to its start and the show plays on (see `Show.go`)."""

        def go_() -> None:
            self._engine.current_show().go()

        return self._engine.command(go_)

    def set_cue_stack(self, on: bool) -> Future[None]:
        """Cue-stack mode: every cue waits for GO, the clock holding while one waits."""
        return self._engine.command(lambda: self._engine.current_show().set_cue_stack(on))

    def loop_scene(self, scene: int | None) -> Future[None]:
        """Loop a scene (None: stop looping)."""
        return self._engine.command(lambda: self._engine.current_show().loop_scene(scene))

    def skip(self, direction: int = 1) -> Future[None]:
        """To the next cue after the playhead (`direction` 1) or the one before (-1)."""

        def skip_() -> None:
            show = self._engine.current_show()
            if direction > 0:
                show.skip()
                return
            times = show.times
            head = times.playhead_s
            earlier = [s for s in (times.planned_start_s(t.cue.index) for t in show.tracks) if s < head - 0.5]
            show.seek(max(earlier) if earlier else 0.0)

        return self._engine.command(skip_)
