"""Role-aware scheduling versus FIFO under the same load, in one run.

The load: 200 requests submitted at once (concurrent clients and a show's next lines)
over 8 roles with different weights: a lead, three supporting roles, three minor roles and
a background narrator. Each request has a deadline; arrival order is random with respect to
deadlines. Two backends:
- the real espeak-ng process pool (2 workers), and
- a service-time model of a batched GPU backend (max batch 16): a batch takes
  `overhead + per_item * n + per_audio_s * longest_audio_s` seconds (constants below, taken
  as plausible for an 82M-parameter TTS model on a data-centre GPU; not a measurement).
Deadlines are scaled to each backend's measured serial capacity so that the load is tight
(total work about 1.3x the time available), the regime where policy matters.

    python benchmarks/bench_scheduler_ab.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import random
import statistics
import time
from collections.abc import Sequence

import numpy as np
from _common import save, table

from engine.core.errors import Overloaded
from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.scheduler import Backend, PolicyConfig, Request, RequestClass, Scheduler, SchedulerConfig, State
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.pool import EspeakPool

ROLES = {  # role: (weight, share of the lines)
    "LEAD": (10.0, 0.25), "RIVAL": (4.0, 0.13), "MENTOR": (3.0, 0.11), "FRIEND": (3.0, 0.11),
    "GUARD": (1.5, 0.1), "CLERK": (1.0, 0.08), "VOICE": (1.0, 0.07), "NARRATOR": (0.5, 0.15),
}  # fmt: skip
POLICY_CONFIG = PolicyConfig()
"""The role-aware policy's tuning (`--fifo-tolerance`, `--fifo-grace`, `--lead-share`)."""
_PROSE = "the night was long and the harbour lights burned low while we waited for word from the ship"
WORDS = (_PROSE + " that never came home to the quiet town by the sea").split()
N_REQUESTS = 200


class GpuServiceModel:
    """A batched neural backend's service time, as a model (sleeps; returns silence)."""

    name = "gpu_model"
    max_batch = 16
    sample_rate_hz = SAMPLE_RATE_HZ
    OVERHEAD_S = 0.012
    PER_ITEM_S = 0.0015
    PER_AUDIO_S = 0.004

    def voices(self) -> list[VoiceInfo]:
        return []

    def _audio_s(self, r: SynthRequest) -> float:
        return len(r.text.split()) * 60 / 175 + 0.2

    def synthesize(self, batch: Sequence[SynthRequest]) -> list[Mono]:
        longest = max(self._audio_s(r) for r in batch)
        time.sleep(self.OVERHEAD_S + self.PER_ITEM_S * len(batch) + self.PER_AUDIO_S * longest)
        return [np.zeros(int(self._audio_s(r) * SAMPLE_RATE_HZ), np.float32) for r in batch]

    def stream(self, r: SynthRequest):  # type: ignore[no-untyped-def]
        yield from self.synthesize([r])

    def close(self) -> None:
        pass


def make_load(seed: int, span_s: float) -> list[tuple[str, str, float]]:
    """(role, text, deadline offset s) for each request, in a random arrival order."""
    rng = random.Random(seed)
    roles = list(ROLES)
    shares = [ROLES[r][1] for r in roles]
    load = []
    for _ in range(N_REQUESTS):
        role = rng.choices(roles, shares)[0]
        text = " ".join(rng.choices(WORDS, k=rng.randint(4, 16))).capitalize() + "."
        load.append((role, text, rng.uniform(0.15, 1.0) * span_s))
    return load


def run(policy: str, backend: Backend, load: list[tuple[str, str, float]],
        give_up_s: float = math.inf) -> dict[str, float | str]:  # fmt: skip
    """One pass of `load`. Requests carry `give_up_s` (clients that wait that long past the
    deadline at most): role-aware refuses or sheds what it cannot voice in time, FIFO (the
    baseline) queues everything. A refused or shed request counts as a miss; latency
    figures are over the requests served."""
    config = SchedulerConfig(policy=policy, fallback_backend=None, policy_config=POLICY_CONFIG)
    sched = Scheduler({backend.name: backend}, config)
    for role, (w, _) in ROLES.items():
        sched.set_weight(role, w)
    busy = [0.0]
    sched.on_batch = lambda b: busy.__setitem__(0, busy[0] + (b.t_end - b.t_start))
    t0 = time.monotonic()
    reqs = [Request(role, text, Voice(backend=backend.name, weight=ROLES[role][0]), t0 + d,
                    RequestClass.SCRIPTED, give_up_s=give_up_s) for role, text, d in load]  # fmt: skip
    admitted = []
    for r in reqs:
        with contextlib.suppress(Overloaded):  # refused: counted as a miss below
            admitted.append(sched.submit(r))
    while any(r.state in (State.QUEUED, State.DISPATCHED) for r in admitted):
        sched.wake.wait(0.05)  # NB: before the tick, so the loop ends with the last completion
        sched.tick()
    wall = time.monotonic() - t0
    served = [r for r in admitted if r.state is State.DONE]
    lat = np.array([r.t_done - r.t_enqueued for r in served]) * 1000
    lead = np.array([r.t_done - r.t_enqueued for r in served if r.role == "LEAD"]) * 1000
    missed = [r for r in reqs if r.state is not State.DONE or r.t_done > r.deadline_s]
    return {
        "policy": policy, "backend": backend.name, "served": len(served),
        "mean_ms": float(lat.mean()), "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)), "p99_ms": float(np.percentile(lat, 99)),
        "lead_p50_ms": float(np.percentile(lead, 50)), "lead_p95_ms": float(np.percentile(lead, 95)),
        "misses": len(missed), "lead_misses": sum(r.role == "LEAD" for r in missed),
        "throughput_rps": len(served) / wall,
        "utilisation": busy[0] / (wall * backend.workers),
        "mean_batch": sched.stats.mean_batch,
    }  # fmt: skip


