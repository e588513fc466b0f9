"""Cluster Autoscaler's gRPC expander as CA 1.34 to 1.37 really uses it (issue 28, points 1-7):
requests shaped as CA sends them (`ca_requests`), on a cluster of mixed node-group sources —
Cluster API MachineDeployments in two namespaces (one of each name scale-from-zero), an EKS
managed node group, a GKE node pool and an AKS node pool — whose GPUs sit four or one per PCIe
root, for pods that need four GPUs on one root."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import msgspec
import pytest

from ca_requests import best_options_request
from draplan.api.codec import decode
from draplan.api.core_v1 import Node, Pod
from draplan.autoscaler.derived import derive_pools
from draplan.autoscaler.templates import make_node
from draplan.cluster.state import ClusterState
from draplan.grpcplugin import ids
from draplan.grpcplugin.protos import expander_pb2, expander_pb2_grpc
from draplan.grpcplugin.server import MAX_MESSAGE, add_expander, new_server
from scale_scenarios import (
    DRIVER,
    PCIE_ROOT,
    device_class,
    gpu_request,
    node,
    pod,
    resource_slice,
    template,
    write,
)

MD = "MachineDeployment"
EKS_ASG = "eks-ng-pcie-5ac6e6d2-1c3b-4f5e-9a7b-0123456789ab"
GKE_MIG = (
    "https://www.googleapis.com/compute/v1/projects/ml-prod/zones/us-central1-a/"
    "instanceGroups/gke-prod-pool-pcie-1a2b3c4d-grp"
)
AKS_VMSS = "aks-gpupool-12345678-vmss"
VERSIONS = ["1.34", "1.35", "1.36", "1.37"]


# --- the cluster -------------------------------------------------------------------------------


def _gpus(per_root: int) -> list[dict[str, Any]]:
    return [
        {"name": f"gpu-{i}", "attributes": {PCIE_ROOT: {"string": f"pci{i // per_root}"}}}
        for i in range(8)
    ]


def _node(
    name: str, per_root: int, labels: dict[str, str], notes: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    doc = node(name, labels=labels)
    doc["metadata"]["annotations"] = notes or {}
    return [doc, resource_slice(name, _gpus(per_root))]


def _md(ns: str, name: str, notes: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": MD,
        "metadata": {
            "name": name,
            "namespace": ns,
            "annotations": {
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "6",
                **(notes or {}),
            },
        },
        "spec": {"clusterName": "prod"},
    }


def _owned(machine_set: str) -> dict[str, str]:
    return {"cluster.x-k8s.io/owner-kind": "MachineSet", "cluster.x-k8s.io/owner-name": machine_set}


FROM_ZERO = {
    "capacity.cluster-autoscaler.kubernetes.io/cpu": "64",
    "capacity.cluster-autoscaler.kubernetes.io/memory": "512Gi",
    "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "8",
    "capacity.cluster-autoscaler.kubernetes.io/dra-driver": DRIVER,
    # A price as a label its nodes get: it applies to a Cluster API group as to any node.
    "capacity.cluster-autoscaler.kubernetes.io/labels": "draplan.io/price-per-hour=14",
}


def objects() -> list[dict[str, Any]]:
    price = "draplan.io/price-per-hour"
    return [
        device_class(),
        _md("team-a", "gpu"),
        *_node("gpu-6d5f8-x2k4p", 4, {price: "9"}, _owned("gpu-6d5f8")),
        _md("team-a", "flat"),
        *_node("flat-7c9d4-m8q2z", 1, {price: "5"}, _owned("flat-7c9d4")),
        _md("team-b", "gpu", FROM_ZERO),  # the same name, another namespace, no node yet
        *_node("ip-10-0-1-5.ec2.internal", 4, {ids.EKS_NODEGROUP: "ng-pcie", price: "12"}),
        *_node("gke-prod-pool-pcie-1a2b3c4d-x9z", 4, {ids.GKE_NODEPOOL: "pool-pcie", price: "11"}),
        *_node("aks-gpupool-12345678-vmss000000", 4, {ids.AKS_AGENTPOOL: "gpupool", price: "10"}),
        template("four-one-root", [gpu_request(4)], [{"matchAttribute": PCIE_ROOT}]),
        template("one-gpu", [gpu_request(1)]),
        pod("train-0", "four-one-root", ns="default"),
        pod("train-1", "four-one-root", ns="default"),
        pod("infer-0", "one-gpu", ns="default"),
        pod("web-0", None, cpu="2", ns="default"),
    ]


def cluster(prices: dict[str, str] | None = None) -> ClusterState:
    state = ClusterState.from_objects(decode(o) for o in objects())
    state.node_pools.update(derive_pools(state, prices).pools)
    return state


def pods(state: ClusterState, *names: str) -> list[Pod]:
    return [state.pods["default", n] for n in names]


def templates(state: ClusterState) -> dict[str, Node]:
    """Every group's template as CA builds it: a real node of the group, else (team-b/gpu)
    the clusterapi provider's node from the capacity annotations."""
    zero = state.node_pools["gpu.team-b"]
    return {
        f"{MD}/team-a/gpu": state.nodes["gpu-6d5f8-x2k4p"],
        f"{MD}/team-a/flat": state.nodes["flat-7c9d4-m8q2z"],
        f"{MD}/team-b/gpu": make_node(state, zero, "gpu-asg-8674665223082153551", {}).node,
        EKS_ASG: state.nodes["ip-10-0-1-5.ec2.internal"],
        GKE_MIG: state.nodes["gke-prod-pool-pcie-1a2b3c4d-x9z"],
        AKS_VMSS: state.nodes["aks-gpupool-12345678-vmss000000"],
    }


