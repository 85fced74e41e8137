"""Scheduler test fixtures (the helpers are in sched_fakes.py)."""

from __future__ import annotations

import pytest
from sched_fakes import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()
