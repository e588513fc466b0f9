"""Run one input under several policies (and seeds), and the results as plain data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from draplan.sim.engine import SimConfig, SimResult, simulate
from draplan.sim.scenario import SimInput


def horizon_of(sim: SimInput) -> float | None:
    """When the runs stop: the scenario's horizonSeconds, else the workload's (None: when
    the work is done)."""
    spec = sim.scenario.spec
    return spec.horizon_seconds if spec.horizon_seconds is not None else sim.horizon


def config_of(sim: SimInput, policy: str) -> SimConfig:
    spec = sim.scenario.spec
    return SimConfig(
        policy=policy,
        autoscaler_interval=spec.autoscaler_interval_seconds,
        scale_down_unneeded=spec.scale_down_unneeded_seconds,
        horizon=horizon_of(sim),
    )


def compare(
    sim: SimInput,
    policies: list[str] | None = None,
    progress: Callable[[str, float], None] | None = None,
) -> list[SimResult]:
    """Each policy on the same cluster and jobs (the same seed gives the same jobs)."""
    out = []
    for policy in policies or list(sim.scenario.spec.policies):
        tick = (lambda t, p=policy: progress(p, t)) if progress is not None else None
        out.append(simulate(sim.cluster, sim.jobs, config_of(sim, policy), tick))
    return out


def to_dict(result: SimResult) -> dict[str, Any]:
    return asdict(result)


def from_dict(doc: dict[str, Any]) -> SimResult:
    def pairs(d: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
        return {k: [(float(a), float(b)) for a, b in v] for k, v in d.items()}

    result = SimResult(
        doc["policy"],
        doc["totals"],
        pairs(doc["series"]),
        doc["jobs"],
        doc["nodes"],
        pairs(doc.get("occupancy", {})),
    )
    return replace(result)
