"""Role-aware real-time scheduling of synthesis requests (and the FIFO baseline)."""

from engine.scheduler.backend import Backend, Batch
from engine.scheduler.policy import FifoPolicy, PolicyConfig, RoleAwarePolicy, make_policy
from engine.scheduler.request import Clock, Request, RequestClass, State
from engine.scheduler.scheduler import Scheduler, SchedulerConfig, SchedulerStats

__all__ = [
    "Backend", "Batch", "Clock", "FifoPolicy", "PolicyConfig", "Request", "RequestClass",
    "RoleAwarePolicy", "Scheduler", "SchedulerConfig", "SchedulerStats", "State", "make_policy",
]  # fmt: skip
