"""The DRA-aware, gang-aware autoscaler (and the legacy count-based one it replaces)."""

from draplan.autoscaler.options import DEFAULT_EXPANDERS, EXPANDERS, Limits
from draplan.autoscaler.plan import Autoscaler, Plan

__all__ = ["DEFAULT_EXPANDERS", "EXPANDERS", "Autoscaler", "Limits", "Plan"]
