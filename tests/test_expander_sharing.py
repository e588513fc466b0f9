"""The expander's judge shares work between the options of one request (between groups whose
new nodes the scheduler cannot tell apart for the offered pods, `grpcplugin.alike`) and keeps
some from one request to the next (the pods' shapes, read again only for what the object log
names; the classes that select each ResourceSlice's accelerators). Over generated clusters
(H100, Gaudi3, TPU v6e and partitionable GB200 hosts, CPU, control-plane and system nodes,
DaemonSet pods, gangs) changed between requests, with options for node groups of every kind
(pools with templates and their siblings in other zones, of other capacity types, prices,
sizes or taints; copies of existing nodes; CA's bare template; a group nothing describes)
offering pods of identical shapes (replicas of one controller) and of different ones, some
selecting a machine type, some pending in the cluster and some not yet seen: the answer
equals, verdict by verdict and in rank, that of a plain judge measuring the fork from scratch
and judging each option on its own."""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.codec import decode
from draplan.api.core_v1 import Node, Pod
from draplan.api.features import DEFAULT
from draplan.audit.metrics import workload_shapes
from draplan.audit.stranded import StrandedMeter, accelerator_classes
from draplan.cluster.incremental import Changes, MirrorState
from draplan.cluster.state import ClusterState, key_of, origin_key
from draplan.grpcplugin.judge import Answer, Candidate, Judge, Verdict, ranked
from draplan.scheduler import Scheduler, build_profile
from rules_clusters import PARTITIONED, VENDORS, _counters, _devices, _slice
from rules_clusters import cluster as rules_cluster
from topology_clusters import RACK, ZONE, ZONES

NAME = "$NODE_NAME"
TYPE = "node.kubernetes.io/instance-type"


def _template_pool(rng: random.Random, vendor: tuple[str, str, int, int, int, str]) -> Any:
    """A node group of `vendor`'s hosts described by a NodePool's template and slices."""
    driver, kind, count, numa, pcie, taint = vendor
    devices = _devices(driver, kind, count, numa, pcie)
    slices = [_slice(NAME, driver, kind, {"devices": devices})["spec"]]
    if kind == PARTITIONED:
        slices.append(_counters(NAME, driver, kind, count)["spec"])
    taints = [{"key": taint, "value": "present", "effect": "NoSchedule"}]
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": f"pool-{kind}"},
        "spec": {
            "maxNodes": rng.choice((2, 10)),
            "pricePerHour": f"{rng.uniform(1, 30):.2f}",
            "template": {
                "metadata": {"labels": {TYPE: kind, ZONE: rng.choice(ZONES)}},
                "spec": {"taints": taints if rng.random() < 0.5 else []},
                "status": {
                    "allocatable": {
                        "cpu": str(rng.choice((8, 16, 64))),
                        "memory": "256Gi",
                        "pods": str(rng.choice((4, 110))),
                    }
                },
            },
            "resourceSlices": slices,
        },
    }


def _sibling(rng: random.Random, pool: dict[str, Any], n: int) -> dict[str, Any]:
    """Another group of the same machines: in another zone or of another capacity type (a
    label value of its own), at another price; now and then with more cpu or a taint less."""
    out = copy.deepcopy(pool)
    out["metadata"]["name"] = f"{pool['metadata']['name']}-{n}"
    out["spec"]["pricePerHour"] = f"{rng.uniform(1, 30):.2f}"
    template = out["spec"]["template"]
    labels = template["metadata"]["labels"]
    change = rng.choice(("zone", "type", "zone", "cpu", "taints"))
    if change == "zone":
        labels[ZONE] = rng.choice((*ZONES, "z9"))
    elif change == "type":
        labels[TYPE] = f"{labels[TYPE]}-spot"
    elif change == "cpu":
        allocatable = template["status"]["allocatable"]
        allocatable["cpu"] = str(int(allocatable["cpu"]) * 2)
    else:
        template["spec"]["taints"] = []
    return out


def _copy_pool(rng: random.Random, node: str) -> dict[str, Any]:
    """A node group whose nodes are copies of an existing node with its slices."""
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": f"copy-{node}"},
        "spec": {"maxNodes": 10, "pricePerHour": f"{rng.uniform(1, 30):.2f}", "fromNode": node},
    }


def _replica(doc: dict[str, Any], n: int) -> dict[str, Any]:
    """Another pod of the same controller: the same spec under another name."""
    out = copy.deepcopy(doc)
    out["metadata"]["name"] = f"{doc['metadata']['name']}-r{n}"
    out["metadata"]["uid"] = f"{doc['metadata'].get('uid', doc['metadata']['name'])}-r{n}"
    return out