# --- serving -----------------------------------------------------------------------------------

Stub = expander_pb2_grpc.ExpanderStub


class Served:
    def __init__(self, state: ClusterState | None) -> None:
        self.state = state
        self.server = new_server(2)
        port = add_expander(
            self.server, "localhost:0", None, None, lambda: self.state, insecure=True
        )
        self.server.start()
        options = [("grpc.max_send_message_length", MAX_MESSAGE)]
        self.channel = grpc.insecure_channel(f"localhost:{port}", options=options)
        self.stub = Stub(self.channel)

    def ask(self, req: expander_pb2.BestOptionsRequest) -> expander_pb2.BestOptionsResponse:
        response: expander_pb2.BestOptionsResponse = self.stub.BestOptions(req, timeout=30)
        return response

    def refused(self, req: expander_pb2.BestOptionsRequest) -> grpc.RpcError:
        with pytest.raises(grpc.RpcError) as err:
            self.ask(req)
        return err.value

    def close(self) -> None:
        self.channel.close()
        self.server.stop(None)


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served(cluster())
    yield s
    s.close()


def ask(
    served: Served, options: list[tuple[str, int, tuple[str, ...]]], version: str = "1.36"
) -> expander_pb2.BestOptionsResponse:
    assert served.state is not None
    offered = [(g, n, pods(served.state, *names)) for g, n, names in options]
    return served.ask(best_options_request(templates(served.state), offered, version))


def groups(response: expander_pb2.BestOptionsResponse) -> list[str]:
    return [o.nodeGroupId for o in response.options]


TRAIN = ("train-0", "train-1")


# --- ids ---------------------------------------------------------------------------------------


def test_ids_parse_as_each_provider_writes_them() -> None:
    capi = ids.parse(f"{MD}/team-a/gpu")
    assert (capi.provider, capi.kind, capi.namespace, capi.name) == (
        "clusterapi",
        MD,
        "team-a",
        "gpu",
    )
    pool = ids.parse("MachinePool/default/mp-0")
    assert (pool.kind, pool.namespace, pool.name) == ("MachinePool", "default", "mp-0")
    mig = ids.parse(GKE_MIG)
    assert (mig.provider, mig.name) == ("gce", "gke-prod-pool-pcie-1a2b3c4d-grp")
    assert mig.node_group_label(ids.GKE_NODEPOOL, "pool-pcie")
    assert not mig.node_group_label(ids.GKE_NODEPOOL, "pool")  # the pool ends the name
    asg = ids.parse(EKS_ASG)
    assert (asg.provider, asg.name) == ("", EKS_ASG)
    assert asg.node_group_label(ids.EKS_NODEGROUP, "ng-pcie")
    assert not asg.node_group_label(ids.EKS_NODEGROUP, "ng")
    vmss = ids.parse(AKS_VMSS)
    assert vmss.node_group_label(ids.AKS_AGENTPOOL, "gpupool")
    # Not an id form a provider writes: a plain name, never split.
    assert ids.parse("a/b").provider == "" and ids.parse("a/b").name == "a/b"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("group", "view"),
    [
        (f"{MD}/team-a/gpu", "pool gpu derived from MachineDeployment team-a/gpu"),
        (EKS_ASG, "pool ng-pcie (its nodes' eks.amazonaws.com/nodegroup label)"),
        (GKE_MIG, "pool pool-pcie (its nodes' cloud.google.com/gke-nodepool label)"),
        (AKS_VMSS, "a copy of its node aks-gpupool-12345678-vmss000000 and its ResourceSlices"),
    ],
)
def test_every_id_finds_its_group_and_debug_says_what_draplan_judged(
    served: Served, version: str, group: str, view: str
) -> None:
    [option] = ask(served, [(group, 2, TRAIN)], version).options
    assert option.nodeGroupId == group and option.nodeCount == 2
    assert option.debug.startswith(f"draplan: judged on {view}; 2 of 2 pods on 2 new nodes")


