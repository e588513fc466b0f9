"""DeviceTaints: the pod fits no node now, but would on a node its node constraints admit if
its claims tolerated the NoSchedule / NoExecute taints on that node's devices (a
DeviceTaintRule's or the ResourceSlice's, KEP-5055). The taints are named with their source;
the fix is a toleration on the claims' requests, checked like every fix, or waiting for the
rule to go."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from draplan.allocator.taints import BLOCKING_EFFECTS
from draplan.api.core_v1 import Pod
from draplan.api.resource_v1 import DeviceTaint, DeviceToleration
from draplan.audit.classifiers.base import Audit, Case
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.fixes import Fix, apply
from draplan.audit.stranded import tainted
from draplan.cluster.devices import DeviceView
from draplan.cluster.state import ClusterState

DEVICE_TAINTS = "DeviceTaints"


class Tainted:
    name = "Tainted"
    categories = (DEVICE_TAINTS,)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        state = audit.state
        if (
            case.view.fits
            or "DRADeviceTaints" not in state.features
            or all(c.status.allocation is not None for c in case.claims)
        ):
            return None
        nodes = list(case.view.supplies)
        taints = {
            (t.key, t.effect)
            for name in nodes
            for v in _devices(state, name)
            if tainted(v)
            for t in v.device.taints
            if t.effect in BLOCKING_EFFECTS
        }
        if not taints:
            return None
        # Exists per key and effect: what tolerates the taint whatever its value.
        tolerations = tuple(
            DeviceToleration(key=k, operator="Exists", effect=e) for k, e in sorted(taints)
        )
        probe = Fix("", "", device_tolerations=tolerations)
        found = _placed(audit, case.pod, probe, nodes)
        if found is None:
            return None
        node, devices = found
        named = [_source(state, node, v) for v in devices if tainted(v)]
        # Only the taints of the devices it got there need tolerating.
        needed = {(t["key"], t["effect"]) for t in named}
        tolerations = tuple(t for t in tolerations if (t.key, t.effect) in needed)
        keys = sorted({t["key"] for t in named})
        wait = " and ".join(sorted({_origin(t) for t in named}))
        text = ", ".join(
            f"{t['key']}={t['value']}:{t['effect']} on {t['device']}" for t in named[:3]
        )

        def proposals(pod: Pod) -> Iterator[Fix]:
            yield Fix(
                f"add a toleration for {' and '.join(keys)} to its claims' requests (or wait "
                f"for {wait} to go)",
                "add a device toleration",
                device_tolerations=tolerations,
            )

        return case.diagnosis(
            DEVICE_TAINTS,
            f"Only tainted devices would fit it (on {node}: {text})",
            {"deviceTaints": named},
            proposals=proposals,
            otherwise=f"wait for {wait} to go (no toleration draplan tried makes it fit)",
        )


def _devices(state: ClusterState, node: str) -> Iterator[DeviceView]:
    for pool in state.pools_for_node(state.nodes[node]):
        yield from pool.devices


def _placed(
    audit: Audit, pod: Pod, fix: Fix, nodes: list[str]
) -> tuple[str, list[DeviceView]] | None:
    """Where the pod, changed by `fix`, would be placed among `nodes` now, and the devices it
    would get (the state is left as it was)."""
    state = audit.state
    with state.forked():
        applied = apply(state, [pod], fix)
        if applied is None:
            return None
        result = audit.scheduler.schedule_pod(state, applied[0][0], nodes)
        if result.node is None:
            return None
        devices = [
            state.device((r.driver, r.pool, r.device))
            for c in result.claims
            if c.status.allocation is not None
            for r in c.status.allocation.devices.results
        ]
        return result.node, [v for v in devices if v is not None]


def _source(state: ClusterState, node: str, view: DeviceView) -> dict[str, Any]:
    """A tainted device's blocking taint and where it comes from: the DeviceTaintRule that
    selects the device with that taint, else its ResourceSlice."""
    taint = next(t for t in view.device.taints if t.effect in BLOCKING_EFFECTS)
    out: dict[str, Any] = {
        "key": taint.key,
        "value": taint.value,
        "effect": taint.effect,
        "device": "/".join(view.id),
    }
    rule = _rule(state, view, taint)
    if rule:
        out["deviceTaintRule"] = rule
    else:
        out["resourceSlice"] = next(
            (
                rs.metadata.name
                for rs in state.node_slices(node)
                if rs.spec.driver == view.driver
                and any(d.name == view.id[2] for d in rs.spec.devices)
            ),
            "",
        )
    return out


def _origin(taint: dict[str, Any]) -> str:
    if "deviceTaintRule" in taint:
        return f"DeviceTaintRule {taint['deviceTaintRule']}"
    return f"the taint in ResourceSlice {taint['resourceSlice']}"


def _rule(state: ClusterState, view: DeviceView, taint: DeviceTaint) -> str:
    if "DRADeviceTaintRules" not in state.features:
        return ""
    driver, pool, device = view.id
    return next(
        (
            name
            for name, rule in sorted(state.taint_rules.items())
            if rule.spec.device_selector is not None
            and rule.spec.device_selector.selects(driver, pool, device)
            and (rule.spec.taint.key, rule.spec.taint.value, rule.spec.taint.effect)
            == (taint.key, taint.value, taint.effect)
        ),
        "",
    )
