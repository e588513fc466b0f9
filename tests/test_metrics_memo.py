"""`draplan serve` keeps a MetricsMemo and a SeriesMemo across audits of one state that events
change in place: after every small change (pods and claims that come, go or end, nodes that
come, go, get tainted or relabelled, slices that come, go, shrink or move pool), the kept memos'
metrics document and series equal those of a fresh state built from the same objects."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import random
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

import scale_scenarios
from draplan.api.codec import decode, json_text
from draplan.audit.documents import metrics_document
from draplan.audit.metrics_memo import MetricsMemo
from draplan.audit.stranded import read_set, signature
from draplan.cluster.devices import device_views
from draplan.cluster.state import ClusterState, origin_key
from draplan.serve.bodies import KeptText
from draplan.serve.series import SeriesMemo, cluster_series
from generated_clusters import TAINT, KeptObjects, generate, variant_universe
from rules_clusters import cluster as rules_cluster
from watch_support import Churn

metrics_module = importlib.import_module("draplan.audit.metrics")  # the package shadows it
memo_module = importlib.import_module("draplan.audit.metrics_memo")
CHANGING = ("Node", "ResourceSlice", "Pod", "ResourceClaim", "NodePool")
PLAN: dict[str, Any] = {"scaleUp": []}


def _variants(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The object and the changes a watch would bring for it."""
    out = [doc]
    kind = doc["kind"]
    if kind == "Node":
        tainted = copy.deepcopy(doc)
        tainted["spec"]["taints"] = [{"key": "maintenance", "effect": "NoExecute"}]
        relabelled = copy.deepcopy(doc)
        relabelled["metadata"]["labels"]["karpenter.sh/nodepool"] = "moved"
        out += [tainted, relabelled]
    elif kind == "ResourceSlice" and doc["spec"].get("devices"):
        fewer = copy.deepcopy(doc)
        fewer["spec"]["devices"] = fewer["spec"]["devices"][:-1]
        tainted = copy.deepcopy(doc)
        tainted["spec"]["pool"]["generation"] += 1
        tainted["spec"]["devices"][0]["taints"] = [dict(TAINT)]
        moved = copy.deepcopy(doc)
        moved["spec"]["pool"]["name"] += "-moved"
        out += [fewer, tainted, moved]
    elif kind == "Pod" and doc["spec"].get("nodeName"):
        done = copy.deepcopy(doc)
        done["status"]["phase"] = "Succeeded"
        out.append(done)
    elif kind == "ResourceClaim" and "status" in doc:
        freed = copy.deepcopy(doc)
        freed.pop("status")
        out.append(freed)
    return out


UNIVERSE = variant_universe((10, 0, 3), _variants)
FIXED = [vs[0] for vs in UNIVERSE if vs[0].kind not in CHANGING]  # device classes
CHANGES = [i for i, vs in enumerate(UNIVERSE) if vs[0].kind in CHANGING]

change = st.tuples(
    st.sampled_from(("put", "put", "delete")), st.sampled_from(CHANGES), st.integers(0, 3)
)


def _documents(
    state: ClusterState, memo: MetricsMemo | None, series: SeriesMemo | None
) -> tuple[str, str]:
    doc = metrics_document(state, memo)
    families = cluster_series(state, (), doc, PLAN, [], series)
    return json.dumps(doc), repr(families)


@settings(max_examples=60, deadline=None)
@given(
    initial=st.lists(st.sampled_from(CHANGES), unique=True, max_size=60),
    changes=st.lists(change, min_size=1, max_size=15),
)
def test_kept_memos_measure_every_change_as_a_fresh_state_does(
    initial: list[int], changes: list[tuple[str, int, int]]
) -> None:
    kept = KeptObjects([*FIXED, *(UNIVERSE[i][0] for i in initial)], "src")
    memo, series, text = MetricsMemo(), SeriesMemo(), KeptText()
    _documents(kept.inc.flush(), memo, series)
    for action, i, v in changes:
        variants = UNIVERSE[i]
        kept.change(action, variants[v % len(variants)])
        assert _documents(kept.inc.flush(), memo, series) == _documents(kept.fresh(), None, None)
        # serve's body of the kept document, its kept scopes' texts reused
        body = text(metrics_document(kept.inc.flush(), memo))
        assert body == json_text(metrics_document(kept.fresh()))


def test_kept_chunk_sums_follow_pods_ending(monkeypatch: Any) -> None:
    """Scopes summed a few parts at a time (as 10,000 nodes are, CHUNK at a time): after each
    running pod ends, the kept sums give the fresh document, and the pod's node changed."""
    monkeypatch.setattr(memo_module, "CHUNK", 3)
    objects = [(vs[0], "src") for vs in UNIVERSE]
    state = ClusterState.from_objects(objects)
    memo = MetricsMemo()
    before = json.loads(_documents(state, memo, None)[0])
    running = [p for _, p in sorted(state.pods.items()) if p.spec.node_name][:4]
    assert running
    for i, pod in enumerate(running):
        state.remove_pod((pod.metadata.namespace, pod.metadata.name))
        fresh = ClusterState.from_objects(objects)
        for ended in running[: i + 1]:
            fresh.remove_pod((ended.metadata.namespace, ended.metadata.name))
        after = json.loads(_documents(state, memo, None)[0])
        assert after == json.loads(_documents(fresh, None, None)[0])
    assert after["nodes"][running[0].spec.node_name] != before["nodes"][running[0].spec.node_name]


