"""`why` with a placer kept between audits of one changing state (as `draplan serve` runs it)
answers exactly what a fresh `why` answers on a freshly loaded copy of the same objects, after
every one of a random sequence of small changes: running pods and their claims ending or
coming back, pending pods added or deleted, nodes added, removed, tainted or cordoned.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from draplan.api.codec import decode, json_text
from draplan.api.core_v1 import Node, Pod
from draplan.api.resource_v1 import ResourceClaim, ResourceSlice
from draplan.audit.documents import why_document
from draplan.audit.why import Placer, why
from draplan.cluster.state import ClusterState
from draplan.scheduler import build_profile
from generated_clusters import TAINT, generate

SEEDS = range(60)
STEPS = 10
Objs = list[dict[str, Any]]


def _document(state: ClusterState, placer: Placer | None = None) -> str:
    profile = placer.profile if placer is not None else None
    return json_text(why_document(why(state, profile, placer)))


def _of(objs: Objs, kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def _running(objs: Objs) -> list[dict[str, Any]]:
    return [p for p in _of(objs, "Pod") if p["spec"].get("nodeName")]


def _pending(objs: Objs) -> list[dict[str, Any]]:
    return [p for p in _of(objs, "Pod") if not p["spec"].get("nodeName")]


def _key(doc: dict[str, Any]) -> tuple[str, str]:
    return (doc["metadata"].get("namespace", ""), doc["metadata"]["name"])


class World:
    """The objects as a list of manifests and a state kept up to date with them in place."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.objs = generate(seed)
        self.state = ClusterState.from_objects(decode(o) for o in self.objs)
        self.ended: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (pod, claim)
        self.added = 0

    def fresh(self) -> ClusterState:
        return ClusterState.from_objects(decode(o) for o in self.objs)

    def step(self) -> str:
        changes = [
            self.end_running,
            self.restart_ended,
            self.add_pending,
            self.delete_pending,
            self.copy_node,
            self.remove_node,
            self.taint_node,
            self.cordon_node,
        ]
        while True:
            change = self.rng.choice(changes)
            done = change()
            if done:
                return done

    def _put(self, doc: dict[str, Any]) -> Any:
        self.objs.append(doc)
        return decode(doc)

    def end_running(self) -> str:
        running = _running(self.objs)
        if not running:
            return ""
        pod = self.rng.choice(running)
        name = pod["spec"]["resourceClaims"][0]["resourceClaimName"]
        claim = next(c for c in _of(self.objs, "ResourceClaim") if _key(c) == (_key(pod)[0], name))
        self.objs.remove(pod)
        self.objs.remove(claim)
        self.state.delete_pod(_key(pod))
        self.state.remove_claim(_key(claim))
        self.ended.append((pod, claim))
        return f"end {_key(pod)}"

    def restart_ended(self) -> str:
        if not self.ended:
            return ""
        pod, claim = self.ended.pop(self.rng.randrange(len(self.ended)))
        if pod["spec"]["nodeName"] not in {n["metadata"]["name"] for n in _of(self.objs, "Node")}:
            return ""
        # Its devices may have been given to another pod since: only when they are free.
        held = {
            (r["pool"], r["device"])
            for c in _of(self.objs, "ResourceClaim")
            for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
        }
        results = claim["status"]["allocation"]["devices"]["results"]
        if any((r["pool"], r["device"]) in held for r in results):
            return ""
        new_claim = self._put(claim)
        assert isinstance(new_claim, ResourceClaim)
        self.state.put_claim(new_claim)
        new_pod = self._put(pod)
        assert isinstance(new_pod, Pod)
        self.state.put_pod(new_pod)
        return f"restart {_key(pod)}"

    def add_pending(self) -> str:
        pending = _pending(self.objs)
        if not pending:
            return ""
        doc = copy.deepcopy(self.rng.choice(pending))
        self.added += 1
        doc["metadata"]["name"] = f"added-{self.added}"
        doc["metadata"]["uid"] = f"uid-added-{self.added}"
        pod = self._put(doc)
        assert isinstance(pod, Pod)
        self.state.put_pod(pod)
        return f"add pending {doc['metadata']['name']}"

    def delete_pending(self) -> str:
        pending = _pending(self.objs)
        if len(pending) < 2:
            return ""
        doc = self.rng.choice(pending)
        self.objs.remove(doc)
        self.state.delete_pod(_key(doc))
        return f"delete pending {_key(doc)}"

    def copy_node(self) -> str:
        source = self.rng.choice(_of(self.objs, "Node"))["metadata"]["name"]
        self.added += 1
        name = f"copy-{self.added}"
        for obj in list(self.objs):
            if obj["kind"] == "Node" and obj["metadata"]["name"] == source:
                doc = copy.deepcopy(obj)
                doc["metadata"]["name"] = name
                doc["metadata"]["labels"]["kubernetes.io/hostname"] = name
                node = self._put(doc)
                assert isinstance(node, Node)
                self.state.add_node(node)
        for obj in list(self.objs):
            if obj["kind"] == "ResourceSlice" and obj["spec"].get("nodeName") == source:
                doc = copy.deepcopy(obj)
                doc["metadata"]["name"] = f"{name}-{obj['metadata']['name']}"
                doc["spec"]["nodeName"] = name
                doc["spec"]["pool"]["name"] = name
                rs = self._put(doc)
                assert isinstance(rs, ResourceSlice)
                self.state.add_slice(rs)
        return f"copy node {source} as {name}"

    def remove_node(self) -> str:
        copied = {p["spec"].get("fromNode") for p in _of(self.objs, "NodePool")}
        nodes = [n for n in _of(self.objs, "Node") if n["metadata"]["name"] not in copied]
        if len(nodes) < 2:
            return ""
        name = self.rng.choice(nodes)["metadata"]["name"]
        # The node with its slices, its running pods and their claims (as a drain leaves it).
        gone = [p for p in _running(self.objs) if p["spec"]["nodeName"] == name]
        claims = {
            (_key(p)[0], r["resourceClaimName"])
            for p in gone
            for r in p["spec"].get("resourceClaims", [])
            if r.get("resourceClaimName")
        }
        for pod in gone:
            self.objs.remove(pod)
            self.state.delete_pod(_key(pod))
        for claim in [c for c in _of(self.objs, "ResourceClaim") if _key(c) in claims]:
            self.objs.remove(claim)
            self.state.remove_claim(_key(claim))
        self.objs = [
            o
            for o in self.objs
            if not (o["kind"] == "Node" and o["metadata"]["name"] == name)
            and not (o["kind"] == "ResourceSlice" and o["spec"].get("nodeName") == name)
        ]
        self.state.remove_node(name)
        return f"remove node {name}"

    def _replace_node(self, change: Any) -> str:
        doc = self.rng.choice(_of(self.objs, "Node"))
        new = copy.deepcopy(doc)
        what = change(new["spec"])
        self.objs.remove(doc)
        node = self._put(new)
        assert isinstance(node, Node)
        self.state.add_node(node)
        return f"{what} {doc['metadata']['name']}"

    def taint_node(self) -> str:
        def change(spec: dict[str, Any]) -> str:
            if spec.get("taints"):
                spec["taints"] = []
                return "untaint"
            spec["taints"] = [dict(TAINT)]
            return "taint"

        return self._replace_node(change)

    def cordon_node(self) -> str:
        def change(spec: dict[str, Any]) -> str:
            spec["unschedulable"] = not spec.get("unschedulable", False)
            return "cordon" if spec["unschedulable"] else "uncordon"

        return self._replace_node(change)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_kept_why_equals_a_fresh_one_after_every_change(seed: int) -> None:
    world = World(seed)
    placer = Placer(build_profile())
    assert _document(world.state, placer) == _document(world.fresh())
    done = []
    for _ in range(STEPS):
        done.append(world.step())
        kept, fresh = _document(world.state, placer), _document(world.fresh())
        if kept != fresh:
            diff = [
                (a, b)
                for a, b in zip(json.loads(kept)["pods"], json.loads(fresh)["pods"], strict=False)
                if a != b
            ]
            pytest.fail(f"after {done}: kept != fresh: {diff[:2]}")
