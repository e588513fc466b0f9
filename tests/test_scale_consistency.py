"""One scale pass is consistent (issue 15, point 5), over 300 seeded small random clusters with
NodePools: it never adds nodes to a pool or shape it removes nodes of, never removes a node
the scale-up placed one of its pending pods on, moves evicted pods to existing nodes only, and
every move it makes or offers instead of a new node (a one-pod move is made, never a node
bought instead) moves only pods Cluster Autoscaler would move and works when replayed on the
untouched cluster.

The generator is local to this file (random pools of GPU nodes, some tainted; nodes labelled as
Karpenter or draplan label them; running pods placed by the scheduler; pending pods asking
1-8 GPUs of one model, some tolerating the taint)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from draplan.api.codec import decode
from draplan.autoscaler import Autoscaler
from draplan.autoscaler.shapes import node_shape
from draplan.cluster.nodepools import pool_name
from draplan.cluster.state import ClusterState, ObjectKey, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import release_claims
from scale_scenarios import DRIVER, device_class, gpus, node, node_pool, pod, template

SEEDS = range(300)
TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"


@dataclass(frozen=True)
class Shape:
    gpus: int
    model: str
    tainted: bool


def _devices(shape: Shape) -> list[dict[str, Any]]:
    devices = gpus(shape.gpus)
    for d in devices:
        d["attributes"]["model"] = {"string": shape.model}
    return devices


def _claim_template(count: int, model: str) -> dict[str, Any]:
    request: dict[str, Any] = {"name": "gpus", "exactly": {"deviceClassName": DRIVER}}
    request["exactly"]["count"] = count
    if model:
        selector = f"device.attributes['{DRIVER}'].model == '{model}'"
        request["exactly"]["selectors"] = [{"cel": {"expression": selector}}]
    return template(f"g{count}-{model or 'any'}", [request])


def _pod(rng: random.Random, name: str, counts: list[int], tolerate: bool) -> dict[str, Any]:
    count = rng.choice(counts)
    model = rng.choice(["", "a", "b"])
    extra = {"tolerations": [TOLERATION]} if tolerate else None
    doc = pod(name, f"g{count}-{model or 'any'}", cpu=str(rng.choice([1, 4, 16])), spec_extra=extra)
    doc["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return doc


def generate(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(cluster objects, pods to run on it first, pods pending for the pass)."""
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [device_class()]
    objs += [_claim_template(c, m) for c in (1, 2, 4, 8) for m in ("", "a", "b")]
    shapes = []
    for i in range(rng.randint(1, 3)):
        shape = Shape(rng.choice([1, 2, 4, 8]), rng.choice(["a", "b"]), rng.random() < 0.3)
        shapes.append(shape)
        doc = node_pool(f"p{i}", str(rng.choice([1, 3, 10, 30])), _devices(shape))
        doc["spec"]["maxNodes"] = rng.randint(1, 4)
        doc["spec"]["minNodes"] = rng.choice([0, 0, 1])
        doc["spec"]["template"]["metadata"]["labels"]["node.kubernetes.io/instance-type"] = (
            f"type-{i}"
        )
        if shape.tainted:
            doc["spec"]["template"]["spec"] = {"taints": [TAINT]}
        objs.append(doc)
    for j in range(rng.randint(0, 5)):
        i = rng.randrange(len(shapes))
        shape = shapes[i]
        if rng.random() < 0.2:  # a node of no pool, maybe of a pool's shape
            shape = Shape(rng.choice([1, 2, 4, 8]), rng.choice(["a", "b"]), False)
            labels = {"node.kubernetes.io/instance-type": f"type-{rng.randint(0, 3)}"}
        else:
            group = rng.choice(["draplan.io/node-pool", "karpenter.sh/nodepool"])
            labels = {group: f"p{i}", "node.kubernetes.io/instance-type": f"type-{i}"}
        name = f"n{j}"
        doc = node(name, labels=labels)
        if shape.tainted:
            doc["spec"] = {"taints": [TAINT]}
        objs.append(doc)
        objs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": _devices(shape),
                },
            }
        )
    running = []
    for k in range(rng.randint(0, 6)):
        doc = _pod(rng, f"run-{k}", [1, 1, 2, 4], rng.random() < 0.6)
        if rng.random() < 0.1:
            doc["metadata"]["annotations"] = {SAFE_TO_EVICT: "false"}
        owner = rng.choice(["ReplicaSet", "StatefulSet", "Job"] * 6 + ["DaemonSet", ""])
        if owner:
            doc["metadata"]["ownerReferences"] = [
                {"apiVersion": "apps/v1", "kind": owner, "name": f"c-{k}", "controller": True}
            ]
        running.append(doc)
    pending = [_pod(rng, f"want-{k}", [1, 2, 4, 8], rng.random() < 0.5) for k in range(4)]
    return objs, running, pending[: rng.randint(1, 4)]