def _world(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """The cluster's documents (with node groups and replicas), pods CA sends that the
    cluster does not hold yet, and the node groups' ids."""
    rng = random.Random(seed)
    docs = rules_cluster(seed)
    pending = [d for d in docs if d["kind"] == "Pod" and not d["spec"].get("nodeName")]
    asking = [d for d in pending if d["spec"].get("resourceClaims")]
    # A controller of many replicas, whose shape outweighs the others' (rare shapes then
    # count only while pending), and a few of a couple.
    big = rng.choice(asking or pending)
    for doc in list(pending):
        if doc is big or rng.random() < 0.4:
            replicas = [_replica(doc, n) for n in range(20 if doc is big else rng.randint(1, 3))]
            docs += replicas
            pending += replicas
    asking = [d for d in pending if d["spec"].get("resourceClaims")] or pending
    unseen = [_replica(d, 9) for d in rng.sample(asking, min(2, len(asking)))]
    for doc in unseen:  # of a shape the cluster may not have yet
        doc["spec"]["containers"][0]["resources"].setdefault("requests", {})["cpu"] = "7"
    kinds = {d["metadata"]["name"] for d in docs if d["kind"] == "Node"}
    pools = [_template_pool(rng, v) for v in VENDORS if rng.random() < 0.7]
    pools += [_sibling(rng, p, n) for n, p in enumerate(list(pools)) if rng.random() < 0.8]
    for doc in pending:
        if rng.random() < 0.1:  # a pod that picks its machine type
            doc["spec"]["nodeSelector"] = {TYPE: rng.choice(["h100", "h100-spot", "gaudi3"])}
    pools += [_copy_pool(rng, n) for n in sorted(kinds) if n.endswith("-0") and rng.random() < 0.6]
    docs += pools
    groups = [p["metadata"]["name"] for p in pools] + ["ca-bare", "nothing-known"]
    return docs, unseen, groups


def _candidates(
    rng: random.Random, pods: list[Pod], groups: list[str], bare: Node
) -> list[Candidate]:
    """Each group offered one of a few sets of pods, as CA offers the pods that fit a group's
    template to every group they fit."""
    sets = [tuple(rng.sample(pods, rng.randint(1, len(pods)))) for _ in range(rng.randint(1, 3))]
    out = []
    for group in groups:
        template = bare if group == "ca-bare" else None
        out.append(Candidate(group, rng.randint(1, 3), rng.choice(sets), template))
    return out


class _Recording(Judge):
    """A judge that notes the meter it judged with."""

    meter: StrandedMeter | None = None

    def verdicts(
        self, state: ClusterState, candidates: Sequence[Candidate], meter: StrandedMeter
    ) -> list[Verdict]:
        self.meter = meter
        return super().verdicts(state, candidates, meter)


def _plain(
    judge: Judge, state: ClusterState, candidates: list[Candidate]
) -> tuple[Answer, StrandedMeter]:
    """Each option judged on its own, in a fork measured from scratch; the meter."""
    with state.forked():
        for c in candidates:
            for pod in c.pods:
                if key_of(pod) not in state.pods:
                    state.pods[key_of(pod)] = pod
        views = (v for name in sorted(state.slices.keys()) for v in state.slice_devices(name))
        classes = accelerator_classes(state.device_classes, views)
        meter = StrandedMeter(classes, workload_shapes(state, classes))
        verdicts = [v for c in candidates for v in judge.verdicts(state, [c], meter)]
    return ranked(verdicts, judge.chain), meter


def _said(answer: Answer, judge: Judge) -> tuple[object, ...]:
    def one(v: Verdict) -> tuple[object, ...]:
        o = v.option
        option = (
            None
            if o is None
            else (
                o.pool.metadata.name,
                o.pods,
                o.waste,
                o.stranded,
                o.devices,
                o.cost_per_hour,
                [n.node.metadata.name for n in o.nodes],
            )
        )
        c = v.candidate
        return (c.group_id, c.node_count, v.debug(), v.judged, v.needed, option)

    return (
        [one(v) for v in answer.kept],
        [one(v) for v in answer.dropped],
        [one(v) for v in answer.unjudged],
        [v.candidate.group_id for v in answer.best(judge.chain)],
    )


def _changes(rng: random.Random, docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """What the cluster may see between two requests: a pod ends or goes; every slice of a
    driver republished with a device less or none; a device class selecting all it did, or
    nothing."""
    kind = rng.choice(("Pod", "ResourceSlice", "ResourceSlice", "DeviceClass"))
    of_kind = [d for d in docs if d["kind"] == kind]
    if not of_kind:
        return []
    doc = rng.choice(of_kind)
    out = copy.deepcopy(doc)
    if kind == "Pod":
        out["status"] = {**out.get("status", {}), "phase": "Succeeded"}
        return [rng.choice((("put", out), ("delete", doc)))]
    if kind == "DeviceClass":
        expression = rng.choice(("device.attributes.size() >= 0", "device.driver == 'none'"))
        out["spec"]["selectors"].append({"cel": {"expression": expression}})
        return [("put", out)]
    keep = rng.choice((1, None))
    changed = []
    for d in of_kind:
        if d["spec"]["driver"] == doc["spec"]["driver"] and "devices" in d["spec"]:
            d = copy.deepcopy(d)
            d["spec"]["devices"] = d["spec"]["devices"][keep:] if keep else []
            changed.append(("put", d))
    return changed


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 400), rounds=st.integers(1, 3))
def test_shared_and_kept_work_answers_as_each_option_judged_alone(seed: int, rounds: int) -> None:
    rng = random.Random(seed)
    docs, unseen, groups = _world(seed)
    # As `serve` keeps the expander's state (`serve.audited`): changed in place, built anew
    # when a change calls for it.
    mirror = MirrorState()
    changes = Changes([(decode(d), "src") for d in docs], [])
    judge = _Recording(Scheduler(build_profile()))
    bare = decode(next(d for d in docs if d["metadata"]["name"] == "cpu-0"))
    assert isinstance(bare, Node)
    for _ in range(rounds):
        state = mirror.apply(changes, DEFAULT)
        if rng.random() < 0.5:
            judge.prepare(state)  # as `serve` does once the changes are applied
        pods = [p for _, p in sorted(state.pods.items()) if not p.spec.node_name]
        pods += [p for p in (decode(d) for d in unseen) if isinstance(p, Pod)]
        if not pods:
            return
        candidates = _candidates(rng, pods, groups, bare)
        fast = judge.answer(state, candidates)
        plain, meter = _plain(Judge(judge.scheduler), state, candidates)
        assert judge.meter is not None
        assert (judge.meter.shapes, judge.meter.weights) == (meter.shapes, meter.weights)
        assert _said(fast, judge) == _said(plain, judge)
        changed = [(action, decode(doc)) for action, doc in _changes(rng, docs)]
        changes = Changes(
            [(obj, "src") for action, obj in changed if action == "put"],
            [origin_key(obj) for action, obj in changed if action == "delete"],
        )


