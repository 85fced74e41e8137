"""Clients that stop reading: what they cost the server in memory, and that they are cut off.

Each pass starts a real `main.py serve` on 127.0.0.1 (espeak-ng, 2 processes), reads one
answer whole to warm it up, then opens 30 clients that each ask `POST /v1/audio/speech` for
a 4,096-character text (streamed 16-bit PCM, OpenAI's limit) and never read a byte (a 4 KiB
receive buffer). The server's resident memory is sampled every 0.25 s for 25 s; the figure
is its growth over the warm server (at the end of the window and at its peak). Two servers,
order alternating over 3 repeats:

- `paced` (the defaults): a streamed answer queues at most 2 sentences beyond the one
  being sent, and a client that takes nothing for 30 s is cut off (the rest withdrawn);
  after the window the pass waits for the cut-off and reads what each client was sent.
- `all_at_once` (`--stream-ahead 0 --send-timeout 3600`, the behaviour before): every
  sentence queued at once, each answer held whole until read, never cut off.
- `ahead_1` (`--stream-ahead 1`): the next sentence queued only once the last was sent.

Each pass also times a reader that takes the answer as fast as it can (the same text, mp3,
median of 3 reads on the warm server): what pacing costs a client that keeps up.

Target: 30 stalled clients grow the server by at most 50 MB (paced); every stalled client
cut off within the send timeout (+5 s).

    python benchmarks/bench_server_stalled.py
"""

from __future__ import annotations

import contextlib
import json
import socket
import statistics
import subprocess
import time
from typing import Any

import httpx
from _common import rss_kib, save, start_serve, table

CLIENTS = 30
WINDOW_S = 25.0
SEND_TIMEOUT_S = 30.0
REPEATS = 3
TARGET_GROWTH_MB = 50.0
CONFIGS = {
    "paced": [],
    "ahead_1": ["--stream-ahead", "1", "--send-timeout", "3600"],
    "all_at_once": ["--stream-ahead", "0", "--send-timeout", "3600"],
}
SENTENCES = [
    "The lamp room smelled of paraffin and salt, and the glass was cold under her hand.",
    "Somewhere below, the keeper's radio muttered the shipping forecast to nobody.",
    "She counted the seconds between the flashes, the way her father had taught her.",
    "Out past the reef a single light moved north, too slow for a ferry.",
    "When the fog came in, it came all at once, and the beam went soft and grey.",
]


def text(chars: int = 4096) -> str:
    words: list[str] = []
    k = 0
    while len(" ".join(words)) < chars:
        words.append(SENTENCES[k % len(SENTENCES)])
        k += 1
    return " ".join(words)[:chars].rsplit(" ", 1)[0] + "."


def stalled_client(port: int, body: dict[str, Any]) -> socket.socket:
    """A client that sends its request and never reads (a 4 KiB receive buffer)."""
    data = json.dumps(body).encode()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(data), data))  # fmt: skip
    return s


def drained(s: socket.socket, wait_s: float) -> tuple[int, bool]:
    """Read what the server sent: (bytes, whether it closed the connection)."""
    s.settimeout(wait_s)
    got = 0
    try:
        while chunk := s.recv(1 << 16):
            got += len(chunk)
    except TimeoutError:
        return got, False
    except ConnectionResetError:
        return got, True
    return got, True


def one_pass(name: str, extra: list[str]) -> dict[str, Any]:
    proc, url = start_serve(["--processes", "2", *extra])
    port = int(url.rsplit(":", 1)[1])
    body = {"model": "tts-1", "voice": "en-us", "input": text(), "response_format": "pcm"}
    try:
        with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/audio/speech", json=body, timeout=300) as r:
            whole_bytes = sum(len(c) for c in r.iter_bytes())  # warm up; the answer's full length
        fast = {**body, "response_format": "mp3"}
        reads = []
        for _ in range(3):
            t0 = time.monotonic()
            url = f"http://127.0.0.1:{port}/v1/audio/speech"
            with httpx.stream("POST", url, json=fast, timeout=300) as r:
                for _chunk in r.iter_bytes():
                    pass
            reads.append(time.monotonic() - t0)
        time.sleep(2)
        base = rss_kib(proc.pid)
        clients = [stalled_client(port, body) for _ in range(CLIENTS)]
        start = time.monotonic()
        samples: list[int] = []
        while time.monotonic() - start < WINDOW_S:
            samples.append(rss_kib(proc.pid))
            time.sleep(0.25)
        row: dict[str, Any] = {
            "config": name,
            "base_mb": round(base / 1024, 1),
            "growth_mb": round((samples[-1] - base) / 1024, 1),
            "peak_growth_mb": round((max(samples) - base) / 1024, 1),
            "fast_read_s": round(statistics.median(reads), 3),
        }
        if name == "paced":
            time.sleep(max(0.0, SEND_TIMEOUT_S + 5 - (time.monotonic() - start)))
            reads = [drained(s, 2.0) for s in clients]
            row["cut_off"] = sum(closed for _, closed in reads)
            row["sent_share"] = round(statistics.median(got for got, _ in reads) / whole_bytes, 3)
            row["after_cut_off_growth_mb"] = round((rss_kib(proc.pid) - base) / 1024, 1)
        for s in clients:
            s.close()
        return row
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()


def main() -> None:
    rows = []
    order = list(CONFIGS)
    for k in range(REPEATS):
        for name in order if k % 2 == 0 else order[::-1]:
            row = one_pass(name, CONFIGS[name])
            row["repeat"] = k + 1
            rows.append(row)
            print(row, flush=True)
    summary = {}
    for name in CONFIGS:
        mine = [r for r in rows if r["config"] == name]
        summary[name] = {
            "growth_mb_median": statistics.median(r["growth_mb"] for r in mine),
            "growth_mb_range": [min(r["growth_mb"] for r in mine), max(r["growth_mb"] for r in mine)],
            "peak_growth_mb_median": statistics.median(r["peak_growth_mb"] for r in mine),
            "fast_read_s_median": statistics.median(r["fast_read_s"] for r in mine),
        }
    paced = [r for r in rows if r["config"] == "paced"]
    summary["paced"]["cut_off_all"] = all(r["cut_off"] == CLIENTS for r in paced)
    summary["paced"]["target_growth_mb"] = TARGET_GROWTH_MB
    summary["paced"]["met"] = summary["paced"]["peak_growth_mb_median"] <= TARGET_GROWTH_MB and bool(
        summary["paced"]["cut_off_all"]
    )
    cols = ["config", "repeat", "base_mb", "growth_mb", "peak_growth_mb", "fast_read_s", "cut_off",
            "sent_share", "after_cut_off_growth_mb"]  # fmt: skip
    print(table(rows, cols))
    for name, s in summary.items():
        print(f"{name}: growth {s['growth_mb_median']} MB (range {s['growth_mb_range']}), peak "
              f"{s['peak_growth_mb_median']} MB, fast reader {s['fast_read_s_median']} s"
              + (f"; target <= {TARGET_GROWTH_MB} MB, every client "
              f"cut off: {s['cut_off_all']}" if name == "paced" else ""))  # fmt: skip
    save("bench_server_stalled", {"clients": CLIENTS, "window_s": WINDOW_S, "text_chars": len(text()),
                                  "rows": rows, "summary": summary})  # fmt: skip


if __name__ == "__main__":
    main()