def test_exclusive_pools_are_counted_as_device_by_device(monkeypatch: Any) -> None:
    """The shortcut for pools of one node's exclusive devices gives what counting each
    device and GPU gives."""
    state = ClusterState.from_objects([vs[0] for vs in UNIVERSE])
    fast = json.dumps(metrics_document(state))
    monkeypatch.setattr(metrics_module._Collector, "exclusive_part", lambda *_: None)
    assert json.dumps(metrics_document(state)) == fast


def test_devices_alike_share_a_signature_unless_a_read_is_ambiguous() -> None:
    slices = [s for s in map(decode, generate(0)) if s.kind == "ResourceSlice"]
    views = [v for rs in slices for v in device_views(rs)]
    by_model = read_set(["device.attributes['gpu.example.com'].model == 'h100'"])
    alike = {
        (
            v.driver,
            v.multi,
            tuple(v.device.capacity.items()),
            v.consumes,
            v.device.attributes.get("model"),
        )
        for v in views
    }
    assert len({signature(v, by_model) for v in views}) == len(alike) < len(views)
    assert signature(views[0], None) is None
    view = views[0]
    both = {**view.device.attributes, "gpu.example.com/model": view.device.attributes["model"]}
    twin = dataclasses.replace(view, device=msgspec.structs.replace(view.device, attributes=both))
    assert signature(twin, by_model) is None


def _pod_claim_variants(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A pod that ends or waits again, a claim freed, a claim template asking one more."""
    out = [doc]
    if doc["kind"] == "Pod":
        done = copy.deepcopy(doc)
        done["status"] = {**done.get("status", {}), "phase": "Succeeded"}
        waiting = copy.deepcopy(doc)
        waiting["spec"].pop("nodeName", None)
        out += [done, waiting]
    elif doc["kind"] == "ResourceClaim" and "status" in doc:
        freed = copy.deepcopy(doc)
        freed.pop("status")
        out.append(freed)
    elif doc["kind"] == "ResourceClaimTemplate":
        more = copy.deepcopy(doc)
        for request in more["spec"]["spec"]["devices"]["requests"]:
            if "exactly" in request:
                request["exactly"]["count"] = request["exactly"].get("count", 1) + 1
        out.append(more)
    return out


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 60),
    changes=st.lists(
        st.tuples(
            st.sampled_from(("put", "put", "delete")), st.integers(0, 999), st.integers(0, 2)
        ),
        min_size=1,
        max_size=20,
    ),
)
def test_kept_pod_shapes_follow_pod_and_claim_changes_on_mixed_vendors(
    seed: int, changes: list[tuple[str, int, int]]
) -> None:
    """H100, Gaudi3 and TPU hosts, control-plane and system nodes, DaemonSet pods: after each
    pod, claim or claim template change, the kept memo's pod shapes (read only for what the
    object log names) and metrics document equal a fresh state's."""
    docs = rules_cluster(seed)
    kept = KeptObjects([decode(d) for d in docs], "src")
    changing = [
        [decode(v) for v in _pod_claim_variants(d)]
        for d in docs
        if d["kind"] in ("Pod", "ResourceClaim", "ResourceClaimTemplate")
    ]
    memo = MetricsMemo()
    _documents(kept.inc.flush(), memo, None)
    classes = memo._shape_classes
    for action, i, v in changes:
        variants = changing[i % len(changing)]
        kept.change(action, variants[v % len(variants)])
        state, fresh = kept.inc.flush(), kept.fresh()
        counts, pending = memo.shapes(state, classes)
        fresh_counts, fresh_pending = MetricsMemo().shapes(fresh, classes)
        assert counts == fresh_counts and set(pending) == set(fresh_pending)
        assert _documents(state, memo, None) == _documents(fresh, None, None)


def test_kept_series_count_each_churn_step_as_a_fresh_state_does() -> None:
    """`serve`'s churn (jobs starting and ending on node-local GPU pools, nodes relabelled,
    slices republished) and a NodePool that copies a node coming and going (the node's pool
    changes with no event on the node): after each step, the series counted by a kept memo,
    only for the nodes changed, equal a fresh state's."""
    churn = Churn(random.Random(7), nodes=10, gpus=4, fill=0.5)
    copies = decode(scale_scenarios.from_node_pool("copies", "2.5", source="node-00001"))
    kept = KeptObjects([decode(d) for d in churn.initial], "src")
    metrics, series = MetricsMemo(), SeriesMemo()
    for step in range(60):
        if step % 7 == 3:
            kept.change("delete" if origin_key(copies) in kept.store else "put", copies)
        for action, doc in churn.step():
            kept.change(action, decode(doc))
        got = _documents(kept.inc.flush(), metrics, series)
        assert got == _documents(kept.fresh(), None, None)
