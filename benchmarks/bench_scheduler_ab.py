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

    python benchmarks/bench_scheduler_ab.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence

import numpy as np
from _common import save, table

from engine.core.types import SAMPLE_RATE_HZ, Voice
from engine.scheduler import Backend, Request, RequestClass, Scheduler, SchedulerConfig, State
from engine.synthesis.base import Mono, SynthRequest, VoiceInfo
from engine.synthesis.pool import EspeakPool

ROLES = {  # role: (weight, share of the lines)
    "LEAD": (10.0, 0.25), "RIVAL": (4.0, 0.13), "MENTOR": (3.0, 0.11), "FRIEND": (3.0, 0.11),
    "GUARD": (1.5, 0.1), "CLERK": (1.0, 0.08), "VOICE": (1.0, 0.07), "NARRATOR": (0.5, 0.15),
}  # fmt: skip
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


def run(policy: str, backend: Backend, load: list[tuple[str, str, float]]) -> dict[str, float | str]:
    sched = Scheduler({backend.name: backend}, SchedulerConfig(policy=policy, fallback_backend=None))
    for role, (w, _) in ROLES.items():
        sched.set_weight(role, w)
    busy = [0.0]
    sched.on_batch = lambda b: busy.__setitem__(0, busy[0] + (b.t_end - b.t_start))
    t0 = time.monotonic()
    reqs = [Request(role, text, Voice(backend=backend.name, weight=ROLES[role][0]), t0 + d,
                    RequestClass.SCRIPTED) for role, text, d in load]  # fmt: skip
    for r in reqs:
        sched.submit(r)
    while any(r.state in (State.QUEUED, State.DISPATCHED) for r in reqs):
        sched.tick()
        sched.wake.wait(0.05)
    wall = time.monotonic() - t0
    lat = np.array([r.t_done - r.t_enqueued for r in reqs]) * 1000
    lead = np.array([r.t_done - r.t_enqueued for r in reqs if r.role == "LEAD"]) * 1000
    misses = sum(r.t_done > r.deadline_s for r in reqs)
    lead_misses = sum(r.t_done > r.deadline_s for r in reqs if r.role == "LEAD")
    return {
        "policy": policy, "backend": backend.name,
        "mean_ms": float(lat.mean()), "p50_ms": float(np.percentile(lat, 50)),
        "p95_ms": float(np.percentile(lat, 95)), "p99_ms": float(np.percentile(lat, 99)),
        "lead_p50_ms": float(np.percentile(lead, 50)), "lead_p95_ms": float(np.percentile(lead, 95)),
        "misses": misses, "lead_misses": lead_misses,
        "throughput_rps": N_REQUESTS / wall,
        "utilisation": busy[0] / (wall * backend.slots),
        "mean_batch": float(np.mean(sched.stats.batch_sizes)),
    }  # fmt: skip


def capacity_s(backend: Backend, load: list[tuple[str, str, float]]) -> float:
    """Time the backend needs for the whole load when kept busy (a FIFO pass)."""
    t = time.monotonic()
    run("fifo", backend, [(r, txt, 1e6) for r, txt, _ in load])
    return time.monotonic() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--tightness",
        type=float,
        nargs="+",
        default=[0.6, 0.8, 1.3],
        help="work / time available; the first is the headline figure",
    )
    args = ap.parse_args()
    pool = EspeakPool(2)
    pool.synthesize([SynthRequest("warm up", Voice())] * 2)
    backends = [Backend(pool), Backend(GpuServiceModel())]
    rows: list[dict[str, float | str]] = []
    summary = {}
    for backend in backends:
        cap = capacity_s(backend, make_load(0, 1.0))
        for tightness in args.tightness:
            span = cap / tightness
            per_policy: dict[str, list[dict[str, float | str]]] = {"fifo": [], "role_aware": []}
            for rep in range(args.repeats):
                load = make_load(rep + 1, span)
                for policy in ("fifo", "role_aware"):  # same load, same run, both policies
                    per_policy[policy].append(run(policy, backend, load))
            for policy, results in per_policy.items():
                med = {k: statistics.median([float(r[k]) for r in results]) for k in results[0]
                       if isinstance(results[0][k], float | int)}  # fmt: skip
                rows.append({"policy": policy, "backend": backend.name, "load": tightness, **med})
            f, ra = rows[-2], rows[-1]
            summary[f"{backend.name}@{tightness}"] = {
                "capacity_s": cap, "deadline_span_s": span,
                "lead_p95_ratio": float(ra["lead_p95_ms"]) / float(f["lead_p95_ms"]),
                "misses_ratio": float(ra["misses"]) / max(1.0, float(f["misses"])),
                "throughput_ratio": float(ra["throughput_rps"]) / float(f["throughput_rps"]),
            }  # fmt: skip
    pool.close()
    cols = [
        "backend",
        "load",
        "policy",
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
    for name, s in summary.items():
        print(f"{name}: lead p95 role-aware/FIFO = {s['lead_p95_ratio']:.2f} (target <= 0.4), "
              f"misses ratio = {s['misses_ratio']:.2f} (target <= 0.2), "
              f"throughput ratio = {s['throughput_ratio']:.2f} (target >= 1.0)")  # fmt: skip
    print(
        f"medians of {args.repeats} loads; wrote "
        f"{save('bench_scheduler_ab', {'rows': rows, 'summary': summary, 'repeats': args.repeats})}"
    )


if __name__ == "__main__":
    main()
