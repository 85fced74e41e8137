"""Real Ray on 127.0.0.1 (two nodes, a worker actor on each): 200 lines over 8 roles all come
back, nearly all from their role's ring owner; a worker killed with SIGKILL mid-batch loses
nothing and repeats nothing, and the render's mix equals the single-machine render's."""

from __future__ import annotations

import importlib.util
import os
import signal
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from engine.cast import Cast
from engine.core.types import Voice
from engine.synthesis.base import SynthRequest
from engine.synthesis.espeak import EspeakSynthesizer

HAVE_RAY = importlib.util.find_spec("ray") is not None
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        not HAVE_RAY, reason="Ray is not installed (pip install -e '.[cluster]' installs it; .ci/run does)"
    ),
]

ROLES = [f"ROLE{k}" for k in range(8)]
WORDS = "the lamp the sea a storm is coming keep the light burning we wait".split()  # noqa: SIM905


def lines(n: int = 200) -> list[tuple[str, str]]:
    """(role, text): short, varied, deterministic."""
    return [
        (ROLES[k % 8], " ".join(WORDS[(k * 7 + j) % len(WORDS)] for j in range(2 + k % 3))) for k in range(n)
    ]


def open_cluster(simulated: dict[str, float] | None = None) -> Any:
    from engine.cluster.connect import ClusterSynthesizer, RayCluster

    return ClusterSynthesizer(RayCluster(heartbeat_s=None, simulated=simulated))


@pytest.fixture
def cluster(ray_cluster: Any) -> Iterator[Any]:
    """Workers voicing with espeak-ng."""
    synth = open_cluster()
    yield synth
    synth.close()


@pytest.fixture
def exact_cluster(ray_cluster: Any) -> Iterator[Any]:
    """Workers voicing with the simulated voice, whose audio depends on the line alone."""
    synth = open_cluster({})
    yield synth
    synth.close()


def test_two_nodes_two_workers(cluster: Any) -> None:
    nodes = {w.node for w in cluster.head.workers.values()}
    assert len(cluster.head.workers) == 2 and len(nodes) == 2


def test_200_lines_over_8_roles_come_back_from_their_owners(cluster: Any) -> None:
    from engine.cluster.ring import HashRing

    head = cluster.head
    ring = HashRing()  # an independent ring over the same workers
    for w in head.workers.values():
        ring.add(w.worker_id, w.capacity)
    sent: Counter[bool] = Counter()
    roles_of = {}

    def record(worker: str, tickets: list[int]) -> None:
        for t in tickets:
            sent[worker == ring.owner(roles_of[t])] += 1

    head.on_send = record
    voices = {r: Voice(voice_id=("en-us+m3", "en+f3")[k % 2], pitch=30 + 5 * k) for k, r in enumerate(ROLES)}
    reqs = [SynthRequest(text, voices[role], k, role) for k, (role, text) in enumerate(lines())]
    first = head.lines_done
    out = []
    for k in range(0, len(reqs), 25):
        roles_of.update({first + 1 + k + j: r.role for j, r in enumerate(reqs[k : k + 25])})
        out += cluster.synthesize(reqs[k : k + 25])
    assert len(out) == 200 and all(a.size > 0 for a in out)
    assert sum(sent.values()) == 200 and sent[True] / 200 >= 0.9
    assert head.lines_done - first == 200 and head.duplicates_dropped == 0
    local = EspeakSynthesizer()
    for k in range(0, 200, 23):  # the line as voiced here (espeak-ng varies by a few ms between calls)
        assert abs(out[k].size - local.synthesize([reqs[k]])[0].size) < 0.1 * out[k].size
    snap = head.board.latest()
    assert snap.version > 0 and {v.worker_id for v in snap.workers} == set(head.workers)
    assert sum(v.lines for v in snap.workers) >= 200 and set(snap.roles) == set(ROLES)


