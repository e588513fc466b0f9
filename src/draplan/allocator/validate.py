"""An independent checker of allocation results: re-derives every invariant from the cluster
state and the claims, sharing no code with the search."""

from __future__ import annotations

from collections import Counter, defaultdict

from draplan.api.core_v1 import Node
from draplan.api.resource_v1 import (
    DeviceRequestAllocationResult,
    DeviceToleration,
    ResourceClaim,
)
from draplan.cel import CelError, compile_selector
from draplan.cluster.devices import DeviceID, DeviceView, Pool, nanos
from draplan.cluster.nodeselector import selector_matches
from draplan.cluster.state import ClusterState, key_of

Visible = tuple[Pool, DeviceView]


def _selected(view: DeviceView, expressions: list[str]) -> bool | str:
    for expr in expressions:
        try:
            if not compile_selector(expr).matches(view.cel):
                return False
        except CelError as err:
            return str(err)
    return True


def _tolerated(view: DeviceView, tolerations: tuple[DeviceToleration, ...]) -> bool:
    for taint in view.device.taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        ok = False
        for tol in tolerations:
            if tol.effect and tol.effect != taint.effect:
                continue
            if tol.key and tol.key != taint.key:
                continue
            if tol.operator == "Exists" or tol.value == taint.value:
                ok = True
                break
        if not ok:
            return False
    return True


def validate_allocation(state: ClusterState, node: Node, claims: list[ResourceClaim]) -> list[str]:
    """Problems found in `claims` (allocated on `node`) given everything else in `state`;
    an empty list means the allocation is valid."""
    problems: list[str] = []
    new_keys = {key_of(c) for c in claims}
    visible = {v.id: (pool, v) for pool in state.pools_for_node(node) for v in pool.devices}
    exclusive: Counter[tuple[str, str, str]] = Counter()
    shared_capacity: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    holders: dict[tuple[str, str, str], int] = Counter()
    counted: set[tuple[str, str, str]] = set()
    counters: Counter[tuple[tuple[str, str], tuple[str, str]]] = Counter()
    # Per (pool, counter set), each allocated device's compatibilityGroups.
    groups: dict[tuple[tuple[str, str], str], dict[str, frozenset[str]]] = defaultdict(dict)
    everything = [c for c in state.claims.values() if key_of(c) not in new_keys] + claims
    for claim in everything:
        alloc = claim.status.allocation
        if alloc is None:
            continue
        for res in alloc.devices.results:
            dev = (res.driver, res.pool, res.device)
            if res.admin_access:
                continue
            view = state.device(dev)
            if res.share_id is not None:
                for name, q in res.consumed_capacity.items():
                    shared_capacity[dev][name] += nanos(q)
                holders[dev] += 1
            else:
                exclusive[dev] += 1
            if view is not None and (res.share_id is None or dev not in counted):
                counted.add(dev)
                for ckey, amount in view.consumes:
                    counters[(view.pool_id, ckey)] += amount
            if view is not None:
                for cc in view.device.consumes_counters:
                    on_set = groups[(view.pool_id, cc.counter_set)]
                    on_set[res.device] = frozenset(cc.compatibility_groups)
    for claim in claims:
        problems.extend(_check_claim(state, node, claim, visible))
    for dev, n in exclusive.items():
        if n > 1:
            problems.append(f"device {'/'.join(dev)} is allocated {n} times")
        if holders.get(dev):
            problems.append(f"device {'/'.join(dev)} is both dedicated and shared")
    for dev, used in shared_capacity.items():
        view = state.device(dev)
        if view is None:
            continue
        if not view.multi:
            problems.append(f"device {'/'.join(dev)} is shared but not multi-allocatable")
        for name, amount in used.items():
            if amount > view.capacity.get(name, 0):
                problems.append(f"device {'/'.join(dev)}: capacity {name} over-consumed")
    if "DRADeviceCompatibilityGroups" in state.features:
        for (pid, cset), members in sorted(groups.items()):
            kinds = {bool(g) for g in members.values()}
            named = [g for g in members.values() if g]
            if len(kinds) > 1 or (named and not frozenset.intersection(*named)):
                problems.append(
                    f"pool {pid[0]}/{pid[1]}: counter set {cset}: devices "
                    f"{', '.join(sorted(members))} share no compatibility group"
                )
    for pool in state.pools_for_node(node):
        for ckey, total in pool.counters.items():
            if counters.get((pool.id, ckey), 0) > total:
                problems.append(
                    f"pool {pool.id[0]}/{pool.id[1]}: counter {ckey[0]}/{ckey[1]} over-consumed"
                )
    return problems


