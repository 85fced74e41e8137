"""`main.py render --cluster` and `serve --cluster` on the session's local Ray
cluster: the render voices every line on the workers in its cast voice (natural voices
included) and reports a stand-in as on one machine; the server's /metrics shows each worker,
the ring's imbalance and the workers lost."""

from __future__ import annotations

import importlib.util
from concurrent.futures import wait
from pathlib import Path
from typing import Any

import pytest
import soundfile as sf

HAVE_RAY = importlib.util.find_spec("ray") is not None
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        not HAVE_RAY, reason="Ray is not installed (pip install -e '.[cluster]' installs it; .ci/run does)"
    ),
]


def test_render_on_the_cluster(ray_cluster: Any, testdata: Path, tmp_path: Path, capsys: Any) -> None:
    import main

    out = tmp_path / "mix.wav"
    assert (
        main.main(
            ["render", str(testdata / "radio_play.txt"), "-o", str(out), "--cluster", ray_cluster.address]
        )
        == 0
    )
    assert sf.info(str(out)).duration > 1.0
    printed = capsys.readouterr()
    assert "FAILED" not in printed.err and "lines" in printed.out
    # the default cast is natural voices; the workers voice them (before: espeak-ng, unsaid)
    _script, cast, _edits = main._load(main.build_parser().parse_args(
        ["render", str(testdata / "radio_play.txt"), "-o", str(out)]))  # fmt: skip
    assert {v.backend for v in cast.voices.values()} & {"kokoro", "piper"}
    assert "stood in" not in printed.err


def test_a_backend_no_worker_has_is_stood_in_and_said(ray_cluster: Any) -> None:
    from engine.cluster.connect import RayCluster, cluster_synthesizers
    from engine.core.types import Voice
    from engine.synthesis.base import SynthRequest
    from engine.synthesis.router import Router

    views = cluster_synthesizers(RayCluster(heartbeat_s=None, neural=False))  # espeak-ng workers only
    router = Router(views)
    try:
        assert set(views) == {"espeak"}
        reqs = [SynthRequest("The lamp is lit.", Voice("kokoro", "af_heart"), 7, "ANNA"),
                SynthRequest("Keep it burning.", Voice(), 8, "BEN")]  # fmt: skip
        out = router.synthesize(reqs)
        assert all(a.size > 0 for a in out)
        assert set(router.fallbacks) == {7} and "kokoro" in router.fallbacks[7]
    finally:
        router.close()


def test_serve_on_the_cluster_shows_workers_in_metrics(ray_cluster: Any) -> None:
    from prometheus_client import generate_latest

    from engine.scheduler.request import RequestClass
    from engine.server import SpeechService, SpeechSettings

    service = SpeechService(SpeechSettings(cluster=ray_cluster.address, neural=False))
    try:
        futures = []
        for role in ("ANNA", "BEN", "CLARA"):
            service.add_role(role)
            futures += service.submit(role, f"Hello, I am {role}.", 1.0, RequestClass.SCRIPTED)
        done, _ = wait(futures, timeout=60)
        assert len(done) == len(futures) and all(f.result().size > 0 for f in futures)
        service.telemetry.tick()
        text = generate_latest(service.telemetry.registry).decode()
        workers = list(service.cluster.head.workers)
        assert len(workers) == 2
        for w in workers:
            assert f'troupe_cluster_worker_up{{worker="{w}"}} 1.0' in text
        assert "troupe_cluster_imbalance" in text and "troupe_cluster_worker_roles" in text
        assert "troupe_cluster_workers_lost_total 0.0" in text
        assert sum(v.lines for v in service.cluster.head.board.latest().workers) >= 3
    finally:
        service.close()
