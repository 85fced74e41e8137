"""A live show voiced on the session's local Ray cluster (`play --cluster`): the scheduler,
the mix and the output stay here, the lines are voiced on the workers, and what is heard is
the script in order."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from scenario import run_show

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="Ray is not installed (pip install -e '.[cluster]' installs it; .ci/run does)",
    ),
]


def test_a_live_show_voiced_on_the_cluster_is_heard_in_script_order(ray_cluster: Any, tmp_path: Path) -> None:
    from engine.scheduler.backend import cluster_backends

    script = tmp_path / "two.txt"
    script.write_text("ANNA: The lamp is lit tonight.\nBEN: Then keep it burning till the dawn.\n")
    backends = cluster_backends(ray_cluster.address, neural=False)
    try:
        assert backends["espeak"].synth.head.workers  # the voicing is on the workers
        heard = run_show(script, seconds=8.0, backends=backends)
        spoken = [s for s in heard.stretches if s.end_s - s.start_s >= 0.3]
        assert [s.role for s in spoken] == ["ANNA", "BEN"], heard.log()
        assert spoken[0].start_s < 0.5  # in time: no wait for the cluster at the start
        assert backends["espeak"].synth.head.lines_done >= 2
    finally:
        for b in backends.values():
            b.synth.close()


@pytest.mark.usefixtures("jack_device")
def test_play_on_the_cluster_plays_the_natural_cast_with_no_stand_in(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """`main.py play --cluster`: the show plays here on the JACK dummy server, every line
    voiced on the workers in its cast voice (the default cast: natural voices)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "two.txt"
    script.write_text("ANNA: The lamp is lit tonight.\nBEN: Then keep it burning till the dawn.\n")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, "main.py", "play", str(script), "--device", "JACK", "--seconds", "60",
         "--cluster", ray_cluster.address],
        cwd=root, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "played 2 of 2 lines" in proc.stdout and "stand-in 0" in proc.stdout, proc.stdout + proc.stderr
    assert "failed 0" in proc.stdout and "Traceback" not in proc.stderr
