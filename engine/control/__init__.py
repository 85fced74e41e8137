"""What the window, the command line and tools talk to: a `Troupe` of small facades over one
engine (`engine.service.Engine`, which owns the engine thread and everything on it).

- `transport`: play, pause, stop, GO, jumps, loops (`Transport`)
- `lines`: edits and ad-libs (`Lines`)
- `casting`: the voices there are, and each role's voice, live (`Casting`)
- `projects`: the script and project on the stage, saving, offline renders (`Projects`)
- `output`: the audio device (`Output`)
- `monitor`: snapshots and banner messages (`Monitor`)

Every command runs on the engine thread and returns a future; the GUI never waits on one
(see app/pending.py), the command line takes `.result()`. This package re-exports the types
the GUI draws, so that `app` imports nothing else of the engine but `engine.core`.
"""

from __future__ import annotations

from engine.control.casting import Casting
from engine.control.lines import Lines
from engine.control.monitor import Monitor
from engine.control.output import Output
from engine.control.project import Projects, preview_import
from engine.control.transport import Transport
from engine.export import available_formats
from engine.mixer.envelope import BUCKETS_PER_S
from engine.mixer.meters import Level
from engine.render import RenderResult
from engine.script.options import ImportOptions
from engine.script.report import report_text
from engine.service import SCRIPT_SUFFIXES, Engine, EngineSettings, wait
from engine.snapshot import HISTORY_COLUMNS, CueView, EngineSnapshot, Figures
from engine.synthesis.base import VoiceInfo

__all__ = [
    "BUCKETS_PER_S", "HISTORY_COLUMNS", "SCRIPT_SUFFIXES", "CueView", "EngineSettings", "EngineSnapshot",
    "Figures", "ImportOptions", "Level", "RenderResult", "Troupe", "VoiceInfo", "available_formats",
    "preview_import", "report_text", "wait",
]  # fmt: skip


class Troupe:
    """One running engine and its facades."""

    def __init__(self, settings: EngineSettings | None = None) -> None:
        self.engine = Engine(settings)
        """The engine itself: for tests and tools that look inside; the window does not use it."""
        self.transport = Transport(self.engine)
        self.lines = Lines(self.engine)
        self.casting = Casting(self.engine)
        self.projects = Projects(self.engine)
        self.output = Output(self.engine)
        self.monitor = Monitor(self.engine)

    def close(self) -> None:
        """Close the output, stop the engine thread, free the models and the ring."""
        self.engine.close()
