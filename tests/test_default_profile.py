"""kube-scheduler's default profile on generated clusters (tests/scoring_clusters: several
vendors, system and control-plane nodes, taints of every effect, images, sidecars, preferred
affinity, firstAvailable claims): every plugin's score is recomputed here from upstream's
formulas (noderesources least_allocated.go / balanced_allocation.go, taint_toleration.go,
node_affinity.go, image_locality.go, dynamicresources.go computeScore; helper
DefaultNormalizeScore; default_plugins.go's weights), without draplan's scoring code, and the
node draplan binds must be one of the best; its devices the first free ones in the slice's
order, as upstream's allocator takes them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from draplan.api.core_v1 import Container, Node, Pod, Taint, Toleration
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from scoring_clusters import generate

WEIGHTS = {"taints": 3, "affinity": 2, "fit": 1, "balanced": 1, "images": 1, "dra": 2}
DEFAULT_CPU, DEFAULT_MEMORY = 100, 200 * 1024 * 1024 * 1000  # milli units


def _milli(container: Container, name: str, default: int | None) -> int:
    q = container.resources.requests.get(name)
    if q is None:
        return default or 0
    return q.milli_value()


def _requests(pod: Pod, name: str, default: int | None = None) -> int:
    """KEP-753: app containers plus sidecars, or the largest init-time moment."""
    spec = pod.spec
    sidecars = [c for c in spec.init_containers if c.restart_policy == "Always"]
    steady = sum(_milli(c, name, default) for c in (*spec.containers, *sidecars))
    moments, before = [], 0
    for c in spec.init_containers:
        if c.restart_policy == "Always":
            before += _milli(c, name, default)
            moments.append(before)
        else:
            moments.append(before + _milli(c, name, default))
    return max([steady, *moments])


def _allocatable(node: Node, name: str) -> int:
    return node.status.allocatable[name].milli_value()


def _placed(state: ClusterState, node: str) -> list[Pod]:
    return [p for p in state.pods.values() if p.spec.node_name == node]


def _tolerates(t: Toleration, taint: Taint) -> bool:
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    return t.operator == "Exists" or t.value == taint.value


def _normalize(raw: dict[str, int], reverse: bool) -> dict[str, int]:
    top = max(raw.values())
    if top == 0:
        return {n: 100 if reverse else 0 for n in raw}
    return {n: (100 - 100 * v // top) if reverse else 100 * v // top for n, v in raw.items()}


def _fit(state: ClusterState, pod: Pod, node: Node) -> int:
    scores = []
    for name, default in (("cpu", DEFAULT_CPU), ("memory", DEFAULT_MEMORY)):
        cap = _allocatable(node, name)
        used = sum(_requests(p, name, default) for p in _placed(state, node.metadata.name))
        req = used + _requests(pod, name, default)
        scores.append(0 if req > cap else (cap - req) * 100 // cap)
    return sum(scores) // 2


def _balanced(state: ClusterState, pod: Pod, node: Node) -> int:
    if not _requests(pod, "cpu") and not _requests(pod, "memory"):
        return 0
    fractions = []
    for name in ("cpu", "memory"):
        used = sum(_requests(p, name) for p in _placed(state, node.metadata.name))
        fractions.append(min(1.0, (used + _requests(pod, name)) / _allocatable(node, name)))
    return int((1 - abs((fractions[0] - fractions[1]) / 2)) * 100)


def _images(state: ClusterState, pod: Pod, node: Node) -> int:
    spread: dict[str, int] = {}
    for other in state.nodes.values():
        for image in other.status.images:
            for name in image.names:
                spread[name] = spread.get(name, 0) + 1
    total_nodes = sum(1 for _ in state.nodes.values())
    sizes = {name: i.size_bytes for i in node.status.images for name in i.names}
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    total = 0
    for c in containers:
        image = c.image if c.image.rfind(":") > c.image.rfind("/") else c.image + ":latest"
        if image in sizes:
            total += int(sizes[image] * (spread[image] / total_nodes))
    mb = 1024 * 1024
    low, high = 23 * mb, 1000 * mb * len(containers)
    return 100 * (min(max(total, low), high) - low) // (high - low)


def _taints(pod: Pod, node: Node) -> int:
    soft = [t for t in pod.spec.tolerations if t.effect in ("", "PreferNoSchedule")]
    return sum(
        1
        for taint in node.spec.taints
        if taint.effect == "PreferNoSchedule" and not any(_tolerates(t, taint) for t in soft)
    )


def _affinity(pod: Pod, node: Node) -> int:
    aff = pod.spec.affinity
    terms = aff.node_affinity.preferred_during_scheduling_ignored_during_execution if aff else ()
    labels = node.metadata.labels
    return sum(
        t.weight
        for t in terms
        if t.weight and all(labels.get(r.key) in r.values for r in t.preference.match_expressions)
    )


def _kinds(state: ClusterState, node: str) -> list[tuple[str, str]]:
    """The node's devices (name, kind) in the slice's order."""
    rs = state.slices.get(f"{node}-devices")
    if rs is None:
        return []
    return [(d.name, next(iter(d.attributes.values())).string or "") for d in rs.spec.devices]


def _dra(state: ClusterState, pod: Pod, node: str) -> tuple[int, list[str]]:
    """(computeScore, the devices first-fit takes): the first alternative whose count of
    free devices of its kind the node has, 8 for the first alternative, 7 for the second."""
    template = state.claim_templates.get(("work", "accel"))
    if template is None or not pod.spec.resource_claims:
        return 0, []
    (request,) = template.spec.spec.devices.requests
    devices = _kinds(state, node)
    for i, sub in enumerate(request.first_available):
        kind = sub.selectors[0].cel.expression.rsplit("'", 2)[1]  # type: ignore[union-attr]
        matching = [name for name, k in devices if k == kind]
        if len(matching) >= sub.count:
            return 8 - i, matching[: sub.count]
    return 0, []


def _best(state: ClusterState, pod: Pod, feasible: Sequence[str]) -> set[str]:
    nodes = {n: state.nodes[n] for n in feasible}
    taints = _normalize({n: _taints(pod, node) for n, node in nodes.items()}, True)
    affinity = _normalize({n: _affinity(pod, node) for n, node in nodes.items()}, False)
    dra = _normalize({n: _dra(state, pod, n)[0] for n in nodes}, False)
    totals = {
        n: WEIGHTS["taints"] * taints[n]
        + WEIGHTS["affinity"] * affinity[n]
        + WEIGHTS["fit"] * _fit(state, pod, node)
        + WEIGHTS["balanced"] * _balanced(state, pod, node)
        + WEIGHTS["images"] * _images(state, pod, node)
        + WEIGHTS["dra"] * dra[n]
        for n, node in nodes.items()
    }
    top = max(totals.values())
    return {n for n, t in totals.items() if t == top}


@pytest.mark.parametrize("seed", range(60))
def test_the_default_profile_binds_a_best_node(seed: int) -> None:
    state = ClusterState.from_objects(generate(seed))
    pod = state.pods[("work", "pending")]
    scheduler = Scheduler(build_profile(seed=seed))
    _, statuses = scheduler.evaluate(state, pod)
    feasible = sorted(n for n, st in statuses.items() if st.ok)
    for name in feasible:
        node = state.nodes[name]
        # The filters agree with upstream's rules on what draplan does not allocate.
        hard = [t for t in node.spec.taints if t.effect in ("NoSchedule", "NoExecute")]
        assert all(any(_tolerates(t, taint) for t in pod.spec.tolerations) for taint in hard)
        for resource in ("cpu", "memory"):
            # fit.go checks a resource only when the pod asks for it.
            asked = _requests(pod, resource)
            used = sum(_requests(p, resource) for p in _placed(state, name))
            assert not asked or used + asked <= _allocatable(node, resource)
    best = _best(state, pod, feasible) if feasible else set()
    devices = {n: _dra(state, pod, n)[1] for n in feasible}
    result = scheduler.schedule_pod(state, pod)
    if not feasible:
        assert result.node is None
        return
    assert result.node in best, (result.node, best)
    chosen = [
        r.device
        for c in result.claims
        if c.status.allocation is not None
        for r in c.status.allocation.devices.results
    ]
    assert chosen == devices[result.node]
