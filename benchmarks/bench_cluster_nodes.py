"""Scale-out on real Ray nodes: each node its own network namespace and CPU core on this
machine, real espeak-ng and Piper voicing, and a worker killed mid-run.

The nodes are `ray start` processes, each in a network namespace of its own (a veth pair on
a bridge, 10.77.0.0/24: the head at .1, node k at .k+1), each pinned to one core with
`taskset` (a node = one machine with one core); the head node offers Ray no CPU
(`--num-cpus 0`), so it runs the driver (Troupe's head: the ring, the scheduler's batches)
and no worker. For 1 node and then 2 (the second joins the running cluster), the same lines
are voiced through `ClusterSynthesizer` with as many batches in flight as there are nodes x 2:
audio seconds per second, and efficiency = throughput(N) / (N x throughput(1)). Then, with 2
nodes, one worker is killed (SIGKILL) a third of the way through a run: lines lost, lines
voiced twice (dropped as duplicates), lines re-sent.

Needs root (network namespaces, a bridge) and iproute2; it removes what it made at the end.

    python benchmarks/bench_cluster_nodes.py [--repeats 3] [--lines 120]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import save, saved, table

ROOT = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))
BRIDGE, SUBNET, PORT = "troupe-br", "10.77.0", 6390
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "TROUPE_TAKE_CACHE": "off"}
"""The nodes' environment (their workers inherit it): no take cache, so every run voices."""
WORDS = "the night was long and the harbour lights burned low while we waited for word".split()  # noqa: SIM905
ROLES = [f"R{k}" for k in range(40)]
"""A cast as large as a feature screenplay's: each role's share of a run (1/40) fits in one
rebalancing step's budget (3% of the lines), so the ring can be balanced role by role."""


def sh(*cmd: str, check: bool = True, ns: str | None = None) -> subprocess.CompletedProcess[str]:
    full = ["ip", "netns", "exec", ns, *cmd] if ns else list(cmd)
    return subprocess.run(full, check=check, capture_output=True, text=True, env=ENV, timeout=180)


