"""`why` against the scheduler on 300 generated clusters (tests/generated_clusters.py).

For every pending pod: Schedulable exactly when the scheduler places it in the same pass; a
pod whose only possible hosts (empty copies of its nodes and NodePool templates, its node
constraints set aside) are all excluded by its taints, selectors or cordons is NodeConstraints,
never a question of capacity; a pod no empty node shape can hold is never promised a place.
No fix moves a pod that is not running. Every fix marked verified is applied again here, by
this file's own code, to a fresh copy of the state after the pass, and the scheduler must
place the pod; verified fixes applied one after another in queue order must place every pod
(no room promised twice).
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from draplan.api.codec import decode
from draplan.api.core_v1 import Node, Pod, Toleration
from draplan.api.resource_v1 import ResourceClaimTemplate, ResourceSlice
from draplan.audit import Diagnosis, why
from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler import Scheduler
from generated_clusters import generate
from scale_scenarios import load

SEEDS = range(300)
NEVER_WITHOUT_A_HOST = {
    "Schedulable",
    "NodeConstraints",
    "WaitingForScaleUp",
    "PoolLimitReached",
    "Fragmentation",
}
Objs = list[dict[str, Any]]


def after_pass(objs: Objs) -> tuple[ClusterState, dict[ObjectKey, str | None]]:
    state = load(objs)
    placed = {r.key: r.node for r in Scheduler().run(state)}
    return state, placed


def _copy_node(state: ClusterState, objs: Objs, source: str, name: str, uncordon: bool) -> None:
    """An empty copy of node `source` (its Node object and node-local slices) called `name`."""
    for obj in objs:
        if obj["kind"] == "Node" and obj["metadata"]["name"] == source:
            doc = copy.deepcopy(obj)
            doc["metadata"]["name"] = name
            doc["metadata"]["labels"]["kubernetes.io/hostname"] = name
            if uncordon:
                doc["spec"].pop("unschedulable", None)
            node = decode(doc)
            assert isinstance(node, Node)
            state.add_node(node)
        elif obj["kind"] == "ResourceSlice" and obj["spec"].get("nodeName") == source:
            doc = copy.deepcopy(obj)
            doc["metadata"]["name"] = f"{name}-{obj['metadata']['name']}"
            doc["spec"]["nodeName"] = name
            doc["spec"]["pool"]["name"] = name
            rs = decode(doc)
            assert isinstance(rs, ResourceSlice)
            state.add_slice(rs)


def _relaxed(pod: Pod) -> Pod:
    spec = msgspec.structs.replace(
        pod.spec, tolerations=(Toleration(operator="Exists"),), node_selector={}, affinity=None
    )
    return msgspec.structs.replace(pod, spec=spec)


def _admits(pod: Pod, node: Node) -> bool:
    """The pod's node constraints as written in the generator: taints, zone, cordon."""
    if node.spec.unschedulable:
        return False
    for taint in node.spec.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            t.key == taint.key and t.operator == "Exists" for t in pod.spec.tolerations
        ):
            return False
    labels = node.metadata.labels
    return all(labels.get(k) == v for k, v in pod.spec.node_selector.items())


def hosts(objs: Objs, key: ObjectKey) -> tuple[bool, bool]:
    """(some empty node shape holds the pod with its node constraints set aside, some that
    its constraints admit does)."""
    state = load(objs)
    pod = state.pods[key]
    sources = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    sources += [o["spec"]["fromNode"] for o in objs if o["kind"] == "NodePool"]
    ignoring = respecting = False
    for source in sources:
        with state.forked():
            _copy_node(state, objs, source, "twin", uncordon=False)
            if Scheduler().schedule_pod(state, _relaxed(pod), ["twin"]).node is None:
                continue
            ignoring = True
            respecting = respecting or _admits(pod, state.nodes["twin"])
    return ignoring, respecting


def _release(state: ClusterState, key: ObjectKey) -> None:
    pod = state.pods[key]
    for ref in pod.spec.resource_claims:
        claim = state.claims[(key[0], ref.resource_claim_name or "")]
        status = msgspec.structs.replace(claim.status, allocation=None, reserved_for=())
        state.put_claim(msgspec.structs.replace(claim, status=status))
    state.unbind_pod(pod)