def test_the_namespace_tells_two_groups_of_one_name_apart(served: Served) -> None:
    # team-b/gpu is the scale-from-zero one: CA's dra-driver slice has no PCIe roots.
    assert groups(ask(served, [(f"{MD}/team-b/gpu", 2, TRAIN)])) == []
    [option] = ask(served, [(f"{MD}/team-b/gpu", 1, ("infer-0",))]).options
    assert "pool gpu.team-b derived from MachineDeployment team-b/gpu" in option.debug
    assert groups(ask(served, [(f"{MD}/team-a/gpu", 2, TRAIN)])) == [f"{MD}/team-a/gpu"]


# --- what CA does with the answer --------------------------------------------------------------


def test_the_single_best_option_comes_back_alone(served: Served) -> None:
    """grpc_client.go keeps the set of ids answered and hands several to the next expander:
    draplan names only the cheapest group that hosts the pods ($9 team-a/gpu), never flat
    ($5, but no four GPUs on one root)."""
    every = [(g, 2, TRAIN) for g in templates(served.state or cluster())]
    assert groups(ask(served, every)) == [f"{MD}/team-a/gpu"]


def test_groups_the_ranking_cannot_tell_apart_come_back_together() -> None:
    s = Served(cluster({f"{MD}/team-a/gpu": "11"}))  # --prices by CA's id: $11, as pool-pcie
    try:
        answer = ask(s, [(GKE_MIG, 2, TRAIN), (f"{MD}/team-a/gpu", 2, TRAIN), (EKS_ASG, 2, TRAIN)])
        assert groups(answer) == [f"{MD}/team-a/gpu", GKE_MIG]
    finally:
        s.close()


def test_prices_apply_to_cluster_api_groups() -> None:
    """--prices by pool name makes team-a/gpu dearer than AKS's $10 scale set; the price
    label in the capacity annotations prices the scale-from-zero team-b/gpu."""
    s = Served(cluster({"gpu": "30"}))
    try:
        offered = [(f"{MD}/team-a/gpu", 2, TRAIN), (AKS_VMSS, 2, TRAIN)]
        assert groups(ask(s, offered)) == [AKS_VMSS]
        [option] = ask(s, [(f"{MD}/team-b/gpu", 1, ("infer-0",))]).options
        assert option.debug.endswith("1 of 1 pods on 1 new nodes, $14.00/h")
    finally:
        s.close()


def test_empty_only_when_sure_no_group_hosts_the_pods(served: Served) -> None:
    # draplan's own views of both groups: one GPU per root, and no PCIe roots at all.
    offered = [(f"{MD}/team-a/flat", 2, TRAIN), (f"{MD}/team-b/gpu", 2, TRAIN)]
    assert groups(ask(served, offered)) == []


def test_an_error_when_draplan_cannot_judge(served: Served) -> None:
    """A group draplan has no view of (an ASG no node or pool of the cluster names): CA's
    template shows no devices, so the answer is an error and CA goes on with all options."""
    assert served.state is not None
    req = best_options_request(
        {**templates(served.state), "asg-new": served.state.nodes["flat-7c9d4-m8q2z"]},
        [("asg-new", 2, pods(served.state, *TRAIN)), (f"{MD}/team-a/flat", 2, [])],
    )
    err = served.refused(req)
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "cannot judge 2 option(s)" in str(err.details())
    assert "the pods need devices, and CA's template node shows none" in str(err.details())
    # With a group it can judge that hosts the pods, that group is the answer.
    req.options.add(nodeGroupId=AKS_VMSS, nodeCount=2).podBytes.extend(req.options[0].podBytes)
    assert groups(served.ask(req)) == [AKS_VMSS]


def test_cpu_only_pods_are_judged_on_cas_template(served: Served) -> None:
    assert served.state is not None
    tmpl = served.state.nodes["flat-7c9d4-m8q2z"]
    req = best_options_request({"asg-web": tmpl}, [("asg-web", 1, pods(served.state, "web-0"))])
    [option] = served.ask(req).options
    assert option.debug.startswith("draplan: judged on Cluster Autoscaler's template node")


def test_unavailable_until_the_first_answers_are_published() -> None:
    s = Served(None)
    try:
        state = cluster()
        req = best_options_request(templates(state), [(f"{MD}/team-a/gpu", 2, pods(state, *TRAIN))])
        err = s.refused(req)
        assert err.code() == grpc.StatusCode.UNAVAILABLE
        s.state = state
        assert groups(s.ask(req)) == [f"{MD}/team-a/gpu"]
    finally:
        s.close()


