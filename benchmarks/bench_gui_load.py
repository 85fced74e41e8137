"""Does the director window disturb audio? The window (offscreen) redraws at 30 Hz while
the demo plays on the JACK dummy device, with the output stream in this process and in the
audio process; ring underruns and PortAudio xruns are counted. Also: the time to redraw the
role timeline with 2,000 cues (bars rebuilt and painted), per frame.

    jackd --no-realtime -d dummy -r 48000 -p 256 &   # if none is running
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_gui_load.py [--seconds 60]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
from _common import ROOT, save, table
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from app.main_window import MainWindow
from app.timeline import TimelineWidget
from engine.audio_io.output import OutputSettings
from engine.service import CueView, Engine, EngineSettings

DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"


def _long_show(folder: Path) -> Path:
    """The demo's lines, repeated, as a plain-text script long enough for the measurement."""
    from engine.script import load_script

    cues = load_script(DEMO).cues
    path = folder / "long_show.txt"
    path.write_text("".join(f"{c.role}: {c.text}\n" for _ in range(4) for c in cues), encoding="utf-8")
    return path


def run_window(app: QApplication, seconds: float, audio_process: bool, device: str) -> dict[str, object]:
    engine = Engine(EngineSettings(output=OutputSettings(device=device), audio_process=audio_process))
    tmp = Path(tempfile.mkdtemp())
    window = MainWindow(engine, QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), tmp)
    window.resize(1600, 1000)
    window.show()
    window.open_script(_long_show(tmp))
    window.play()
    frames = 0
    t_end = time.monotonic() + seconds
    frame_ms = []
    while time.monotonic() < t_end:
        t0 = time.perf_counter()
        app.processEvents()
        window.bridge.poll()
        window.repaint()  # a full frame, as a visible window would paint it
        frame_ms.append((time.perf_counter() - t0) * 1000)
        frames += 1
        time.sleep(max(0.0, 1 / 30 - (time.perf_counter() - t0)))
    underruns, xruns, callbacks = engine.ring.underruns, engine.ring.xruns, engine.ring.callbacks
    window.close()
    engine.close()
    return {
        "mode": "audio_process" if audio_process else "in_process",
        "seconds": seconds, "gui_frames": frames, "gui_fps": frames / seconds,
        "frame_p50_ms": float(np.percentile(frame_ms, 50)),
        "frame_p95_ms": float(np.percentile(frame_ms, 95)),
        "callbacks": callbacks, "ring_underruns": underruns, "portaudio_xruns": xruns,
    }  # fmt: skip


def timeline_redraw(app: QApplication, n_cues: int = 2000, repeats: int = 30) -> list[dict[str, object]]:
    """Frame times with all 2,000 bars in view: every cue changing state at once (worst
    case), and the usual frame of a playing show (one cue changes state, the playhead moves)."""
    roles = tuple(f"ROLE{k}" for k in range(12))
    states = ["pending", "queued", "synthesizing", "ready", "played", "failed"]
    w = TimelineWidget()
    w.resize(1200, 500)
    w.show()
    w.plot.setXRange(0, 2.0 * n_cues, padding=0)  # all 2,000 bars in view
    w.follow = False

    def cues_at(rep: int, one_changed: bool) -> tuple[CueView, ...]:
        def state(k: int) -> str:
            return states[(k + (rep if not one_changed or k == rep % n_cues else 0)) % 6]

        return tuple(CueView(k, roles[k % 12], "x", 0, state(k), 2.0 * k, 1.8, 0.0, False, "", ())
                     for k in range(n_cues))  # fmt: skip

    rows = []
    for case, one in (("all cues change", False), ("one cue changes", True)):
        times = []
        for rep in range(repeats):
            cues = cues_at(rep + 1, one)
            t0 = time.perf_counter()
            w.set_cues(cues, roles)
            w.set_playhead(rep * 10.0, True)
            w.repaint()
            app.processEvents()
            times.append((time.perf_counter() - t0) * 1000)
        p50, p95 = (float(np.percentile(times, q)) for q in (50, 95))
        rows.append({"case": case, "cues": n_cues, "redraw_p50_ms": p50, "redraw_p95_ms": p95,
                     "redraw_max_ms": float(max(times))})  # fmt: skip
    w.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--device", default="JACK")
    args = ap.parse_args()
    app = QApplication.instance() or QApplication([])
    redraw = timeline_redraw(app)  # type: ignore[arg-type]
    rows = [run_window(app, args.seconds, ap_mode, args.device) for ap_mode in (False, True)]  # type: ignore[arg-type]
    cols = ["mode", "seconds", "gui_fps", "frame_p50_ms", "frame_p95_ms", "callbacks", "ring_underruns",
            "portaudio_xruns"]  # fmt: skip
    print(table(rows, cols))
    print(table(redraw, ["case", "cues", "redraw_p50_ms", "redraw_p95_ms", "redraw_max_ms"]))
    print("targets: ring underruns 0 over 60 s with the window updating at 30 Hz; timeline redraw < 16 ms")
    print(f"wrote {save('bench_gui_load', {'rows': rows, 'timeline': redraw})}")


if __name__ == "__main__":
    main()
