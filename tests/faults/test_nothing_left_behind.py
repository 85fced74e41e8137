"""`main.py play` ended by SIGTERM, SIGHUP or SIGKILL (the whole process group, or the main
process alone): no child process outlives it, and no shared-memory segment is left for good."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # seconds of work each (a model, a search, a fuzz run)

ROOT = Path(__file__).resolve().parents[2]
SHM = Path("/dev/shm")


def _children(pid: int) -> list[int]:
    """Every descendant of `pid` (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    out, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out += kids
        frontier += kids
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _segments(pid: int) -> list[Path]:
    return list(SHM.glob(f"troupe-ring-{pid}-*"))


def _play(*extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "main.py", "play", "--device", "JACK", "--processes", "2", *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("playing"), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def _wait_gone(pids: list[int]) -> list[int]:
    limit = time.monotonic() + 15
    while any(_alive(p) for p in pids) and time.monotonic() < limit:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


@pytest.mark.usefixtures("jack_device")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_play_like_ctrl_c(sig: signal.Signals) -> None:
    proc = _play()
    kids = _children(proc.pid)
    assert len(kids) >= 3  # the audio process and two espeak-ng workers (and the tracker)
    assert _segments(proc.pid)
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "played" in out and "Traceback" not in err
    assert "audio output lost" not in err  # a signal to the group is a close, not a lost device
    assert "output lost 0 times" in out
    assert _wait_gone(kids) == []
    assert _segments(proc.pid) == []


@pytest.mark.usefixtures("jack_device")
def test_children_die_with_a_killed_parent_and_its_segment_goes_at_the_next_start() -> None:
    proc = _play()
    kids = _children(proc.pid)
    assert len(kids) >= 3
    proc.kill()  # the main process alone: its children are not signalled
    proc.communicate(timeout=10)
    assert _wait_gone(kids) == []
    group = _play()  # and the whole group: nothing could clean up
    group_kids = _children(group.pid)
    os.killpg(group.pid, signal.SIGKILL)
    group.communicate(timeout=10)
    assert _wait_gone(group_kids) == []
    stale = _segments(proc.pid) + _segments(group.pid)
    assert _segments(group.pid)  # nothing was left to remove it
    nxt = _play("--seconds", "1")
    nxt.communicate(timeout=60)
    assert all(not p.exists() for p in stale)
    assert _segments(nxt.pid) == []
