"""Projects: the script and project on the stage (open, import, save) and offline renders."""

from __future__ import annotations

import threading
from collections.abc import Collection
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

from engine.cast import Cast, save_project
from engine.core.errors import TroupeError
from engine.core.types import Script
from engine.project import edit_anchors, read_project, use_voicing
from engine.render import Progress, RenderResult, render_script
from engine.script import load_script
from engine.script.options import ImportOptions, chosen_options
from engine.service import Engine
from engine.synthesis.build import SynthSpec, build_synthesizers
from engine.synthesis.router import Router


def script_ref(script: str | Path, project: str | Path) -> str:
    """The script as a project file names it: beside or under the project's folder, relative
    to it (the two move together); elsewhere, absolute. Never relative to the folder Troupe
    was started in, which the reopening does not know."""
    target = Path(script).resolve()
    folder = Path(project).resolve().parent
    return str(target.relative_to(folder)) if target.is_relative_to(folder) else str(target)


def preview_import(path: str | Path, options: ImportOptions | None = None) -> Script:
    """Read a script for its import report without making it the show (the window's
    import dialog; `Projects.load` with the chosen options then makes it the show)."""
    return load_script(path, options)


class Projects:
    """What is on the stage. A file is read on the caller's thread (a bad one raises
    `ScriptError` at once, before anything changes); the swap runs on the engine thread and
    its future resolves once the new show is in place."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def path(self) -> Path | None:
        """The open project's file (None: none saved or opened)."""
        return self._engine.project_path  # NB: one reference read

    @property
    def script(self) -> Script | None:
        """The script on the stage, as imported (without the director's edits)."""
        return self._engine.script  # NB: one reference read of an immutable object

    def load(
        self, path: str | Path, keep_cast: bool = True, options: ImportOptions | None = None
    ) -> Future[Script]:
        """Import a script and make it the show; on a bad file the current show stays.
        `options`: the encoding and dialogue styles chosen in the import report."""
        engine = self._engine
        script = load_script(path, options)

        def swap() -> Script:
            # Only a reload of the same file keeps the cast: another script never inherits it.
            same = engine.script is not None and engine.script.path == script.path
            keep = engine.cast.voices if keep_cast and same else None
            if not same:  # nor another project's pronunciations and delivery hints
                use_voicing(None)
                engine.project_extras = {}
            engine.install(script, Cast.auto(script, keep, natural=engine.natural_voices()), {})
            return script

        return engine.submit(swap)

    def open(self, path: str | Path, options: ImportOptions | None = None) -> Future[Script]:
        """Open a project (its script, cast, edits, pronunciations); `options` over the
        import choices it saved."""
        return self._open(path, options, Path(path))

    def _open(self, path: str | Path, options: ImportOptions | None, save_to: Path | None) -> Future[Script]:
        engine = self._engine
        project = read_project(path)
        script = load_script(project.script, options or project.import_options)
        edits, lost = project.edits_on(script)

        def swap() -> Script:
            engine.install(
                script, Cast.auto(script, project.cast.voices, natural=engine.natural_voices()), edits
            )
            for what in lost:  # told, with its text, never put on another line
                engine.messages.put(f"an edit could not be placed: {what}")
            use_voicing(project)
            engine.project_extras = project.extras
            engine.project_path = save_to
            return script

        return engine.submit(swap)

    def recover(self, path: str | Path, origin: Path | None) -> Future[Script]:
        """Open a recovery file (an autosave of a session that did not close): Save then
        goes to that session's own project file `origin` (None: Save asks where), never
        into the recovery file."""
        return self._open(path, None, origin)

    def save(self, path: str | Path, as_current: bool = True) -> Future[None]:
        """Save the script's path, cast, edits and import choices; `as_current=False` for
        an autosave copy (the project's own file stays what it was)."""
        engine = self._engine

        def save_() -> None:
            if engine.script is None:
                raise TroupeError("nothing to save: no script is loaded")
            chosen = chosen_options(engine.script.facts).to_dict()
            extras = {k: v for k, v in engine.project_extras.items() if k != "import"}
            if chosen:
                extras["import"] = chosen
            anchors = edit_anchors(engine.script, engine.edits)  # each edit with its line as imported
            edits = {k: {"text": v, "was": anchors[k].was, "line": anchors[k].line} if k in anchors else v
                     for k, v in engine.edits.items()}  # fmt: skip
            save_project(path, script_ref(engine.script.path, path), engine.cast, edits, extras)
            if as_current:
                engine.project_path = Path(path)

        return engine.submit(save_)

    def render(self, out: str | Path, stems: str | Path | None = None, progress: Progress | None = None,
               cancel: threading.Event | None = None,
               cues: Collection[int] | None = None) -> Future[RenderResult]:  # fmt: skip
        """Offline render of the current show on a thread of its own (own synthesizer);
        `cues` limits it to those cues (a scene, a selection), laid out from time 0."""
        engine = self._engine
        result: Future[RenderResult] = Future()

        script, cast, edits = engine.call(
            lambda: (engine.script, Cast(dict(engine.cast.voices)), dict(engine.edits))
        )
        if script is None:
            raise TroupeError("nothing to render: no script is loaded")

        def run() -> None:
            try:
                result.set_result(self._render(script, cast, edits, out, stems, progress, cancel, cues))
            except BaseException as exc:
                result.set_exception(exc)

        threading.Thread(target=run, name="troupe-render", daemon=True).start()
        return result

    def _render(self, script: Script, cast: Cast, edits: dict[int, str], out: str | Path,
                stems: str | Path | None, progress: Progress | None, cancel: threading.Event | None,
                cues: Collection[int] | None) -> RenderResult:  # fmt: skip
        engine = self._engine
        if cues is not None:
            chosen = tuple(c for c in script.cues if c.index in cues)
            if not chosen:
                raise TroupeError("nothing to render: the range holds no line of the script")
            script = replace(script, cues=chosen)
        # espeak-ng of its own (not thread-safe); the natural voices' loaded models are shared
        neural = {n: b.synth for n, b in engine.scheduler.backends.items() if n != "espeak"}
        synth = Router({**build_synthesizers(SynthSpec(natural=None)), **neural})
        return render_script(script, cast, out, synth, stems, engine.settings.pacing, edits, progress, cancel)
