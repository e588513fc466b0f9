"""DeviceTaints: the pod (a gang: all its pending members) fits no node now, but would on nodes
its node constraints admit if its claims tolerated the NoSchedule / NoExecute taints on their
devices (a DeviceTaintRule's or the ResourceSlice's, KEP-5055). The taints are named with
their source; the fix is a toleration on the claims' requests, checked like every fix, or
waiting for the rule to go."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from draplan.allocator.taints import BLOCKING_EFFECTS
from draplan.api.core_v1 import Pod
from draplan.api.resource_v1 import DeviceTaint, DeviceToleration
from draplan.audit.classifiers.base import Audit, Case, members
from draplan.audit.diagnosis import Diagnosis
from draplan.audit.fixes import Fix, apply
from draplan.audit.stranded import tainted
from draplan.cluster.devices import DeviceView
from draplan.cluster.state import ClusterState, key_of

DEVICE_TAINTS = "DeviceTaints"


class Tainted:
    name = "Tainted"
    categories = (DEVICE_TAINTS,)
    shared = True

    def classify(self, audit: Audit, case: Case) -> Diagnosis | None:
        state = audit.state
        if (
            (case.view.fits and case.gang is None)
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
        # A gang's pending members must all fit so: the taints are then its reason.
        pods = members(state, case.gang) if case.gang is not None else [case.pod]
        found = _placed(audit, pods, probe, nodes)
        if found is None:
            return None
        node, devices = found
        named = [_source(state, where, v) for where, v in devices if tainted(v)]
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
    audit: Audit, pods: list[Pod], fix: Fix, nodes: list[str]
) -> tuple[str, list[tuple[str, DeviceView]]] | None:
    """Where the pods, changed by `fix`, would all be placed among `nodes` now (the first
    one's node), and the devices they would get with their nodes (the state is left as it
    was)."""
    state = audit.state
    with state.forked():
        applied = apply(state, pods, fix)
        if applied is None:
            return None
        changed = applied[0]
        if len(changed) == 1:
            results = [audit.scheduler.schedule_pod(state, changed[0], nodes)]
        else:
            results = audit.scheduler.run(state, only={key_of(p) for p in changed})
        if not results or any(r.node is None for r in results):
            return None
        devices = [
            (result.node, state.device((r.driver, r.pool, r.device)))
            for result in results
            if result.node is not None
            for c in result.claims
            if c.status.allocation is not None
            for r in c.status.allocation.devices.results
        ]
        node = results[0].node
        assert node is not None
        return node, [(n, v) for n, v in devices if v is not None]


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
