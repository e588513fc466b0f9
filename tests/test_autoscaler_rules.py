"""The autoscaler simulates pod affinity, topology spread and host ports on its template nodes
as Cluster Autoscaler does (its scheduler framework runs every filter on the template): a new
node is its own hostname domain and takes its zone from the template; a copy of an existing
node starts with that node's DaemonSet pods (CA's template from an example node). It never
promises a node the rules reject."""

from __future__ import annotations

from typing import Any

from draplan.api.codec import decode
from draplan.autoscaler.plan import Autoscaler
from draplan.cluster.state import ClusterState
from scale_scenarios import device_class, gpu_request, gpus, node_pool, pod, template
from topology_builders import HOSTNAME, ZONE

SERVE = {"app": "serve"}


def plan(docs: list[dict[str, Any]]) -> dict[str, Any]:
    state = ClusterState.from_objects([decode(d) for d in docs])
    return Autoscaler().plan(state).to_dict()


def pool(
    name: str, zone: str | None = None, topology: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    p = node_pool(name, "10", gpus(8), topology=topology)
    if zone:
        p["spec"]["template"]["metadata"]["labels"][ZONE] = zone
    return p


def apart(key: str) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": SERVE}, "topologyKey": key}
            ]
        }
    }


def replicas(n: int, **spec: Any) -> list[dict[str, Any]]:
    return [pod(f"serve-{i}", "four", labels=SERVE, spec_extra=spec) for i in range(n)]


def added(p: dict[str, Any]) -> dict[str, int]:
    return {s["pool"]: s["add"] for s in p["scaleUp"]}


def test_hostname_anti_affinity_gets_a_node_per_replica() -> None:
    # Two 4-GPU replicas fit one 8-GPU node, but not beside each other.
    docs = [device_class(), pool("gpu", "a"), template("four", [gpu_request(4)])]
    p = plan([*docs, *replicas(3, affinity=apart(HOSTNAME))])
    assert added(p) == {"gpu": 3}
    assert p["pending"] == []
    assert added(plan([*docs, *replicas(3)])) == {"gpu": 2}


def test_zone_anti_affinity_in_a_one_zone_pool_promises_one_node() -> None:
    docs = [device_class(), pool("gpu", "a"), template("four", [gpu_request(4)])]
    p = plan([*docs, *replicas(3, affinity=apart(ZONE))])
    assert added(p) == {"gpu": 1}
    assert [x["pod"] for x in p["pending"]] == ["default/serve-1", "default/serve-2"]
    assert p["pending"][0]["reason"]["autoscaler"] == "no NodePool can fit this pod on a new node"


def test_zone_anti_affinity_opens_a_zone_per_replica_where_the_pool_has_domains() -> None:
    domains = [{"key": ZONE, "nodesPerDomain": 1}]
    docs = [device_class(), pool("gpu", topology=domains), template("four", [gpu_request(4)])]
    p = plan([*docs, *replicas(3, affinity=apart(ZONE))])
    assert added(p) == {"gpu": 3}
    assert p["pending"] == []


def test_spread_over_two_zonal_pools() -> None:
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": SERVE},
        }
    ]
    docs = [
        device_class(),
        pool("gpu-a", "a"),
        pool("gpu-b", "b"),
        template("four", [gpu_request(4)]),
        *replicas(4, topologySpreadConstraints=spread),
    ]
    # No node yet: zone b is no domain until it has a node, so (as Cluster Autoscaler, whose
    # simulation sees the same domains) the pods pack into one zone's pool.
    assert added(plan(docs)) == {"gpu-a": 2}
    # Full CPU nodes in both zones make both domains: each zone gets two replicas. (The plan
    # is not the cheapest: its estimate of a template node holds one replica, as spread
    # allows on one node alone; every node it adds is used.)
    full = [cpu_node("cpu-a", "a"), cpu_node("cpu-b", "b")]
    p = plan([*full, *docs])
    per_pool: dict[str, int] = {}
    for s in p["scaleUp"]:
        per_pool[s["pool"]] = per_pool.get(s["pool"], 0) + len(s["pods"])
    assert per_pool == {"gpu-a": 2, "gpu-b": 2}
    assert p["pending"] == [] and p["wasted"] == []


def cpu_node(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: zone}},
        "status": {"allocatable": {"cpu": "0", "memory": "1Gi", "pods": "110"}},
    }


def ported(name: str, port: int, cpu: str = "1") -> dict[str, Any]:
    main = {
        "name": "main",
        "resources": {"requests": {"cpu": cpu}},
        "ports": [{"containerPort": port, "hostPort": port}],
    }
    return pod(name, None, spec_extra={"containers": [main]})


def test_a_donors_daemonset_pods_come_with_its_copies() -> None:
    node = cpu_node("gpu-0", "a")
    node["status"]["allocatable"]["cpu"] = "64"
    exporter = ported("exporter-x1", 9100, cpu="32")
    exporter["metadata"]["namespace"] = "monitoring"
    exporter["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "exporter", "controller": True}
    ]
    exporter["spec"]["nodeName"] = "gpu-0"
    exporter["status"] = {"phase": "Running"}
    copies = {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": "copies"},
        "spec": {"maxNodes": 5, "fromNode": "gpu-0"},
    }
    base = [node, exporter, copies]
    # The exporter's port is taken on every copy: no node is added for a pod that wants it.
    p = plan([*base, ported("scraper", 9100)])
    assert added(p) == {}
    assert p["pending"][0]["reason"]["nodes"] == {
        "node(s) didn't have free ports for the requested pod ports": 1
    }
    # Nor for a pod larger than what the exporter leaves of a node.
    assert added(plan([*base, ported("big", 9200, cpu="40")])) == {}
    # Two pods that both want port 9200: one on gpu-0, the other on a new copy.
    p = plan([*base, ported("a", 9200, cpu="20"), ported("b", 9200, cpu="20")])
    assert added(p) == {"copies": 1}
    assert p["pending"] == []


def test_a_gangs_members_apart_get_a_node_each() -> None:
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "trainers", "namespace": "default"},
        "spec": {"minMember": 2},
    }
    docs = [device_class(), pool("gpu", "a"), template("four", [gpu_request(4)]), group]
    members = [
        pod(
            f"train-{i}",
            "four",
            labels={**SERVE, "scheduling.x-k8s.io/pod-group": "trainers"},
            spec_extra={"affinity": apart(HOSTNAME)},
        )
        for i in range(2)
    ]
    p = plan([*docs, *members])
    assert added(p) == {"gpu": 2}
    assert p["pending"] == []