def _zone_node(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {ZONE: zone, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
    }


def _web(name: str, node: str | None = None) -> dict[str, Any]:
    """A pod of a web Deployment spread over zones (maxSkew 1, DoNotSchedule)."""
    spread = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
        "topologySpreadConstraints": [spread],
    }
    if node is not None:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": "web"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def test_groups_told_apart_only_by_a_label_a_pod_reads_are_judged_each_on_its_own() -> None:
    """Groups of one Gaudi3 machine: `a` in zone z1, which already runs two web pods while z3
    runs none; `b` in a zone no node is in; `c` in z1 as spot capacity; `d` as `b` in another
    rack than the one a running pod keeps batch pods out of. Web pods spread over zones fit
    `b` and `d`, not `a` or `c`; pods that ask for spot capacity fit only `c`; the batch pod
    only `d`. Each verdict is the one the group gets when judged alone."""
    rng = random.Random(5)
    gaudi = next(v for v in VENDORS if v[1] == "gaudi3")
    base = _template_pool(rng, gaudi)
    base["spec"]["template"]["spec"]["taints"] = []
    pools = []
    for name, zone, kind, rack in (
        ("a", "z1", "gaudi3", "r1"),
        ("b", "z2", "gaudi3", "r1"),
        ("c", "z1", "spot", "r1"),
        ("d", "z2", "gaudi3", "r2"),
    ):
        pool = copy.deepcopy(base)
        pool["metadata"]["name"] = name
        pool["spec"]["pricePerHour"] = f"{rng.uniform(1, 30):.2f}"
        pool["spec"]["template"]["metadata"]["labels"] = {TYPE: kind, ZONE: zone, RACK: rack}
        pools.append(pool)
    accel = next(d for d in rules_cluster(3) if d["kind"] == "DeviceClass")
    n3 = _zone_node("n3", "z3")
    n3["metadata"]["labels"][RACK] = "r1"
    # A running pod keeps batch pods out of its rack (required anti-affinity).
    guard = _web("guard", "n3")
    guard["metadata"]["labels"] = {"app": "guard"}
    term = {"labelSelector": {"matchLabels": {"app": "batch"}}, "topologyKey": RACK}
    guard["spec"] = {
        **guard["spec"],
        "topologySpreadConstraints": [],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    }
    docs = [accel, *pools, _zone_node("n1", "z1"), n3, guard]
    docs += [_web("web-run-0", "n1"), _web("web-run-1", "n1")]
    pending = [_web(f"web-{i}") for i in range(3)]
    batch = _web("batch-0")
    batch["metadata"]["labels"] = {"app": "batch"}
    batch["spec"]["topologySpreadConstraints"] = []
    pending.append(batch)
    for i in range(2):
        spot = _web(f"spot-{i}")
        spot["metadata"]["labels"] = {"app": "spot"}
        spot["spec"]["nodeSelector"] = {TYPE: "spot"}
        pending.append(spot)
    docs += pending
    state = ClusterState.from_objects([(decode(d), "src") for d in docs])
    pods = [state.pods["default", d["metadata"]["name"]] for d in pending]
    candidates = [Candidate(name, 2, tuple(pods)) for name in ("a", "b", "c", "d")]
    judge = Judge(Scheduler(build_profile()))
    fast = judge.answer(state, candidates)
    plain, _ = _plain(Judge(judge.scheduler), state, candidates)
    assert _said(fast, judge) == _said(plain, judge)
    assert {v.candidate.group_id: v.placed for v in fast.kept} == {"b": 2, "c": 2, "d": 3}
    assert [v.candidate.group_id for v in fast.dropped] == ["a"]
