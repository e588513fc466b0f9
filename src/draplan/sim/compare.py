"""Run one input under several policies (and seeds), and the results as plain data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from draplan.api.errors import BadInput
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
        features=sim.features,
        prices=sim.prices,
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


def check_started(sim: SimInput, results: list[SimResult]) -> None:
    """A scenario none of whose jobs started under any policy is bad input: its workload asks
    for what its cluster can never give, and a comparison of "0 jobs started" says nothing.
    The error names the scheduler's reason for the first job's pending pod, and the field
    that can fix it."""
    if not results or not sim.jobs or any(r.totals.get("jobsStarted", 0) for r in results):
        return
    classes = ", ".join(sorted({j.kind for j in sim.jobs}))
    policies = ", ".join(r.policy for r in results)
    why = next((j for j in results[0].jobs if j.get("pendingReason")), None)
    cause = f"; {why['job']} pends: {why['pendingReason'].rstrip('.')}" if why else ""
    synthetic = sim.scenario.spec.workload.synthetic is not None
    if why and "untolerated taint" in why["pendingReason"] and synthetic:
        advice = (
            "give the synthetic workload the tolerations it needs "
            "(spec.workload.synthetic.tolerations)"
        )
    elif synthetic:
        advice = (
            "check the workload's device classes, GPU model, MIG profile, NIC class, topology "
            "key and tolerations against the cluster (docs/reference.md)"
        )
    else:
        advice = "check the jobs' pods against the cluster's nodes and NodePools"
    raise BadInput(
        f"none of the {len(sim.jobs)} jobs ({classes}) started under {policies}{cause}; "
        f"no node or NodePool of the cluster can run them: {advice}",
        source=sim.source,
        kind="Scenario",
        name=sim.scenario.metadata.name,
        path="spec.workload",
    )


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
