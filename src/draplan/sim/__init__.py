"""Deterministic discrete-event simulation of a cluster under a workload, with the real
scheduler and autoscaler; policy comparison."""

from draplan.sim.engine import POLICIES, SimConfig, SimResult, simulate

__all__ = ["POLICIES", "SimConfig", "SimResult", "simulate"]