def _check_claim(
    state: ClusterState, node: Node, claim: ResourceClaim, visible: dict[DeviceID, Visible]
) -> list[str]:
    label = f"claim {claim.metadata.namespace}/{claim.metadata.name}"
    alloc = claim.status.allocation
    if alloc is None:
        return [f"{label}: not allocated"]
    out: list[str] = []
    results = alloc.devices.results
    if len(results) > 32:
        out.append(f"{label}: {len(results)} results exceed 32")
    if alloc.node_selector is not None and not selector_matches(alloc.node_selector, node):
        out.append(f"{label}: nodeSelector does not match node {node.metadata.name}")
    requests = {r.name: r for r in claim.spec.devices.requests}
    by_request: dict[str, list[DeviceRequestAllocationResult]] = defaultdict(list)
    per_claim: Counter[tuple[str, str, str]] = Counter()
    for res in results:
        by_request[res.request].append(res)
        dev = (res.driver, res.pool, res.device)
        per_claim[dev] += 1
        where = f"{label}, result {res.request} {'/'.join(dev)}"
        if dev not in visible:
            out.append(f"{where}: device not visible from node {node.metadata.name}")
            continue
        pool, view = visible[dev]
        if pool.incomplete or pool.invalid:
            out.append(f"{where}: pool is incomplete or invalid")
        parent, _, sub = res.request.partition("/")
        req = requests.get(parent)
        if req is None:
            out.append(f"{where}: no such request")
            continue
        spec = (
            req.exactly
            if not sub
            else next((s for s in req.first_available if s.name == sub), None)
        )
        if spec is None:
            out.append(f"{where}: no such subrequest")
            continue
        dc = state.device_classes.get(spec.device_class_name)
        if dc is None:
            out.append(f"{where}: class {spec.device_class_name} does not exist")
            continue
        exprs = [s.cel.expression for s in (*dc.spec.selectors, *spec.selectors) if s.cel]
        selected = _selected(view, exprs)
        if selected is not True:
            out.append(f"{where}: does not match class and selectors ({selected})")
        if "DRADeviceTaints" in state.features and not _tolerated(view, spec.tolerations):
            out.append(f"{where}: untolerated taint")
        if view.consumes and "DRAPartitionableDevices" not in state.features:
            out.append(f"{where}: consumes counters while DRAPartitionableDevices is off")
        if (res.share_id is not None) != view.multi:
            out.append(f"{where}: shareID must be set exactly for multi-allocatable devices")
        if res.share_id is not None:
            requested = spec.capacity.requests if spec.capacity else {}
            for name, q in requested.items():
                share = res.consumed_capacity.get(name.rpartition("/")[2])
                if share is None or share < q:
                    out.append(f"{where}: consumedCapacity {name} below the request")
    for dev, n in per_claim.items():
        shared_view = state.device(dev)
        if n > 1 and not (shared_view is not None and shared_view.multi):
            admin = all(r.admin_access for r in results if (r.driver, r.pool, r.device) == dev)
            out.append(
                f"{label}: device {'/'.join(dev)} used {n} times"
                + (" (admin access)" if admin else "")
            )
    for name, req in requests.items():
        got = [r for key, rs in by_request.items() if key.split("/")[0] == name for r in rs]
        subs = {r.request for r in got}
        if req.first_available and len(subs) != 1:
            out.append(
                f"{label}: request {name} must use exactly one subrequest, got {sorted(subs)}"
            )
            continue
        spec = (
            req.exactly
            if req.exactly is not None
            else next((s for s in req.first_available if f"{name}/{s.name}" in subs), None)
        )
        if spec is None:
            continue
        if (spec.allocation_mode or "ExactCount") == "ExactCount":
            want = spec.count or 1
            if len(got) != want:
                out.append(f"{label}: request {name} has {len(got)} devices, wants {want}")
        elif not got:
            out.append(f"{label}: request {name} (All) got no device")
    for i, con in enumerate(claim.spec.devices.constraints):
        attr = con.match_attribute or con.distinct_attribute or ""
        scope = set(con.requests)
        values = []
        for res in results:
            if scope and res.request not in scope and res.request.split("/")[0] not in scope:
                continue
            found = state.device((res.driver, res.pool, res.device))
            values.append(found.attribute(attr) if found else None)
        if any(v is None for v in values):
            out.append(f"{label}: constraint #{i}: a device lacks attribute {attr}")
        elif "DRAListTypeAttributes" in state.features:
            # KEP-5491's set semantics: a common element / pairwise disjoint sets.
            sets = [_as_set(v) for v in values if v is not None]
            if con.match_attribute and sets and not frozenset.intersection(*sets):
                out.append(f"{label}: constraint #{i}: matchAttribute {attr} has no common value")
            elif con.distinct_attribute and sum(map(len, sets)) != len(frozenset().union(*sets)):
                out.append(f"{label}: constraint #{i}: distinctAttribute {attr} values overlap")
        elif con.match_attribute and len(set(values)) > 1:
            out.append(f"{label}: constraint #{i}: matchAttribute {attr} differs")
        elif con.distinct_attribute and len(set(values)) != len(values):
            out.append(f"{label}: constraint #{i}: distinctAttribute {attr} repeats")
    return out


def _as_set(value: tuple[str, object]) -> frozenset[tuple[str, object]]:
    """An attribute's typed elements; a scalar is a set of one."""
    kind, raw = value
    return frozenset((kind, x) for x in (raw if isinstance(raw, tuple) else (raw,)))