RATIOS = {"lead_p95_ratio": "lead_p95_ms", "mean_ratio": "mean_ms", "p95_ratio": "p95_ms",
          "p99_ratio": "p99_ms", "misses_ratio": "misses"}  # fmt: skip
TARGETS = {"lead_p95_ratio": 0.4, "mean_ratio": 1.0, "p95_ratio": 1.0, "p99_ratio": 1.0, "misses_ratio": 1.0}


def _ratio_spread(per_policy: dict[str, list[dict[str, float | str]]], key: str) -> dict[str, float]:
    """Role-aware over FIFO for each load (same load, same run), as median, min and max."""
    ratios = [float(ra[key]) / max(1e-9, float(f[key]))
              for f, ra in zip(per_policy["fifo"], per_policy["role_aware"], strict=True)]  # fmt: skip
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def capacity_s(backend: Backend, load: list[tuple[str, str, float]]) -> float:
    """Time the backend needs for the whole load when kept busy (a FIFO pass, after one to
    let its measured speed settle, as it has in a server that has been running)."""
    run("fifo", backend, [(r, txt, 1e6) for r, txt, _ in load])
    t = time.monotonic()
    run("fifo", backend, [(r, txt, 1e6) for r, txt, _ in load])
    return time.monotonic() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument(
        "--tightness",
        type=float,
        nargs="+",
        default=[0.6, 0.8, 1.3, 2.0],
        help="work / time available; the first is the headline figure",
    )
    ap.add_argument("--backends", nargs="+", default=["espeak", "gpu_model"])
    ap.add_argument("--give-up", type=float, default=0.1,
                    help="how long past its deadline a client waits (share of deadline span)")  # fmt: skip
    ap.add_argument("--fifo-tolerance", type=float, default=PolicyConfig.fifo_tolerance)
    ap.add_argument("--fifo-grace", type=float, default=PolicyConfig.fifo_grace_s, help="seconds")
    ap.add_argument("--lead-share", type=float, default=PolicyConfig.lead_fifo_share)
    args = ap.parse_args()
    global POLICY_CONFIG
    POLICY_CONFIG = PolicyConfig(fifo_tolerance=args.fifo_tolerance, fifo_grace_s=args.fifo_grace,
                                 lead_fifo_share=args.lead_share)  # fmt: skip
    pool = EspeakPool(2)
    pool.synthesize([SynthRequest("warm up", Voice())] * 2)
    backends = [b for b in (Backend(pool), Backend(GpuServiceModel())) if b.name in args.backends]
    rows: list[dict[str, float | str]] = []
    summary = {}
    for backend in backends:
        cap = capacity_s(backend, make_load(0, 1.0))
        for tightness in args.tightness:
            span = cap / tightness
            per_policy: dict[str, list[dict[str, float | str]]] = {"fifo": [], "role_aware": []}
            for rep in range(args.repeats):
                load = make_load(rep + 1, span)
                order = ("fifo", "role_aware") if rep % 2 == 0 else ("role_aware", "fifo")  # no order bias
                for policy in order:  # same load, same run, both policies
                    per_policy[policy].append(run(policy, backend, load, args.give_up * span))
            for policy, results in per_policy.items():
                med = {k: statistics.median([float(r[k]) for r in results]) for k in results[0]
                       if isinstance(results[0][k], float | int)}  # fmt: skip
                rows.append({"policy": policy, "backend": backend.name, "load": tightness, **med})
            summary[f"{backend.name}@{tightness}"] = {
                "capacity_s": cap, "deadline_span_s": span,
                **{name: _ratio_spread(per_policy, key) for name, key in RATIOS.items()},
            }  # fmt: skip
    pool.close()
    cols = [
        "backend",
        "load",
        "policy",
        "served",
        "mean_ms",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "lead_p50_ms",
        "lead_p95_ms",
        "misses",
        "lead_misses",
        "throughput_rps",
        "utilisation",
        "mean_batch",
    ]
    print(table(rows, cols))
    print("role-aware / FIFO, median of the per-load ratios [min, max]; target beside each")
    for name, s in summary.items():
        parts = [f"{r} {s[r]['median']:.2f} [{s[r]['min']:.2f}, {s[r]['max']:.2f}] (<= {TARGETS[r]})"
                 for r in RATIOS]  # fmt: skip
        print(f"{name}: " + "; ".join(parts))
    print("the design document (200 concurrent, 8 roles): mean -68%, p95 -63% against FIFO; here: "
          + ", ".join(f"{n} mean {100 * (s['mean_ratio']['median'] - 1):+.0f}% "
                      f"p95 {100 * (s['p95_ratio']['median'] - 1):+.0f}%"
                      for n, s in summary.items()))  # fmt: skip
    result = {"args": vars(args), "rows": rows, "summary": summary, "repeats": args.repeats}
    print(f"medians of {args.repeats} loads; wrote {save('bench_scheduler_ab', result)}")


if __name__ == "__main__":
    main()