def build(seed: int) -> ClusterState:
    """The cluster with its running pods placed by the scheduler and the pending pods added."""
    objs, running, pending = generate(seed)
    state = ClusterState.from_objects(decode(o) for o in [*objs, *running])
    Scheduler().run(state)
    for key, p in sorted(state.pods.items()):
        if not p.spec.node_name:
            state.remove_pod(key)  # found no room: not part of this cluster
    for doc in pending:
        p = decode(doc)
        state.pods[key_of(p)] = p
    return state


def _pending(state: ClusterState) -> set[ObjectKey]:
    return {k for k, p in state.pods.items() if not p.spec.node_name}


@dataclass
class Seen:
    removals: int = 0
    removals_beside_scale_up: int = 0
    moves: int = 0
    made: int = 0


def _check(seed: int, seen: Seen) -> None:
    # The scale-up half alone, for where it puts the pass's pending pods.
    up = build(seed)
    wanted = _pending(up)
    Autoscaler().plan(up, explain=False, scale_down=False)
    placed_on = {up.pods[k].spec.node_name for k in wanted if up.pods[k].spec.node_name}

    before = build(seed)
    after = build(seed)
    plan = Autoscaler().plan(after, explain=False, moves=True)
    added = {n.node.metadata.name for o in plan.scale_up for n in o.nodes}
    removed = {r.node for r in plan.scale_down}
    seen.removals += bool(removed)
    seen.removals_beside_scale_up += bool(removed and added)
    seen.moves += len(plan.moves)
    seen.made += sum(m.made for m in plan.moves)
    for option in plan.moves:
        assert not option.made or len(option.move) == 1, seed  # only one-pod moves are made
        for text in option.move:
            assert _movable(before.pods[_key(text)]), (seed, text)

    added_pools = {o.pool.metadata.name for o in plan.scale_up}
    added_shapes = [node_shape(after, after.nodes[n]) for n in sorted(added)]
    for name in sorted(removed):
        old = before.nodes[name]
        assert pool_name(before, old) not in added_pools, (seed, name)
        assert not any(node_shape(before, old).matches(s) for s in added_shapes), (seed, name)
        assert name not in placed_on, (seed, name)
    # Cluster Autoscaler removes nothing in a loop that scaled up: such removals come later.
    assert all(r.delayed == bool(added) for r in plan.scale_down), seed
    for key, p in before.pods.items():
        if p.spec.node_name not in removed:
            continue
        if key not in after.pods:
            # Evicted with its node, never moved (CA's drain: DaemonSet pods).
            assert [r.kind for r in p.metadata.owner_references] == ["DaemonSet"], (seed, key)
            continue
        assert after.pods[key].spec.node_name not in added, (seed, key)
    _replay_moves(seed, plan.moves)


def _movable(pod: Any) -> bool:
    """What Cluster Autoscaler moves when it drains a node: a pod with a controller of a
    replicated kind (not a DaemonSet), not annotated safe-to-evict "false"."""
    owners = [r.kind for r in pod.metadata.owner_references if r.controller]
    kinds = {"ReplicaSet", "StatefulSet", "Job", "ReplicationController"}
    return (
        bool(owners)
        and owners[0] in kinds
        and pod.metadata.annotations.get(SAFE_TO_EVICT) != "false"
    )


def _replay_moves(seed: int, moves: list[Any]) -> None:
    """Each option (made by the plan or offered), made on the untouched cluster one after
    another, works."""
    state = build(seed)
    scheduler = Scheduler()
    for option in moves:
        keys = [_key(text) for text in option.move]
        assert not release_claims(state, set(keys)), seed
        for key in keys:
            state.unbind_pod(state.pods[key])
        for text, where in option.place.items():
            assert scheduler.schedule_pod(state, state.pods[_key(text)], [where]).node, seed
        for key, where in zip(keys, option.move.values(), strict=True):
            assert scheduler.schedule_pod(state, state.pods[key], [where]).node, seed


def _key(text: str) -> ObjectKey:
    namespace, name = text.split("/", 1)
    return (namespace, name)


def test_a_scale_pass_never_contradicts_itself() -> None:
    seen = Seen()
    for seed in SEEDS:
        _check(seed, seen)
    # The clusters exercise what is checked: removals, removals in a pass that adds nodes,
    # and moves offered instead of new nodes.
    assert seen.removals >= 10 and seen.removals_beside_scale_up >= 3 and seen.moves >= 3, seen
    assert seen.made >= 1, seen
