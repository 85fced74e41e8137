"""Role-aware real-time scheduling of synthesis requests (and the FIFO baseline)."""

from engine.scheduler.backend import Backend, Batch
from engine.scheduler.fifo import FifoPolicy
from engine.scheduler.policies import PerBackend, make_policy
from engine.scheduler.policy import PolicyConfig
from engine.scheduler.request import Clock, Request, RequestClass, State
from engine.scheduler.role_aware import RoleAwarePolicy
from engine.scheduler.scheduler import Scheduler, SchedulerConfig, SchedulerStats

__all__ = [
    "Backend", "Batch", "Clock", "FifoPolicy", "PerBackend", "PolicyConfig", "Request", "RequestClass",
    "RoleAwarePolicy", "Scheduler", "SchedulerConfig", "SchedulerStats", "State", "make_policy",
]  # fmt: skip
