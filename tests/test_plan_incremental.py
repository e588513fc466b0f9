"""An autoscaler kept between plans of one changing state (as `draplan serve` keeps it) plans
exactly what a fresh autoscaler plans on a freshly loaded copy of the state, after every small
change: pods and claims ending or starting, nodes leaving and coming back, cordons, taints,
pending pods added and removed."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from draplan.api.codec import decode, json_text
from draplan.api.core_v1 import Node, Pod, Taint
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.meta import KubeStruct
from draplan.api.resource_v1 import ResourceClaim, ResourceSlice
from draplan.audit.documents import plan_document
from draplan.autoscaler import Autoscaler
from draplan.autoscaler.derived import derive_again
from draplan.cluster.state import origin_key
from generated_clusters import KeptObjects, generate

BENCHMARKS = Path(__file__).parent.parent / "benchmarks"


def _bench_audit() -> ModuleType:
    """benchmarks/bench_audit.py: GPU nodes filled in five patterns, where scale-down moves
    pods from node to node in a chain."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))  # it imports its neighbour `clusters`
    spec = importlib.util.spec_from_file_location("bench_audit", BENCHMARKS / "bench_audit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Cluster(KeptObjects):
    """The objects of a cluster, changed at random."""

    def __init__(self, objects: list[KubeStruct], rng: random.Random) -> None:
        super().__init__(objects)
        self.rng = rng
        self.gone: list[list[KubeStruct]] = []  # objects taken away, to bring back later
        self.derived: dict[str, NodePool] = {}
        self.serial = 0

    def of(self, kind: type[Any]) -> list[Any]:
        return sorted(
            (o for o in self.store.values() if isinstance(o, kind)), key=lambda o: origin_key(o)
        )

    # --- changes ----------------------------------------------------------------------------

    def _claims_of(self, pod: Pod) -> list[ResourceClaim]:
        names = {r.resource_claim_name for r in pod.spec.resource_claims}
        return [
            c
            for c in self.of(ResourceClaim)
            if c.metadata.namespace == pod.metadata.namespace and c.metadata.name in names
        ]

    def end_running_pod(self) -> None:
        running = [p for p in self.of(Pod) if p.spec.node_name]
        if running:
            pod = self.rng.choice(running)
            taken = [pod, *self._claims_of(pod)]
            for obj in taken:
                self.delete(obj)
            self.gone.append(taken)

    def bring_back(self) -> None:
        if self.gone:
            for obj in self.gone.pop(self.rng.randrange(len(self.gone))):
                self.put(obj)

    def start_cpu_pod(self) -> None:
        nodes = self.of(Node)
        if nodes:
            self.serial += 1
            pod = decode(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"cpu-{self.serial}", "namespace": "work"},
                    "spec": {
                        "nodeName": self.rng.choice(nodes).metadata.name,
                        "containers": [
                            {"name": "c", "resources": {"requests": {"cpu": "2"}}},
                        ],
                    },
                    "status": {"phase": "Running"},
                }
            )
            self.put(pod)

    def remove_node(self) -> None:
        copied = {p.spec.from_node for p in self.of(NodePool)}
        nodes = [n for n in self.of(Node) if n.metadata.name not in copied]
        if len(nodes) > 1:
            node = self.rng.choice(nodes)
            name = node.metadata.name
            slices = [s for s in self.of(ResourceSlice) if s.spec.node_name == name]
            pods = [p for p in self.of(Pod) if p.spec.node_name == name]
            taken: list[KubeStruct] = [node, *slices]
            for pod in pods:
                taken += [pod, *self._claims_of(pod)]
            for obj in taken:
                self.delete(obj)
            self.gone.append(taken)

    def restyle_node(self) -> None:
        nodes = self.of(Node)
        if nodes:
            node = self.rng.choice(nodes)
            spec = node.spec
            if self.rng.random() < 0.5:
                spec = msgspec.structs.replace(spec, unschedulable=not spec.unschedulable)
            elif spec.taints:
                spec = msgspec.structs.replace(spec, taints=())
            else:
                taint = Taint(key="maintenance", value="soon", effect="NoSchedule")
                spec = msgspec.structs.replace(spec, taints=(taint,))
            self.put(msgspec.structs.replace(node, spec=spec))

    def add_pending_pod(self) -> None:
        pending = [p for p in self.of(Pod) if not p.spec.node_name]
        if pending:
            pod = self.rng.choice(pending)
            self.serial += 1
            meta = msgspec.structs.replace(
                pod.metadata, name=f"{pod.metadata.name}-x{self.serial}", uid=""
            )
            self.put(msgspec.structs.replace(pod, metadata=meta))

    def remove_pending_pod(self) -> None:
        pending = [p for p in self.of(Pod) if not p.spec.node_name]
        if pending:
            self.delete(self.rng.choice(pending))

    def change(self) -> None:
        step = self.rng.choice(
            [
                self.end_running_pod,
                self.end_running_pod,
                self.bring_back,
                self.start_cpu_pod,
                self.remove_node,
                self.restyle_node,
                self.add_pending_pod,
                self.remove_pending_pod,
            ]
        )
        step()


def _plans_agree(objects: list[KubeStruct], seed: int, steps: int) -> None:
    cluster = Cluster(objects, random.Random(seed))
    kept = Autoscaler()
    for step in range(steps + 1):
        if step:
            cluster.change()
        state = cluster.inc.flush()
        # NodePools derived from node groups when the cluster has none, as `serve` does.
        cluster.derived = derive_again(state, cluster.derived)
        fresh_state = cluster.fresh()
        derive_again(fresh_state, {})
        _, later = plan_document(state, kept)
        _, fresh = plan_document(fresh_state, Autoscaler())
        assert json_text(later) == json_text(fresh), f"seed {seed}, step {step}"


@pytest.mark.parametrize("seed", range(8))
def test_kept_autoscaler_plans_like_a_fresh_one(seed: int) -> None:
    objects = [decode(o) for o in generate(seed, nodes=(6, 12), pending=(3, 10))]
    _plans_agree(objects, seed, steps=12)


@pytest.mark.parametrize("seed", range(2))
def test_kept_autoscaler_follows_a_scale_down_chain(seed: int) -> None:
    """Scale-down moves each emptied node's pods onto the next half-full node: one change
    early in name order shifts every later removal."""
    objects = [decode(o) for o in _bench_audit().cluster(40, 30)]
    _plans_agree(objects, seed, steps=10)