def test_a_killed_worker_loses_nothing_and_the_mix_equals_a_local_render(
    exact_cluster: Any, tmp_path: Path
) -> None:
    from engine.cluster.simulated import SimulatedSynthesizer
    from engine.render import render_script
    from engine.script import load_script

    cluster = exact_cluster

    path = tmp_path / "radio.txt"
    path.write_text("".join(f"{role}: {text}.\n" for role, text in lines()))
    script = load_script(path)
    cast = Cast.auto(script)
    assert len(script.cues) == 200 and len(script.roles) == 8
    head = cluster.head
    killed: list[int] = []

    def kill_mid_batch(worker: str, tickets: list[int]) -> None:
        if not killed and head.lines_done >= 40:  # the batch was sent: its worker dies holding it
            killed.append(head.workers[worker].pid)
            os.kill(head.workers[worker].pid, signal.SIGKILL)

    head.on_send = kill_mid_batch
    first = head.lines_done
    there = render_script(script, cast, tmp_path / "cluster.wav", cluster)
    head.on_send = None
    assert killed and head.workers_lost == 1 and head.resent_lines > 0
    assert head.lines_done - first == 200  # every line id completed exactly once
    assert not there.failed and len(there.lines) == 200
    here = render_script(script, cast, tmp_path / "local.wav", SimulatedSynthesizer())
    assert not here.failed
    a, _ = sf.read(tmp_path / "cluster.wav", dtype="int32")
    b, _ = sf.read(tmp_path / "local.wav", dtype="int32")
    assert a.shape == b.shape and np.array_equal(a, b)


def test_a_silent_worker_is_replaced_and_its_late_copies_are_dropped(ray_cluster: Any) -> None:
    from engine.cluster.connect import ClusterSynthesizer, RayCluster
    from engine.cluster.head import ClusterHead

    synth = ClusterSynthesizer(RayCluster(ClusterHead(ttl_s=3.0), heartbeat_s=None, simulated={}))
    head = synth.head
    stopped: list[tuple[str, int]] = []

    def stop_first(worker: str, tickets: list[int]) -> None:
        if not stopped:  # frozen holding its lines: it answers neither them nor a heartbeat
            stopped.append((worker, len(tickets)))
            os.kill(head.workers[worker].pid, signal.SIGSTOP)

    head.on_send = stop_first
    reqs = [SynthRequest(text, Voice(), k, role) for k, (role, text) in enumerate(lines(40))]
    try:
        with ThreadPoolExecutor(4) as pool:  # batches voiced at once, as the scheduler's slots do
            out = [
                a
                for part in pool.map(synth.synthesize, [reqs[k : k + 10] for k in range(0, 40, 10)])
                for a in part
            ]
        head.on_send = None
        worker, n_stopped = stopped[0]
        assert len(out) == 40 and head.lines_done == 40 and head.resent_lines >= n_stopped
        assert not head.workers[worker].alive and worker not in head.ring
        os.kill(head.workers[worker].pid, signal.SIGCONT)
        head.settle(60)  # the late copies land and are dropped
        head.heartbeat()  # the worker answers again and rejoins
        assert head.duplicates_dropped == head.resent_lines and head.lines_done == 40
        assert head.workers[worker].alive and worker in head.ring
    finally:
        for w, _ in stopped:
            os.kill(head.workers[w].pid, signal.SIGCONT)
        synth.close()


def test_a_skewed_ring_rebalances_and_moved_roles_switch_once_their_voice_is_loaded(
    exact_cluster: Any,
) -> None:
    from engine.cluster.balance import IMBALANCE_THRESHOLD, MOVE_SHARE

    head = exact_cluster.head
    heavy = next(iter(head.workers))
    head.ring.set_weight(heavy, 8.0)  # the imposed skew: one worker holds nearly every role
    reqs = [
        SynthRequest(text, Voice(pitch=20 + k % 64), k, f"R{k % 64}")
        for k, (_, text) in enumerate(lines(256))
    ]
    exact_cluster.synthesize(reqs)  # the load the head has seen per role
    assert head.rebalancer.imbalance(head.recent_load()) > IMBALANCE_THRESHOLD
    steps = 0
    while steps < 200:
        step = head.rebalance(decay=False)
        if not step.moves:
            break
        steps += 1
        assert step.moved_lines <= MOVE_SHARE * 256
        for m in step.moves:  # double-routed: the old worker voices it until the new one has the voice
            assert head.rebalancer.route(m.role) == m.old != m.new
    assert 0 < steps < 200 and head.rebalancer.imbalance(head.recent_load()) <= IMBALANCE_THRESHOLD
    head.settle(60)  # the new owners' warm-ups land: each moved role switches
    assert not head.rebalancer.transitions
    assert all(head.rebalancer.route(f"R{k}") == head.rebalancer.owner(f"R{k}") for k in range(64))


