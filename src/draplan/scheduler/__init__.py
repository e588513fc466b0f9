"""The scheduling framework on the shared DRA allocator: plugins, gangs, topology domains."""

from draplan.scheduler.core import PodResult, Scheduler
from draplan.scheduler.profile import Profile, build_profile
from draplan.scheduler.queue import gated_pods
from draplan.scheduler.reasons import FitReason

__all__ = ["FitReason", "PodResult", "Profile", "Scheduler", "build_profile", "gated_pods"]
