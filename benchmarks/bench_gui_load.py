"""Does the director window disturb audio? The window (offscreen) redraws at 30 Hz while
the demo plays on the JACK dummy device; ring underruns and PortAudio xruns are counted.
Rows: `default` (the output stream in the audio process, as the window runs it),
`reference` (a stream in its own process that only writes zeros, running at the same time
as `default`: the xruns the machine causes by itself), `in_process` (`--in-process-audio`).
Also: the time to redraw the role timeline with 2,000 cues (bars rebuilt and painted).

    jackd --no-realtime -d dummy -r 48000 -p 256 &   # if none is running
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_gui_load.py [--seconds 60] [--roles 50]
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
from _reference import ZeroStream
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from app.main_window import MainWindow
from app.timeline import TimelineWidget
from engine.audio_io.output import OutputSettings
from engine.control import CueView, EngineSettings, Troupe

DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"


def _long_show(folder: Path, n_roles: int = 0) -> Path:
    """The demo's lines, repeated, as a plain-text script long enough for the measurement;
    with `n_roles`, 800 of them spread over that many roles (a real production's size)."""
    from engine.script import load_script

    cues = load_script(DEMO).cues
    path = folder / "long_show.txt"
    if n_roles:
        lines = [f"ROLE {k % n_roles:02d}: {cues[k % len(cues)].text}\n" for k in range(800)]
    else:
        lines = [f"{c.role}: {c.text}\n" for _ in range(4) for c in cues]
    path.write_text("".join(lines), encoding="utf-8")
    return path


def run_window(app: QApplication, seconds: float, mode: str, device: str,
               n_roles: int = 0) -> list[dict[str, object]]:  # fmt: skip
    settings = EngineSettings(output=OutputSettings(device=device), audio_process=mode == "default")
    troupe = Troupe(settings)
    reference = ZeroStream(device) if mode == "default" else None
    tmp = Path(tempfile.mkdtemp())
    window = MainWindow(troupe, QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), tmp)
    window.resize(1600, 1000)
    window.show()
    window.files.open_script(_long_show(tmp, n_roles))
    window.play()
    if reference is not None:
        reference.start()
    rx0, rc0 = (reference.xruns, reference.callbacks) if reference else (0, 0)
    stats = troupe.engine.ring.stats
    u0, x0, c0 = stats.underruns, stats.xruns, stats.callbacks
    frames = 0
    t_end = time.monotonic() + seconds
    frame_ms, starts = [], []
    next_frame = time.perf_counter()
    while time.monotonic() < t_end:
        t0 = time.perf_counter()
        starts.append(t0)
        app.processEvents()
        window.bridge.poll()
        window.repaint()  # a full frame, as a visible window would paint it
        frame_ms.append((time.perf_counter() - t0) * 1000)
        frames += 1
        next_frame = max(next_frame + 1 / 30, time.perf_counter() - 1 / 30)  # 30 Hz, no catch-up burst
        time.sleep(max(0.0, next_frame - time.perf_counter()))
    underruns, xruns, callbacks = stats.underruns - u0, stats.xruns - x0, stats.callbacks - c0
    rows: list[dict[str, object]] = []
    if reference is not None:
        rows.append({"mode": "reference", "seconds": seconds, "callbacks": reference.callbacks - rc0,
                     "ring_underruns": 0, "portaudio_xruns": reference.xruns - rx0})  # fmt: skip
        reference.stop()
    roles = len(troupe.engine.script.roles) if troupe.engine.script else 0
    window.ask_on_close = False
    window.close()
    troupe.close()
    return [{
        "mode": mode,
        "seconds": seconds, "roles": roles,
        "gui_frames": frames, "gui_fps": frames / seconds,
        "fps_median": float(1.0 / np.median(np.diff(starts))) if len(starts) > 1 else 0.0,
        "frame_p50_ms": float(np.percentile(frame_ms, 50)),
        "frame_p95_ms": float(np.percentile(frame_ms, 95)),
        "callbacks": callbacks, "ring_underruns": underruns, "portaudio_xruns": xruns,
    }, *rows]  # fmt: skip


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
    envelopes = {k: np.abs(np.sin(np.arange(36, dtype=np.float32) / 3)) for k in range(n_cues)}
    cases = (("all cues change", False, None), ("one cue changes", True, None),
             ("one cue changes, waveforms", True, envelopes))  # fmt: skip
    for case, one, env in cases:
        times = []
        for rep in range(repeats):
            cues = cues_at(rep + 1, one)
            t0 = time.perf_counter()
            w.set_cues(cues, roles, envelopes=env)
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
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument(
        "--roles",
        type=int,
        default=0,
        help="play a generated 800-line script with this many roles (default: the demo's lines)",
    )
    ap.add_argument("--modes", default="default,in_process", help="comma-separated: default, in_process")
    args = ap.parse_args()
    app = QApplication.instance() or QApplication([])
    redraw = timeline_redraw(app)  # type: ignore[arg-type]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    rows = [row for mode in modes for row in run_window(app, args.seconds, mode, args.device, args.roles)]  # type: ignore[arg-type]
    cols = ["mode", "seconds", "roles", "gui_fps", "fps_median", "frame_p50_ms", "frame_p95_ms", "callbacks",
            "ring_underruns", "portaudio_xruns"]  # fmt: skip
    print(table(rows, cols))
    print(table(redraw, ["case", "cues", "redraw_p50_ms", "redraw_p95_ms", "redraw_max_ms"]))
    print(
        "targets (default): GUI >= 30 fps median, ring underruns 0 over 60 s with the window updating "
        "at 30 Hz, xruns <= the reference row's; timeline redraw < 16 ms"
    )
    print(f"wrote {save('bench_gui_load', {'rows': rows, 'timeline': redraw})}")


if __name__ == "__main__":
    main()
