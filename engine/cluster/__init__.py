"""Scale-out: voicing on a Ray cluster while the head's scheduler keeps the order.

`ring` maps roles to workers (weighted consistent hashing), `balance` keeps their load in
proportion to capacity, `snapshots` gives watchers versioned views of the head's state;
`head`, `worker` and `connect` (which need the optional `cluster` extra, Ray) run batches
on worker actors with nothing lost when one dies.
"""

from __future__ import annotations

from typing import Any


def open_voices(address: str, processes: int = 1, neural: bool = True) -> dict[str, Any]:
    """The Ray cluster at `address` (or `auto`) as its backends' voices, by name (see
    `connect.open_cluster`): workers started on its nodes, each with as many espeak-ng
    processes as the node has CPUs, or `processes` where more than 1 is asked. A
    `TroupeError` saying how to install Ray where it is not."""
    from engine.core.errors import TroupeError

    try:
        from engine.cluster.connect import open_cluster
    except ImportError as exc:
        raise TroupeError(f"--cluster needs Ray: pip install -e '.[cluster]' ({exc})") from exc
    return dict(open_cluster(address, processes=processes if processes > 1 else None, neural=neural))