def network_up(nodes: int) -> None:
    """A bridge with the head's address, and a namespace with a veth on it for each node."""
    sh("ip", "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE)
    sh("ip", "link", "set", BRIDGE, "up")
    for k in range(1, nodes + 1):
        ns = f"troupe-n{k}"
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", f"th{k}", "type", "veth", "peer", "name", f"tn{k}")
        sh("ip", "link", "set", f"tn{k}", "netns", ns)
        sh("ip", "link", "set", f"th{k}", "master", BRIDGE)
        sh("ip", "link", "set", f"th{k}", "up")
        sh("ip", "addr", "add", f"{SUBNET}.{k + 1}/24", "dev", f"tn{k}", ns=ns)
        sh("ip", "link", "set", f"tn{k}", "up", ns=ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)


def network_down(nodes: int) -> None:
    for k in range(1, nodes + 1):
        sh(RAY, "stop", "--force", check=False, ns=f"troupe-n{k}")
        sh("ip", "netns", "del", f"troupe-n{k}", check=False)
        sh("ip", "link", "del", f"th{k}", check=False)
    sh(RAY, "stop", "--force", check=False)
    sh("ip", "link", "del", BRIDGE, check=False)


def start_head() -> str:
    address = f"{SUBNET}.1:{PORT}"
    sh(RAY, "start", "--head", "--node-ip-address", f"{SUBNET}.1", "--port", str(PORT), "--num-cpus", "0",
       "--include-dashboard", "false", "--disable-usage-stats")  # fmt: skip
    return address


def start_node(k: int, address: str) -> None:
    """Node k in its namespace, on core k - 1 (one core: one machine)."""
    core = str((k - 1) % (os.cpu_count() or 1))
    sh("taskset", "-c", core, RAY, "start", "--address", address, "--node-ip-address", f"{SUBNET}.{k + 1}",
       "--num-cpus", "1", "--disable-usage-stats", ns=f"troupe-n{k}")  # fmt: skip


def requests(n: int, backend: str, seed: int) -> list[Any]:
    from engine.core.types import Voice
    from engine.synthesis.base import SynthRequest

    voice = Voice() if backend == "espeak" else Voice("piper", "en_US-joe-medium")
    rng = random.Random(seed)
    return [
        SynthRequest(" ".join(rng.choices(WORDS, k=9)) + ".", voice, k, ROLES[k % len(ROLES)])
        for k in range(n)
    ]


def pump(synth: Any, reqs: list[Any], in_flight: int, on_batch: Any = None) -> tuple[float, int]:
    """Voice `reqs` in batches of 4 (one role each, as the scheduler batches), `in_flight`
    at a time: (audio s per s, lines back)."""
    by_role: dict[str, list[Any]] = {}
    for r in reqs:
        by_role.setdefault(r.role, []).append(r)
    batches = [rs[k : k + 4] for rs in by_role.values() for k in range(0, len(rs), 4)]
    random.Random(1).shuffle(batches)

    def one(batch: list[Any]) -> tuple[float, int]:
        out = synth.synthesize(batch)
        if on_batch is not None:
            on_batch()
        return sum(a.size for a in out) / synth.sample_rate_hz, len(out)

    t0 = time.monotonic()
    with ThreadPoolExecutor(in_flight) as pool:
        done = list(pool.map(one, batches))
    wall = time.monotonic() - t0
    return sum(a for a, _ in done) / wall, sum(n for _, n in done)


def balance(head: Any, reqs: list[Any]) -> None:
    """The head's load per role as a run gives it, and rebalancing steps until settled (the
    heartbeat's work, done at once; as in bench_cluster.py, at any imbalance), so that the
    figure measures the nodes, not how 8 roles happen to hash onto 2 workers."""
    from collections import Counter

    head.note_load(dict(Counter(r.role for r in reqs)))
    head.rebalancer.threshold, head.rebalancer.settle = 0.0, 0.005
    for _ in range(100):
        if not head.rebalance(decay=False).moves:
            break
    head.settle(60)


def scaling(address: str, repeats: int, n_lines: int) -> list[dict[str, Any]]:
    from engine.cluster.connect import ClusterSynthesizer, RayCluster

    rows = []
    for nodes in (1, 2):
        if nodes == 2:
            start_node(2, address)
        cluster = RayCluster(heartbeat_s=None, neural=True)
        try:
            assert len(cluster.head.workers) == nodes, (
                f"{len(cluster.head.workers)} workers for {nodes} nodes"
            )
            for backend in ("espeak", "piper"):
                synth = ClusterSynthesizer(cluster, backend, owns=False)
                pump(synth, requests(len(ROLES), backend, 99), 2 * nodes)  # every worker has its voice loaded
                n = n_lines * (4 if backend == "espeak" else 1)  # espeak-ng: a run long enough to time
                balance(cluster.head, requests(n, backend, 0))
                for rep in range(repeats):
                    before = {w: s.lines for w, s in cluster.head.workers.items()}
                    speed, back = pump(synth, requests(n, backend, rep), 2 * nodes)
                    per = sorted(
                        (s.lines - before.get(w, 0) for w, s in cluster.head.workers.items()), reverse=True
                    )
                    rows.append({"backend": backend, "nodes": nodes, "run": rep, "lines": n,
                                 "back": back, "audio_s_per_s": speed,
                                 "lines_per_worker": "/".join(map(str, per))})  # fmt: skip
                    print(f"  {backend} on {nodes} node(s), run {rep}: {speed:.2f} audio s/s, lines per "
                          f"worker {rows[-1]['lines_per_worker']}", flush=True)  # fmt: skip
        finally:
            cluster.close()
    return rows


def kill_runs(repeats: int, n_lines: int) -> list[dict[str, Any]]:
    from engine.cluster.connect import ClusterSynthesizer, RayCluster
    from engine.cluster.head import ClusterHead

    rows = []
    for rep in range(repeats):
        cluster = RayCluster(ClusterHead(ttl_s=5.0), heartbeat_s=None, neural=True)
        synth = ClusterSynthesizer(cluster, "piper")
        head = cluster.head
        killed: list[int] = []

        def kill_one(head: ClusterHead = head, killed: list[int] = killed) -> None:
            if not killed and head.lines_done >= n_lines // 3:
                victim = max(head.workers.values(), key=lambda w: w.load_lines)
                killed.append(victim.pid)
                os.kill(victim.pid, signal.SIGKILL)

        try:
            pump(synth, requests(16, "piper", 99), 4)
            first = head.lines_done
            _, back = pump(synth, requests(n_lines, "piper", 10 + rep), 4, on_batch=kill_one)
            head.settle(30)
            rows.append({"run": rep, "lines": n_lines, "back": back, "lost": n_lines - back,
                         "exactly_once": head.lines_done - first == n_lines, "resent": head.resent_lines,
                         "duplicates_dropped": head.duplicates_dropped, "killed": len(killed)})  # fmt: skip
            cluster.refresh()  # the killed node's replacement (a new worker id) for the next run
        finally:
            synth.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lines", type=int, default=120, help="Piper lines per run (espeak-ng: 4x)")
    args = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("taskset") is None:
        sys.exit("bench_cluster_nodes: needs root, iproute2 and taskset (network namespaces)")
    sys.path.insert(0, str(ROOT))
    os.environ.update({k: v for k, v in ENV.items() if k.startswith(("RAY_", "TROUPE_"))})
    import ray

    from engine.cluster.connect import connect

    network_down(2)  # what an interrupted run left
    network_up(2)
    try:
        address = start_head()
        start_node(1, address)
        connect(address)
        scale = scaling(address, args.repeats, args.lines)
        kills = kill_runs(args.repeats, args.lines)
        ray.shutdown()
    finally:
        network_down(2)
    summary = []
    for backend in ("espeak", "piper"):
        one = statistics.median(
            r["audio_s_per_s"] for r in scale if r["backend"] == backend and r["nodes"] == 1
        )
        two = [r["audio_s_per_s"] for r in scale if r["backend"] == backend and r["nodes"] == 2]
        effs = [t / (2 * one) for t in two]
        summary.append({"backend": backend, "nodes": 2, "audio_s_per_s_1": one,
                        "audio_s_per_s_2": statistics.median(two), "efficiency": statistics.median(effs),
                        "efficiency_min": min(effs), "efficiency_max": max(effs)})  # fmt: skip
    print("\nreal nodes (one core and one network namespace each), median of", args.repeats)
    print(table(summary, ["backend", "nodes", "audio_s_per_s_1", "audio_s_per_s_2", "efficiency",
                          "efficiency_min", "efficiency_max"]))  # fmt: skip
    print("\na worker killed a third of the way through (target: 0 lost, exactly once)")
    print(table(kills, ["run", "lines", "back", "lost", "exactly_once", "resent", "duplicates_dropped"]))
    real = {"setup": "ray start per node, each in its own network namespace and pinned to one core; head "
            "--num-cpus 0", "lines": args.lines, "repeats": args.repeats, "runs": scale,
            "efficiency": summary, "kill": kills}  # fmt: skip
    path = save("bench_cluster", {**saved("bench_cluster"), "real": real})
    print(f"\nload average {os.getloadavg()[0]:.2f}; wrote {path}")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
