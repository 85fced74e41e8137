"""Shared fixtures: test data, and a real JACK dummy server for paced audio tests."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# `--hypothesis-profile=deep`: the importer fuzz tests run 10,000 examples per format.
settings.register_profile("deep", max_examples=10_000)

ROOT = Path(__file__).resolve().parent.parent
TESTDATA = ROOT / "tests" / "data" / "samples"
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Tests voice afresh (a failing backend must fail, a count of calls must count): the take
# cache is off unless a test turns it on (tests/engine/synthesis/test_take_cache.py).
os.environ.setdefault("TROUPE_TAKE_CACHE", "off")


KINDS = ("gui", "jack", "cluster", "slow")
"""What keeps a test out of `-m fast`: the window, the JACK dummy server, a Ray cluster, or
seconds of work (marked `slow` where it is written)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by what it needs: `gui` (tests/app), `jack` (the JACK dummy device),
    and `fast` for the rest (`pytest -m fast`: the quick loop while working)."""
    for item in items:
        if "tests/app/" in item.nodeid or item.nodeid.startswith("app/"):
            item.add_marker(pytest.mark.gui)
        if "jack_device" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.jack)
        if not any(item.get_closest_marker(kind) for kind in KINDS):
            item.add_marker(pytest.mark.fast)


@pytest.fixture(autouse=True)
def fresh_speeds() -> Iterator[None]:
    """Each test starts from the prior speaking speeds (engine/core/timing.py): what an
    earlier test's takes taught the process does not change another test's plan."""
    from engine.core.timing import SPEEDS

    SPEEDS.reset()
    yield


@pytest.fixture(scope="session")
def testdata() -> Path:
    if not TESTDATA.is_dir():
        pytest.fail(f"test data not found at {TESTDATA}")
    return TESTDATA


def _jack_device() -> int | None:
    import sounddevice as sd

    sd._terminate()
    sd._initialize()  # PortAudio lists devices at init: refresh after JACK starts
    for api in sd.query_hostapis():
        if "JACK" in api["name"] and api["devices"]:
            return int(api["default_output_device"])
    return None


@pytest.fixture(scope="session")
def jack_device() -> Iterator[int]:
    """A PortAudio output device index on a JACK dummy server (paced at real time).

    Uses the server `.ci/run` started; otherwise starts one for this session.
    """
    proc = None
    device = _jack_device()
    if device is None:
        jackd = shutil.which("jackd")
        if jackd is None:
            pytest.fail("jackd not installed (Debian package jackd2); .ci/run installs it")
        proc = subprocess.Popen(
            [jackd, "--no-realtime", "-d", "dummy", "-r", "48000", "-p", "256"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):
            time.sleep(0.1)
            device = _jack_device()
            if device is not None:
                break
        if device is None:
            proc.terminate()
            pytest.fail("the JACK dummy server did not come up")
    yield device
    import sounddevice as sd

    sd._terminate()  # PortAudio must let go of JACK before the server stops
    if proc is not None:
        proc.terminate()
        proc.wait(10)


# One local Ray cluster for the whole test session: a head node and a second worker node on
# this machine, one CPU each, started once (about 35 s) and shut down at the end.
_HAVE_RAY = importlib.util.find_spec("ray") is not None
_NO_RAY = "Ray is not installed (pip install -e '.[cluster]' installs it; .ci/run does)"


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    if not _HAVE_RAY:
        pytest.skip(_NO_RAY)
    import ray
    from ray.cluster_utils import Cluster

    from engine.cluster.connect import connect

    # NB: Ray binds this machine's own address (asked for 127.0.0.1, its client connects to
    # the node's address and never finds the head); the cluster is local all the same.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        connect(cluster.address)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