def test_one_hot_voice_is_spread_over_the_workers(ray_cluster: Any) -> None:
    """120 lines of one role (one ring key) from 4 clients at once: before, every line went
    to the key's one owner; now both workers voice it, within the load bound. The workers
    take 10 ms a line, as a voice does: with workers that answer at once, lines in flight
    say nothing of load, and the one nearer the head would take more."""
    synth = open_cluster({"per_line_s": 0.01})
    try:
        _spread_one_hot_voice(synth)
    finally:
        synth.close()


def _spread_one_hot_voice(exact_cluster: Any) -> None:
    head = exact_cluster.head
    before = {w: s.lines for w, s in head.workers.items()}
    reqs = [SynthRequest(text, Voice(), k, "NARRATOR") for k, (_, text) in enumerate(lines(120))]
    with ThreadPoolExecutor(4) as pool:
        out = [a for part in pool.map(exact_cluster.synthesize, [reqs[k : k + 10] for k in range(0, 120, 10)])
               for a in part]  # fmt: skip
    assert len(out) == 120 and head.duplicates_dropped == 0
    voiced = {w: s.lines - before[w] for w, s in head.workers.items()}
    assert sum(voiced.values()) == 120
    assert max(voiced.values()) / (120 / len(voiced)) <= 1.25, voiced
    assert set(head.hot_keys()) == {"NARRATOR"}
    assert not head.rebalance(decay=False).moves  # no move balances one key: it is not moved


def test_a_node_that_cannot_start_a_worker_is_skipped_with_a_warning(
    ray_cluster: Any, monkeypatch: Any, caplog: Any
) -> None:
    """A node Ray still lists as alive but that cannot run an actor (dead, or without the
    resources): the start goes on without it, says so, and does not try it again at once."""
    import logging

    import ray

    from engine.cluster.connect import ClusterSynthesizer, RayCluster

    real = ray.nodes
    ghost = {"NodeID": "ab" * 28, "Alive": True, "NodeManagerAddress": "10.255.255.1",
             "Resources": {"CPU": 2.0}}  # fmt: skip
    monkeypatch.setattr(ray, "nodes", lambda: [*real(), ghost])
    caplog.set_level(logging.WARNING, logger="troupe.cluster")
    cluster = RayCluster(heartbeat_s=None, simulated={}, start_timeout_s=15)
    synth = ClusterSynthesizer(cluster)
    try:
        assert len(cluster.head.workers) == 2 and ghost["NodeID"] in cluster.skipped
        assert any("node abababab skipped" in r.getMessage() for r in caplog.records)
        assert cluster.refresh() == []  # not tried again at once
        assert synth.synthesize([SynthRequest("Still here.", Voice(), 1, "ANNA")])[0].size > 0
    finally:
        synth.close()


def test_a_replacement_worker_has_its_own_id(exact_cluster: Any, caplog: Any) -> None:
    import logging

    head = exact_cluster.head
    caplog.set_level(logging.WARNING, logger="troupe.cluster")
    victim = next(iter(head.workers))
    os.kill(head.workers[victim].pid, signal.SIGKILL)
    head.heartbeat()
    assert head.workers[victim].dead and head.workers_lost == 1
    assert any(victim in r.getMessage() and "lost" in r.getMessage() for r in caplog.records)
    started = exact_cluster.cluster.refresh(wait_s=60)
    assert len(started) == 1 and started[0] != victim  # its node's new worker: a new id
    assert head.workers[started[0]].alive and head.workers[started[0]].node == head.workers[victim].node
