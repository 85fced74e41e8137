"""Flows the window hands off: rendering (dialog, background job, progress, result) and
voices (the browser, previews). Each holds the parts of the window it uses (`Host`) and
reaches the engine through its facades. Opening and saving are app/files.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QProgressDialog, QStatusBar, QWidget

from app.banner import Banner
from app.bridge import EngineBridge
from app.cast_panel import CastPanel, voice_change, voice_text
from app.cue_list import CueList
from app.cue_model import CueTableModel
from app.jobs import RenderJob
from app.pending import Pending
from app.render_dialog import RenderDialog
from app.voice_browser import VoiceBrowser
from engine.control import RenderResult, Troupe, VoiceInfo
from engine.core.errors import TroupeError


class Host(Protocol):
    """What the flows use of the window."""

    troupe: Troupe
    banner: Banner
    pending: Pending
    settings: QSettings
    bridge: EngineBridge
    cue_model: CueTableModel
    cues: CueList
    cast: CastPanel

    def window(self) -> QWidget: ...

    def statusBar(self) -> QStatusBar: ...


class RenderFlow:
    def __init__(self, window: Host) -> None:
        self.w = window
        self.job: RenderJob | None = None

    def ask(self, stems: bool = False) -> RenderJob | None:
        w = self.w
        snap = w.bridge.last
        title, path, scenes = (snap.title, snap.path, snap.scenes) if snap else ("", "", ())
        dialog = RenderDialog(title, path, scenes, w.cue_model.cues, w.cues.selected_cues(), w.window())
        dialog.stems.setChecked(stems)
        if dialog.exec() != RenderDialog.DialogCode.Accepted:
            return None
        req = dialog.request()
        return self.start(req.out, req.stems, req.cues)

    def start(self, out: Path, stems: Path | None, cues: tuple[int, ...] | None = None) -> RenderJob:
        """Render in the background with a cancellable progress dialog; a cancel says which
        partial files it removed (or that none were left)."""
        w = self.w
        job = RenderJob(w.troupe.projects, out, stems, cues)
        dialog = QProgressDialog("Rendering…", "Cancel", 0, 1000, w.window())
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.setMinimumDuration(300)
        dialog.canceled.connect(job.cancel)
        job.progressed.connect(lambda f, msg: (dialog.setValue(round(f * 1000)), dialog.setLabelText(msg)))
        job.succeeded.connect(self.done)
        job.failed.connect(w.banner.show_message)
        job.finished.connect(dialog.close)
        job.finished.connect(job.deleteLater)
        self.job = job
        job.start()
        return job

    def done(self, result: RenderResult) -> None:
        w = self.w
        w.statusBar().showMessage(f"rendered {result.path} ({result.duration_s:.1f} s, "
                                  f"{len(result.failed)} failed lines)", 10000)  # fmt: skip
        if result.fell_back:  # the director should know which lines are not in their cast voice
            cues = ", ".join(str(ln.cue_index + 1) for ln in result.fell_back[:12])
            more = "…" if len(result.fell_back) > 12 else ""
            w.banner.show_message(f"render: espeak-ng stood in for cue(s) {cues}{more}: "
                                  f"{result.fell_back[0].fallback}")  # fmt: skip


class VoiceFlow:
    def __init__(self, window: Host, recast: Callable[[str, dict[str, object]], None]) -> None:
        """`recast(role, changes)`: the window's undoable voice change."""
        self.w = window
        self.recast = recast
        self.catalog: list[VoiceInfo] | None = None
        self.browser: VoiceBrowser | None = None

    def browse(self, role: str) -> VoiceBrowser:
        w = self.w
        if self.catalog is None:
            self.catalog = w.troupe.casting.voice_catalog()
        if self.browser is not None:
            self.browser.close()
        browser = VoiceBrowser(self.catalog, w.settings, role, self.sample_line(role), w.window())
        voice = w.cast.shown.get(role)
        if voice is not None:
            browser.select(voice_text(voice))
        browser.cast_chosen.connect(lambda r, v: self.recast(r, voice_change(v)))
        browser.preview_asked.connect(self.preview)
        browser.show()
        self.browser = browser
        return browser

    def sample_line(self, role: str) -> str:
        """The role's next line (else its first), for a preview in context."""
        lines = [c for c in self.w.cue_model.cues if c.role == role and c.kind == "line"]
        coming = [c for c in lines if c.state not in ("played", "playing")]
        return (coming or lines)[0].text if lines else "This is how I sound."

    def preview(self, voice_id: str, text: str) -> None:
        w = self.w
        try:
            future = w.troupe.casting.preview(voice_id, text)
        except TroupeError as exc:
            w.banner.show_message(str(exc))
            return
        w.pending.watch(future, f"previewing {voice_id}", w.banner.show_message)
