"""Helpers for benchmark scripts: result tables and JSON files under benchmarks/results/."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT))


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_avg_1m_at_end": os.getloadavg()[0],
        # NB: a load well above the core count means other work shared the machine: the
        # A/B ratios of one run still compare like with like, absolute times do not
    }


def descendants(pid: int) -> list[int]:
    """The processes `pid` started, and theirs, and so on (from /proc; gone ones skipped)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    family: list[int] = []
    frontier = [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        family += kids
        frontier += kids
    return family


def rss_kib(pid: int) -> int:
    """Resident memory of one process, KiB (from /proc); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
    except OSError:
        return 0


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    def fmt(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[k]) for row in cells)) for k, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def saved(name: str) -> dict[str, Any]:
    """What `save` last wrote for `name` (empty if nothing): a run of one section keeps the rest."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text())
    return {k: v for k, v in data.items() if k not in ("benchmark", "machine")}


def save(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    data = {"benchmark": name, "machine": machine(), **data}
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def serve_in_thread(service: Any) -> tuple[Any, Any, str]:
    """A real uvicorn for `service` on an ephemeral 127.0.0.1 port, in a thread of this
    process (so a benchmark can read the engine's own records): (server, thread, url)."""
    import socket
    import threading

    import uvicorn

    from engine.server.http import create_app
    from engine.server.limits import ServerLimits, uvicorn_config

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn_config(create_app(service), "127.0.0.1", 0, ServerLimits(), log_level="warning",
                            lifespan="off")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


def start_jack() -> subprocess.Popen[bytes] | None:
    """A JACK dummy server at 48 kHz, 256 frames a period, when none runs (None: one was
    running already); the caller stops the one it got."""
    import jack

    try:
        jack.Client("troupe-probe", no_start_server=True).close()
        return None
    except jack.JackOpenError:
        pass
    proc = subprocess.Popen(["jackd", "--no-realtime", "-d", "dummy", "-r", "48000", "-p", "256"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    for _ in range(50):
        time.sleep(0.2)
        try:
            jack.Client("troupe-probe", no_start_server=True).close()
            return proc
        except jack.JackOpenError:
            continue
    raise SystemExit("jackd did not start")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_serve(extra: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """`main.py serve` on a free port, the take cache off (every request voiced), once it
    answers /healthz: (the process, its URL). The caller stops it."""
    import httpx

    port = free_port()
    env = {**os.environ, "TROUPE_TAKE_CACHE": "off"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "serve", "--port", str(port), *extra],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("the server did not start")
