"""GPU figures for metrics (allocated, reserved, largest free block, fragmentation) and the
memory estimate used to split batches that would not fit. torch is imported lazily, so
this module costs nothing where torch is absent."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

BYTES_PER_FRAME = 720_000
"""Peak activation bytes per duration frame of one item in fp32 (the decoder's generator
dominates). Fitted to measured peaks of the batched graph with its vectorised norms (what
a GPU runs), in fp32 on the CPU: 718,805 B/frame, 21,841 B/token and 31 MiB overhead, worst
error 0.4% over 10 batches of 2 and 4 items, 48 to 489 frames each
(`python benchmarks/bench_batch_memory.py`). One item runs without frame masks and needs up
to a third less. Still to confirm on a GPU, where the caching allocator and cuDNN add to it
(`benchmarks/gpu_check.sh` prints the peak beside this estimate)."""
BYTES_PER_TOKEN = 22_000
"""ALBERT, duration encoder and text encoder activations per token of one item (fitted as above)."""
BATCH_OVERHEAD_BYTES = 64 << 20
"""Per batch: the 31 MiB fitted above, and room for cuDNN and cuFFT workspaces."""


def estimate_batch_bytes(n_items: int, max_tokens: int, max_frames: int, bytes_per_value: int = 4) -> int:
    """Peak memory of one padded batch (every item padded to the longest)."""
    per_item = BYTES_PER_FRAME * max_frames + BYTES_PER_TOKEN * max_tokens
    return BATCH_OVERHEAD_BYTES + n_items * per_item * bytes_per_value // 4


def split_to_fit(sizes: list[tuple[int, int]], free_bytes: int, bytes_per_value: int = 4) -> list[list[int]]:
    """Indices of (tokens, frames) items in groups whose estimate fits in `free_bytes`."""
    groups: list[list[int]] = []
    cur: list[int] = []
    for k in sorted(range(len(sizes)), key=lambda i: sizes[i][1]):
        trial = [*cur, k]
        tokens = max(sizes[i][0] for i in trial)
        frames = max(sizes[i][1] for i in trial)
        if cur and estimate_batch_bytes(len(trial), tokens, frames, bytes_per_value) > free_bytes:
            groups.append(cur)
            trial = [k]
        cur = trial
    if cur:
        groups.append(cur)
    return groups


@dataclass(frozen=True)
class GpuMemory:
    device: str
    allocated_bytes: int
    reserved_bytes: int
    total_bytes: int
    free_bytes: int
    largest_free_block_bytes: int
    fragmentation: float
    """1 - largest free block / all free bytes inside reserved segments."""
    utilisation_pct: float | None


def gpu_memory(index: int = 0) -> GpuMemory | None:
    """Figures of CUDA device `index`, or None without torch or a GPU. Torch is not imported
    here: where no voice has loaded it, nothing runs on a GPU (and importing it would stall
    the caller, an engine loop, for a second)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if not torch.cuda.is_available():
        return None
    free, total = torch.cuda.mem_get_info(index)
    blocks = _free_blocks(torch.cuda.memory_snapshot())
    free_in_segments = sum(blocks)
    largest = max(blocks, default=0)
    frag = 1.0 - largest / free_in_segments if free_in_segments else 0.0
    util: float | None
    try:
        util = float(torch.cuda.utilization(index))
    except Exception:  # needs pynvml; the figure is optional
        util = None
    allocated, reserved = int(torch.cuda.memory_allocated(index)), int(torch.cuda.memory_reserved(index))
    name = torch.cuda.get_device_name(index)
    return GpuMemory(name, allocated, reserved, int(total), int(free), largest, frag, util)


def _free_blocks(snapshot: list[dict[str, Any]]) -> list[int]:
    return [int(b["size"]) for seg in snapshot for b in seg.get("blocks", []) if b.get("state") == "inactive"]
