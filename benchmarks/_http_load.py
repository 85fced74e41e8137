"""A lean HTTP/1.1 load generator, in the model of `ab -k -c C`: C clients, each on its own
keep-alive connection, sending its next request as soon as the last answer is read.

It speaks raw asyncio streams: a general-purpose client (httpx) spends several milliseconds
of Python per request, so with 200 clients in one process on a 2-core machine the client,
not the server, set the pace (connections went idle in waves while the server's queue was
empty). This one costs a few tens of microseconds per request.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlencode

Job = tuple[str, str, dict[str, str]]
"""(tag, path, query)"""


@dataclass(frozen=True)
class Answer:
    tag: str
    """What the caller grouped the request by (a role)."""
    ms: float
    status: int
    """HTTP status; 0 when the connection failed (reset, closed before an answer)."""
    body_bytes: int


async def _read_body(reader: asyncio.StreamReader, head: bytes) -> int:
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        if b":" in line:
            k, v = line.split(b":", 1)
            headers[k.strip().lower()] = v.strip()
    if b"content-length" in headers:
        n = int(headers[b"content-length"])
        await reader.readexactly(n)
        return n
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        total = 0
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            total += size
            if size == 0:
                return total
    raise ValueError("an answer without a length")


async def _client(host: str, port: int, jobs: deque[Job], out: list[Answer]) -> None:
    conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while jobs:
        tag, path, params = jobs.popleft()
        t0 = time.perf_counter()
        status, size = 0, 0
        try:
            if conn is None:
                conn = await asyncio.open_connection(host, port)
            reader, writer = conn
            writer.write(f"GET {path}?{urlencode(params)} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            size = await _read_body(reader, head)
            if b"connection: close" in head.lower():
                writer.close()
                conn = None
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, IndexError):
            status = 0
            if conn is not None:
                conn[1].close()
            conn = None
        out.append(Answer(tag, (time.perf_counter() - t0) * 1000, status, size))
    if conn is not None:
        conn[1].close()


async def load(url: str, jobs: Iterable[Job], concurrency: int) -> tuple[list[Answer], float]:
    """Send `jobs` ((tag, path, query)) over `concurrency` connections to `url`
    ("http://host:port"); returns every answer and the wall time."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    queue = deque(jobs)
    out: list[Answer] = []
    t0 = time.perf_counter()
    await asyncio.gather(*(_client(host, int(port), queue, out) for _ in range(concurrency)))
    return out, time.perf_counter() - t0