def apply_fix(state: ClusterState, objs: Objs, key: ObjectKey, fix: dict[str, Any], n: int) -> bool:
    """Apply `fix` as its JSON says, schedule the pod and the moved pods; all placed?"""
    pod = state.pods[key]
    spec = pod.spec
    if "tolerations" in fix:
        extra = tuple(Toleration(**t) for t in fix["tolerations"])
        spec = msgspec.structs.replace(spec, tolerations=(*spec.tolerations, *extra))
    if "relax" in fix:
        spec = msgspec.structs.replace(spec, node_selector={}, affinity=None)
    if "dropConstraints" in fix:
        ref = spec.resource_claims[0]
        template = state.claim_templates[(key[0], ref.resource_claim_template_name or "")]
        devices = msgspec.structs.replace(template.spec.spec.devices, constraints=())
        inner = msgspec.structs.replace(template.spec.spec, devices=devices)
        relaxed = msgspec.structs.replace(
            template,
            metadata=msgspec.structs.replace(template.metadata, name=f"relaxed-{key[1]}"),
            spec=msgspec.structs.replace(template.spec, spec=inner),
        )
        assert isinstance(relaxed, ResourceClaimTemplate)
        state.claim_templates[(key[0], f"relaxed-{key[1]}")] = relaxed
        new_ref = msgspec.structs.replace(ref, resource_claim_template_name=f"relaxed-{key[1]}")
        spec = msgspec.structs.replace(spec, resource_claims=(new_ref,))
    state.pods[key] = msgspec.structs.replace(pod, spec=spec)
    for name in fix.get("uncordon", []):
        node = state.nodes[name]
        state.add_node(
            msgspec.structs.replace(
                node, spec=msgspec.structs.replace(node.spec, unschedulable=False)
            )
        )
    if "like" in fix:
        for i in range(fix["add"]):
            _copy_node(state, objs, fix["like"], f"new-{n}-{i}", uncordon=True)
    elif "pool" in fix:
        pool = next(
            o for o in objs if o["kind"] == "NodePool" and o["metadata"]["name"] == fix["pool"]
        )
        count = fix.get("maxNodes", fix["add"])
        for i in range(count):
            _copy_node(state, objs, pool["spec"]["fromNode"], f"new-{n}-{i}", uncordon=False)
    moves = [
        ((lbl.split("/")[0], lbl.split("/")[1]), target)
        for lbl, target in fix.get("move", {}).items()
    ]
    for moved, _ in moves:
        _release(state, moved)
    scheduler = Scheduler()
    if scheduler.schedule_pod(state, state.pods[key]).node is None:
        return False
    return all(scheduler.schedule_pod(state, state.pods[m], [t]).node for m, t in moves)


def _queue(objs: Objs, diagnoses: list[Diagnosis]) -> list[Diagnosis]:
    created = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["metadata"].get(
            "creationTimestamp", ""
        )
        for o in objs
        if o["kind"] == "Pod"
    }
    return sorted(diagnoses, key=lambda d: (created[d.pod], d.pod))


@pytest.mark.parametrize("chunk", range(10))
def test_why_agrees_with_the_scheduler(chunk: int) -> None:
    for seed in SEEDS[chunk::10]:
        _check(seed)


def _check(seed: int) -> None:
    objs = generate(seed)
    diagnoses = why(load(objs))
    _, placed = after_pass(objs)
    pending = {d.pod for d in diagnoses}
    for d in diagnoses:
        where = f"seed {seed}: {d.to_dict()}"
        assert (d.category == "Schedulable") == bool(placed.get(d.pod)), where
        ignoring, respecting = hosts(objs, d.pod)
        if ignoring and not respecting:
            assert d.category == "NodeConstraints", where
        if not ignoring:
            assert d.category not in NEVER_WITHOUT_A_HOST, where
        if d.category == "Fragmentation" or "short" in d.evidence:
            assert respecting, where  # room on the nodes that could hold it is the question
        fix = d.fix
        if fix is None:
            continue
        # Only running pods move: the pods under audit are pending, even those placed.
        assert not {f"{ns}/{name}" for ns, name in pending} & set(fix.get("move", {})), where
        if not fix["verified"]:
            assert not {
                "tolerations",
                "relax",
                "uncordon",
                "dropConstraints",
                "like",
                "move",
            } & set(fix), where
            continue
        state, _ = after_pass(objs)
        assert apply_fix(state, objs, d.pod, fix, 0), f"fix does not work alone: {where}"
    # Together, in queue order: no room promised twice.
    state, _ = after_pass(objs)
    for n, d in enumerate(_queue(objs, diagnoses)):
        if (
            d.fix is not None
            and d.fix["verified"]
            and "costPerHour" not in d.fix
            and "maxNodes" not in d.fix
        ):
            assert apply_fix(state, objs, d.pod, d.fix, n + 1), (
                f"seed {seed}: together: {d.to_dict()}"
            )


def test_the_generator_is_deterministic_and_varied() -> None:
    assert generate(7) == generate(7)
    kinds = {o["kind"] for seed in range(20) for o in generate(seed)}
    assert {"Node", "ResourceSlice", "Pod", "ResourceClaim", "NodePool"} <= kinds
