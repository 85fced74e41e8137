"""Child processes that never outlive the engine: a parent-death signal on Linux."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """In a child: be killed (SIGKILL) as soon as the process `parent_pid` is gone.

    Linux delivers the signal when the thread that started the child exits, so children
    are started from threads that live as long as their owner. If the parent died before
    this call, the child exits now. Elsewhere this does nothing (children are stopped by
    their owner's `close`).
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(0)


def alive(pid: int) -> bool:
    """True while a process `pid` exists (it may belong to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker now, deaf to SIGHUP (call on the main thread,
    before any child or shared memory). A closed terminal sends SIGHUP to the whole process
    group; the tracker ignores SIGINT and SIGTERM itself but would die of SIGHUP, and the
    engine handles that signal by closing, which unregisters its segments with the tracker."""
    from multiprocessing import resource_tracker

    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # NB: inherited across exec
    try:
        resource_tracker.ensure_running()
    finally:
        signal.signal(signal.SIGHUP, old)
