"""The audio output taken away mid-show (the audio process killed, the JACK server killed
and restarted): noticed, reported once, the show held in place, reopened when the device is
back, and `close` prompt. Each scenario runs in its own process on a private JACK server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = Path(__file__).with_name("output_scenario.py")
ROOT = SCENARIO.parents[2]

pytestmark = [
    pytest.mark.jack,
    pytest.mark.skipif(shutil.which("jackd") is None, reason="jackd not installed"),
]


def _run(mode: str, fault: str) -> dict[str, object]:
    server = f"troupe-faults-{os.getpid()}-{mode}-{fault}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(SCENARIO), server, mode, fault], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Assertion" not in proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _check(seen: dict[str, object], cause: str) -> None:
    assert str(seen["lost"]).startswith("audio output lost:") and cause in str(seen["lost"])
    assert float(seen["detect_s"]) < 1.0  # type: ignore[arg-type]  # 200 ms on an idle machine
    assert seen["output_lost"] and seen["status_lost"] == "audio lost"
    held, at_loss = float(seen["head_held"]), float(seen["head_at_loss"])  # type: ignore[arg-type]
    assert held == at_loss  # the show's clock holds while nothing plays
    assert abs(float(seen["head_at_back"]) - at_loss) < 0.15  # type: ignore[arg-type]
    assert held >= float(seen["head_before"])  # type: ignore[arg-type]  # its place is kept
    assert str(seen["back"]).startswith("audio output is back")
    assert float(seen["head_after"]) > held + 0.2  # type: ignore[arg-type]  # and it goes on
    assert seen["status_after"] == "playing"
    assert float(seen["close_s"]) < 2.0  # type: ignore[arg-type]


def test_a_killed_audio_process_is_reported_and_replaced() -> None:
    _check(_run("proc", "child"), "the audio process ended")


@pytest.mark.parametrize("mode", ["proc", "inproc"])
def test_a_jack_server_killed_and_restarted_mid_show_is_survived(mode: str) -> None:
    _check(_run(mode, "jackd"), "stopped")
