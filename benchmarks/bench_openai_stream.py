"""OpenAI-compatible speech on a real uvicorn (127.0.0.1), through the `openai` SDK:
(A/B) time to the first audio byte, streamed (the default) against whole-file
(`stream: false`), for a 12-sentence input in mp3 and pcm; and (bounds) what 2,000
`PUT /v1/roles` from clients leave behind (roles kept, size of /metrics).

    python benchmarks/bench_openai_stream.py [--repeats 3] [--puts 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx
import openai
from _common import save, serve_in_thread, table

from engine.server import SpeechService, SpeechSettings

TEXT = " ".join(f"This is sentence number {k} of the evening broadcast." for k in range(12))
TARGET_RATIO = 0.33
"""Streamed first byte within a third of the whole file's."""


def first_byte_s(client: openai.OpenAI, fmt: str, stream: bool) -> float:
    t0 = time.perf_counter()
    with client.audio.speech.with_streaming_response.create(
        model="tts-1",
        voice="alloy",
        input=TEXT,
        response_format=fmt,  # type: ignore[arg-type]
        extra_body={"stream": stream},
    ) as r:
        for piece in r.iter_bytes():
            if piece:
                return time.perf_counter() - t0
    raise RuntimeError("no audio came")


def ab(url: str, repeats: int) -> list[dict[str, object]]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=120)
    first_byte_s(client, "pcm", True)  # warm-up
    rows = []
    for fmt in ("mp3", "pcm"):
        streamed, whole = [], []
        for _ in range(repeats):  # interleaved, so drift hits both alike
            streamed.append(first_byte_s(client, fmt, True))
            whole.append(first_byte_s(client, fmt, False))
        ratios = [s / w for s, w in zip(streamed, whole, strict=True)]
        rows.append({"format": fmt, "streamed_ms": 1000 * statistics.median(streamed),
                     "whole_ms": 1000 * statistics.median(whole), "ratio": statistics.median(ratios),
                     "ratio_spread": max(ratios) - min(ratios), "target_ratio": TARGET_RATIO})  # fmt: skip
    return rows


def role_flood(url: str, service: SpeechService, puts: int) -> dict[str, object]:
    before = len(httpx.get(f"{url}/metrics").content)
    codes: dict[int, int] = {}
    with httpx.Client(timeout=30) as c:
        for k in range(puts):
            code = c.put(f"{url}/v1/roles/flood{k}", json={"weight": 2}).status_code
            codes[code] = codes.get(code, 0) + 1
            if k % 100 == 0:  # some traffic for the roles that were admitted
                c.get(f"{url}/tts", params={"role": "flood0", "text": "Hello."})
    after = len(httpx.get(f"{url}/metrics").content)
    return {"puts": puts, "ok": codes.get(200, 0), "refused_429": codes.get(429, 0),
            "client_roles_kept": len(service.client_roles), "cap": service.client_roles.cap,
            "metrics_bytes_before": before, "metrics_bytes_after": after}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--puts", type=int, default=2000)
    args = p.parse_args()
    service = SpeechService(SpeechSettings(neural=False))
    server, thread, url = serve_in_thread(service)
    try:
        rows = ab(url, args.repeats)
        flood = role_flood(url, service, args.puts)
    finally:
        server.should_exit = True
        thread.join(10)
        service.close()
    print(table(rows, ["format", "streamed_ms", "whole_ms", "ratio", "ratio_spread", "target_ratio"]))
    print()
    print(table([flood], list(flood)))
    path = save("bench_openai_stream", {"repeats": args.repeats, "first_byte": rows, "role_flood": flood})
    print(f"\n{path}")


if __name__ == "__main__":
    main()