def _copies(state: ClusterState, n: int) -> list[Pod]:
    """`n` pods like infer-0, each with the kilobyte of annotations a real pod carries."""
    base = state.pods["default", "infer-0"]
    note = {"kubectl.kubernetes.io/last-applied-configuration": "x" * 1000}
    out = []
    for i in range(n):
        meta = msgspec.structs.replace(
            base.metadata, name=f"infer-{i}", uid=f"uid-infer-{i}", annotations=note
        )
        out.append(msgspec.structs.replace(base, metadata=meta))
    return out


def test_requests_of_cas_size_are_accepted(served: Served) -> None:
    """50 options of 200 pods each, every pod's bytes repeated in every option as CA does:
    past gRPC's 4 MiB default (CA allows 128 MiB). Forty-four of the groups are ASGs draplan
    has no view of; the six it knows decide: two nodes hold 16 of the one-GPU pods in any of
    them, so the cheapest, flat at $5, wins."""
    assert served.state is not None
    state = served.state
    many = _copies(state, 200)
    known = templates(state)
    unknown = {f"asg-{i}": state.nodes["flat-7c9d4-m8q2z"] for i in range(44)}
    offered = [(g, 2, many) for g in sorted({**known, **unknown})]
    req = best_options_request({**known, **unknown}, offered)
    assert req.ByteSize() > 8 << 20
    [option] = served.ask(req).options
    assert option.nodeGroupId == f"{MD}/team-a/flat"
    assert "16 of 200 pods on 2 new nodes, $10.00/h" in option.debug


# --- the commands, as CA reaches them ----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answer(port: int, req: expander_pb2.BestOptionsRequest) -> expander_pb2.BestOptionsResponse:
    """Ask like CA's client: retried while the server is not up or not ready."""
    limits = [("grpc.max_send_message_length", MAX_MESSAGE)]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=limits) as channel:
        grpc.channel_ready_future(channel).result(timeout=60)
        deadline = time.monotonic() + 60
        while True:
            try:
                response: expander_pb2.BestOptionsResponse = Stub(channel).BestOptions(
                    req, timeout=30
                )
                return response
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def _run(args: list[str]) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", "from draplan.cli.main import main; main()", *args]
    return subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)


@pytest.mark.parametrize(("command", "version"), [("expander", "1.34"), ("serve", "1.37")])
def test_the_commands_answer_cas_requests(tmp_path: Path, command: str, version: str) -> None:
    """`draplan expander -f` and `draplan serve -f --expander-listen` on the same dump (no
    NodePool: the pools are derived, --prices applies to them), asked as CA 1.34 and 1.37
    ask; ids with `/` are ids, not object names."""
    dump = write(tmp_path, objects())
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpu: '30'\n")
    port = _free_port()
    if command == "expander":
        args = ["expander", "--listen", f"127.0.0.1:{port}", "--insecure"]
    else:
        args = ["serve", "--listen", "127.0.0.1:0", "--expander-listen", f"127.0.0.1:{port}"]
        args += ["--expander-insecure", "--audit-interval", "0.1"]
    proc = _run([*args, "-f", dump, "--prices", str(prices)])
    try:
        state = cluster()
        offered = [(g, 2, pods(state, *TRAIN)) for g in (f"{MD}/team-a/gpu", AKS_VMSS)]
        offered.append((f"{MD}/team-a/flat", 2, pods(state, *TRAIN)))
        every = templates(state)
        answer = _answer(port, best_options_request(every, offered, version))
        # team-a/gpu costs $30 by --prices: the $10 AKS scale set is the one answer.
        assert groups(answer) == [AKS_VMSS]
        # Sure that no group hosts them: [] (CA scales nothing this loop).
        flat = [(f"{MD}/team-a/flat", 2, pods(state, *TRAIN))]
        assert groups(_answer(port, best_options_request(every, flat, version))) == []
        # A group it has no view of: an error, so CA goes on with all its options.
        unknown = {**every, "asg-new": state.nodes["flat-7c9d4-m8q2z"]}
        req = best_options_request(unknown, [("asg-new", 2, pods(state, *TRAIN))], version)
        with pytest.raises(grpc.RpcError) as err:
            _answer(port, req)
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        # As large as CA sends: 50 groups, 200 pods each, past gRPC's 4 MiB default.
        many = _copies(state, 200)
        big = {**every, **{f"asg-{i}": state.nodes["flat-7c9d4-m8q2z"] for i in range(44)}}
        req = best_options_request(big, [(g, 2, many) for g in sorted(big)], version)
        assert req.ByteSize() > 8 << 20
        assert groups(_answer(port, req)) == [f"{MD}/team-a/flat"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
