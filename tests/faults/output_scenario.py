"""A show on a private JACK dummy server, with the output taken away mid-show.

Run as a script by the fault tests (its own process: PortAudio there is set up for the
private server, and a fault cannot disturb the test runner):
    python output_scenario.py SERVER proc|inproc child|jackd
Prints one JSON line of what was seen.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"


def _die_with_me() -> None:
    ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)


def start_jackd(server: str) -> subprocess.Popen[bytes]:
    """A JACK dummy server named `server`, killed if this process dies."""
    proc = subprocess.Popen(
        ["jackd", "-n", server, "--no-realtime", "-d", "dummy", "-r", "48000", "-p", "256"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_me,
    )  # fmt: skip
    for _ in range(200):
        if subprocess.run(["jack_lsp", "-s", server], capture_output=True).returncode == 0:
            return proc
        time.sleep(0.05)
    raise RuntimeError(f"jackd {server} did not start")


def _wait_message(troupe, limit_s: float) -> tuple[str, float]:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if not troupe.engine.messages.empty():
            return troupe.engine.messages.get(), time.monotonic() - t0
        time.sleep(0.002)
    return "", limit_s


def _advance(troupe, after: float, limit_s: float = 10.0) -> float:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    while troupe.monitor.snapshot().playhead_s <= after + 0.2 and time.monotonic() - t0 < limit_s:
        time.sleep(0.02)
    return troupe.monitor.snapshot().playhead_s


def main(server: str, mode: str, fault: str) -> dict[str, object]:
    os.environ["JACK_DEFAULT_SERVER"] = server
    jackd = start_jackd(server)
    from engine.audio_io.output import OutputSettings, terminate_portaudio
    from engine.control import EngineSettings, Troupe

    out: dict[str, object] = {}
    troupe = Troupe(EngineSettings(output=OutputSettings(device="JACK"), audio_process=mode == "proc",
                                   neural=False))  # fmt: skip
    try:
        troupe.projects.load(DEMO).result(60)
        troupe.output.open().result(60)
        troupe.transport.play()
        out["head_before"] = _advance(troupe, 0.5)
        if fault == "child":
            os.kill(troupe.engine.guard.output.pid, signal.SIGKILL)  # type: ignore[union-attr]
        else:
            jackd.kill()
            jackd.wait()
        out["lost"], out["detect_s"] = _wait_message(troupe, 5.0)
        time.sleep(0.1)  # two snapshots later
        out["head_at_loss"] = troupe.monitor.snapshot().playhead_s
        out["output_lost"] = troupe.monitor.snapshot().output_lost
        out["status_lost"] = troupe.monitor.snapshot().status
        if fault == "jackd":
            time.sleep(1.0)
            out["head_held"] = troupe.monitor.snapshot().playhead_s
            jackd = start_jackd(server)
        out["back"], out["reopen_s"] = _wait_message(troupe, 20.0)
        out["head_at_back"] = troupe.monitor.snapshot().playhead_s
        out.setdefault("head_held", out["head_at_loss"])
        out["head_after"] = _advance(troupe, float(out["head_held"]))  # type: ignore[arg-type]
        out["status_after"] = troupe.monitor.snapshot().status
    finally:
        t0 = time.monotonic()
        troupe.close()
        out["close_s"] = time.monotonic() - t0
        terminate_portaudio()
        jackd.terminate()
        jackd.wait(5)
    return out


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:4])), flush=True)
