"""Cluster Autoscaler's gRPC expander over the wire: a client speaking `grpcplugin.Expander`
sends BestOptions requests whose pods and nodes are protobuf v1.Pod / v1.Node bytes (built with
draplan's own messages, upstream's field numbers; one request hand-encoded byte by byte)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import msgspec
import pytest

from ca_requests import field, varint
from draplan.api.core_v1 import Node, Pod
from draplan.api.meta import KubeStruct
from draplan.autoscaler.templates import NodeNamer, add_new_node, make_node
from draplan.cluster.state import ClusterState, key_of
from draplan.grpcplugin.decode import node_from_bytes, pod_from_bytes
from draplan.grpcplugin.encode import node_message, pod_message
from draplan.grpcplugin.judge import Judge
from draplan.grpcplugin.protos import expander_pb2, expander_pb2_grpc
from draplan.grpcplugin.server import TLSRequired, add_expander, candidates, new_server
from draplan.scheduler import Scheduler, build_profile
from draplan.sources import load_objects
from scale_scenarios import TOPOLOGY_GATE, load, scenario_gang

DATA = Path(__file__).parent / "data" / "expander" / "shape.yaml"
NODEGROUP = "eks.amazonaws.com/nodegroup"


def _state() -> ClusterState:
    return ClusterState.from_objects(load_objects([str(DATA)]))


def template(state: ClusterState, pool: str) -> Node:
    p = state.node_pools[pool]
    _, labels = NodeNamer(state, p).next()
    return make_node(state, p, f"template-{pool}", labels).node


def request(
    state: ClusterState, options: list[tuple[str, int]], pods: list[Pod] | None = None
) -> expander_pb2.BestOptionsRequest:
    pods = pods if pods is not None else [p for _, p in sorted(state.pods.items())]
    req = expander_pb2.BestOptionsRequest()
    for group, count in options:
        req.options.add(
            nodeGroupId=group,
            nodeCount=count,
            debug=f"{group} x{count}",
            podBytes=[pod_message(p).SerializeToString() for p in pods],
        )
        if group in state.node_pools:
            req.nodeBytesMap[group] = node_message(template(state, group)).SerializeToString()
    return req


# --- a TLS server ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, bytes]:
    """A self-signed certificate for localhost (the openssl CLI: the venv has no
    `cryptography`)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return str(cert), str(key), cert.read_bytes()


Stub = expander_pb2_grpc.ExpanderStub


def _serve(state: ClusterState, tls: tuple[str, str, bytes] | None) -> tuple[grpc.Server, int]:
    server = new_server(2)
    if tls is None:
        port = add_expander(server, "localhost:0", None, None, lambda: state, insecure=True)
    else:
        port = add_expander(server, "localhost:0", tls[0], tls[1], lambda: state)
    server.start()
    return server, port


@pytest.fixture
def stub(tls: tuple[str, str, bytes]) -> Iterator[tuple[Stub, ClusterState]]:
    state = _state()
    server, port = _serve(state, tls)
    creds = grpc.ssl_channel_credentials(root_certificates=tls[2])
    with grpc.secure_channel(f"localhost:{port}", creds) as channel:
        yield Stub(channel), state
    server.stop(None)


def groups(response: expander_pb2.BestOptionsResponse) -> list[str]:
    return [o.nodeGroupId for o in response.options]


# --- the answers -------------------------------------------------------------------------------


def test_wrong_shape_dropped_right_shape_kept_and_ranked(stub: tuple[Stub, ClusterState]) -> None:
    client, state = stub
    before = (len(state.nodes), sorted(state.pods))
    req = request(state, [("flat8", 1), ("pcie4-premium", 2), ("pcie4", 2)])
    response = client.BestOptions(req, timeout=10)
    # flat8 has 8 GPUs but no 4 on one PCIe root; the two pcie4 groups host both pods: CA
    # keeps the set of ids answered, so only the cheaper comes back, with what draplan saw.
    assert groups(response) == ["pcie4"]
    [option] = response.options
    assert option.nodeCount == 2 and not option.podBytes
    assert option.debug == (
        "draplan: judged on NodePool pcie4; 2 of 2 pods on 2 new nodes, $18.00/h"
    )
    # Judged in a fork: the state serves the next request unchanged.
    assert (len(state.nodes), sorted(state.pods)) == before


def test_a_group_one_node_short_is_kept_at_what_it_places(stub: tuple[Stub, ClusterState]) -> None:
    """One pcie4 node hosts one of the two pods: $9 for one pod against pcie4-premium's $12
    a pod, so CA adds the one node and another in its next loop."""
    client, state = stub
    response = client.BestOptions(request(state, [("pcie4", 1), ("pcie4-premium", 2)]))
    assert groups(response) == ["pcie4"]
    assert "1 of 2 pods on 1 new nodes" in response.options[0].debug
    assert "draplan's estimate needs 2 nodes, CA offers 1" in response.options[0].debug


def test_no_option_fits_answers_the_empty_list(stub: tuple[Stub, ClusterState]) -> None:
    client, state = stub
    # draplan is sure: its own NodePool of flat8 shows no four GPUs on one PCIe root.
    assert groups(client.BestOptions(request(state, [("flat8", 2)]))) == []


def test_deprecated_message_fields_are_read_when_no_bytes(
    stub: tuple[Stub, ClusterState],
) -> None:
    client, state = stub
    req = expander_pb2.BestOptionsRequest()
    pods = [p for _, p in sorted(state.pods.items())]
    for group in ("flat8", "pcie4"):
        option = req.options.add(nodeGroupId=group, nodeCount=2)
        option.pod.extend(pod_message(p) for p in pods)
        req.nodeMap[group].CopyFrom(node_message(template(state, group)))
    assert groups(client.BestOptions(req)) == ["pcie4"]


@pytest.mark.parametrize("where", ["podBytes", "nodeBytesMap"])
def test_malformed_bytes_are_invalid_argument(stub: tuple[Stub, ClusterState], where: str) -> None:
    client, state = stub
    req = request(state, [("pcie4", 2)])
    junk = b"\x0a\xff\xff\xff\xff\x0f"  # field 1, length-delimited, length past the end
    if where == "podBytes":
        req.options[0].podBytes.append(junk)
    else:
        req.nodeBytesMap["pcie4"] = junk
    with pytest.raises(grpc.RpcError) as err:
        client.BestOptions(req)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # The server lives on.
    assert groups(client.BestOptions(request(state, [("pcie4", 2)]))) == ["pcie4"]


def test_a_plaintext_client_cannot_talk_to_the_tls_server(
    tls: tuple[str, str, bytes],
) -> None:
    state = _state()
    server, port = _serve(state, tls)
    try:
        with (
            grpc.insecure_channel(f"localhost:{port}") as channel,
            pytest.raises(grpc.RpcError) as err,
        ):
            Stub(channel).BestOptions(request(state, [("pcie4", 2)]), timeout=5)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop(None)


def test_tls_is_required_unless_insecure() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    with pytest.raises(TLSRequired):
        add_expander(server, "localhost:0", None, None, _state)
    server.stop(None)


# --- node groups without NodePools -------------------------------------------------------------


def _provider_cluster() -> ClusterState:
    """No NodePool: one existing node per group, labelled with its EKS node group and
    publishing its ResourceSlices; the pending pods of shape.yaml."""
    state = _state()
    objects: list[KubeStruct] = []
    for pool in ("flat8", "pcie4"):
        new = make_node(state, state.node_pools[pool], f"{pool}-a", {})
        labels = {**new.node.metadata.labels, NODEGROUP: f"ng-{pool}"}
        meta = msgspec.structs.replace(new.node.metadata, labels=labels)
        objects.append(msgspec.structs.replace(new.node, metadata=meta))
        objects.extend(new.slices)
    objects.extend(state.device_classes.values())
    objects.extend(state.claim_templates.values())
    objects.extend(p for _, p in sorted(state.pods.items()))
    cluster = ClusterState.from_objects(objects)
    assert not cluster.node_pools
    return cluster


def test_node_groups_map_to_copies_of_their_nodes_with_their_slices() -> None:
    state = _provider_cluster()
    server, port = _serve(state, None)
    try:
        req = expander_pb2.BestOptionsRequest()
        pods = [p for _, p in sorted(state.pods.items())]
        for group in ("ng-flat8", "ng-pcie4"):
            req.options.add(
                nodeGroupId=group,
                nodeCount=2,
                podBytes=[pod_message(p).SerializeToString() for p in pods],
            )
            source = state.nodes[group.removeprefix("ng-") + "-a"]
            tmpl = node_message(source)
            tmpl.metadata.name = f"template-{group}"
            req.nodeBytesMap[group] = tmpl.SerializeToString()
        with grpc.insecure_channel(f"localhost:{port}") as channel:
            answer = Stub(channel).BestOptions(req, timeout=10)
        # The template carries no devices; the copy of ng-pcie4's node does, on one root.
        assert groups(answer) == ["ng-pcie4"]
    finally:
        server.stop(None)


# --- the wire format, byte by byte -------------------------------------------------------------


def test_hand_encoded_pod_bytes_decode_with_upstream_field_numbers() -> None:
    """Written from k8s.io/api core/v1 generated.proto, independently of draplan's messages:
    Pod.metadata 1, .spec 2; ObjectMeta.name 1, .namespace 3, .labels 11 (map entry key 1,
    value 2); PodSpec.containers 2, .nodeSelector 7, .tolerations 22, .priority 25 (varint),
    .resourceClaims 39; Container.name 1, .resources 8; ResourceRequirements.requests 2
    (Quantity.string 1), .claims 3; PodResourceClaim.name 1, .resourceClaimTemplateName 4;
    Toleration.key 1, .operator 2, .effect 4."""
    meta = (
        field(1, b"train-0") + field(3, b"default") + field(11, field(1, b"team") + field(2, b"ml"))
    )
    requests = field(2, field(1, b"cpu") + field(2, field(1, b"30")))
    resources = requests + field(3, field(1, b"gpus"))
    container = field(1, b"main") + field(8, resources)
    spec = (
        field(2, container)
        + field(7, field(1, b"gpu") + field(2, b"h100"))
        + field(22, field(1, b"nvidia.com/gpu") + field(2, b"Exists") + field(4, b"NoSchedule"))
        + varint(25 << 3 | 0)
        + varint(1000)
        + field(39, field(1, b"gpus") + field(4, b"four-gpus-one-root"))
    )
    raw = field(1, meta) + field(2, spec)
    pod = pod_from_bytes(raw)
    assert (pod.metadata.name, pod.metadata.namespace) == ("train-0", "default")
    assert pod.metadata.labels == {"team": "ml"}
    assert pod.spec.node_selector == {"gpu": "h100"}
    assert pod.spec.priority == 1000
    [tol] = pod.spec.tolerations
    assert (tol.key, tol.operator, tol.effect) == ("nvidia.com/gpu", "Exists", "NoSchedule")
    [c] = pod.spec.containers
    assert c.name == "main" and str(c.resources.requests["cpu"]) == "30"
    assert [x.name for x in c.resources.claims] == ["gpus"]
    [rc] = pod.spec.resource_claims
    assert (rc.name, rc.resource_claim_template_name) == ("gpus", "four-gpus-one-root")
    # draplan's own message, filled from the YAML pod, decodes to the same request shape.
    ours = pod_from_bytes(pod_message(_state().pods["default", "train-0"]).SerializeToString())
    assert ours.spec.resource_claims == pod.spec.resource_claims
    assert ours.spec.containers[0].resources.claims == c.resources.claims


REALISTIC = Path(__file__).parent / "data" / "realistic"


def test_realistic_pods_and_nodes_survive_the_wire() -> None:
    """Every pod and node of the realistic dump, through draplan's messages and back, keeps
    what draplan models (but spec.workloadRef / schedulingGroup, not in the messages yet)."""
    state = ClusterState.from_objects(load_objects([str(REALISTIC / "cluster.yaml")]))
    assert state.pods and state.nodes
    for pod in state.pods.values():
        back = pod_from_bytes(pod_message(pod).SerializeToString())
        spec = msgspec.structs.replace(pod.spec, workload_ref=None, scheduling_group=None)
        assert back.spec == spec, pod.metadata.name
        meta = pod.metadata
        assert (back.metadata.name, back.metadata.namespace) == (meta.name, meta.namespace)
        assert back.metadata.labels == meta.labels
        assert back.metadata.annotations == meta.annotations
        assert back.metadata.owner_references == meta.owner_references
    for node in state.nodes.values():
        again = node_from_bytes(node_message(node).SerializeToString())
        assert again.metadata.labels == node.metadata.labels
        assert again.spec == node.spec
        assert again.status == node.status


@pytest.mark.parametrize(("per_domain", "kept"), [(3, []), (4, ["nvl72"])])
def test_a_gang_is_kept_only_when_one_topology_domain_holds_it(
    per_domain: int, kept: list[str]
) -> None:
    """Four 8-GPU members of a PodGroup that requires one NVLink clique (a gang kube-scheduler
    keeps whole, in one domain with TopologyAwareWorkloadScheduling): CA's four nodes hold them
    pod by pod, but only cliques of four nodes hold the gang together."""
    state = load(scenario_gang(per_domain=per_domain, api="workload"), TOPOLOGY_GATE)
    server, port = _serve(state, None)
    try:
        with grpc.insecure_channel(f"localhost:{port}") as channel:
            answer = Stub(channel).BestOptions(request(state, [("nvl72", 4)]), timeout=10)
        assert groups(answer) == kept
    finally:
        server.stop(None)


# --- the command -------------------------------------------------------------------------------


def test_the_command_refuses_to_serve_without_tls(run_cli: Any) -> None:
    res = run_cli("expander", "--listen", "localhost:0", "-f", str(DATA))
    assert res.code == 2 and "--tls-cert and --tls-key are required" in res.err


def test_the_command_serves_cluster_autoscaler(tls: tuple[str, str, bytes]) -> None:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    cert, key, root = tls
    command = [sys.executable, "-c", "from draplan.cli.main import main; main()", "expander"]
    command += ["--listen"]
    command += [f"localhost:{port}", "--tls-cert", cert, "--tls-key", key, "-f", str(DATA)]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        assert "listening on" in proc.stderr.readline()
        creds = grpc.ssl_channel_credentials(root_certificates=root)
        with grpc.secure_channel(f"localhost:{port}", creds) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            answer = Stub(channel).BestOptions(
                request(_state(), [("flat8", 2), ("pcie4", 2)]), timeout=30
            )
        assert groups(answer) == ["pcie4"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_kept_judge_answers_as_a_fresh_one_request_after_request() -> None:
    """The judge counts the pools' nodes once per call and keeps the pods' shapes between
    calls: after each change of the cluster (a node of a group joins,
    a pending pod goes, another comes) and for each request, it answers as a fresh judge."""
    state = _state()
    kept = Judge(Scheduler(build_profile()))
    pending = [p for _, p in sorted(state.pods.items())]

    def verdicts(judge: Judge, options: list[tuple[str, int]]) -> list[tuple[str, str]]:
        answer = judge.answer(state, candidates(request(state, options, pending)))
        every = answer.kept + answer.dropped + answer.unjudged
        return [(v.candidate.group_id, v.debug()) for v in every]

    def compare() -> None:
        for options in (
            [(g, 1) for g in sorted(state.node_pools)],
            [(g, 3) for g in sorted(state.node_pools)],
        ):
            assert verdicts(kept, options) == verdicts(Judge(Scheduler(build_profile())), options)

    compare()
    compare()  # the same requests again: answered from what was kept
    pool = state.node_pools[sorted(state.node_pools)[-1]]
    name, labels = NodeNamer(state, pool).next()
    add_new_node(state, make_node(state, pool, name, labels))
    compare()
    gone = pending.pop()
    state.remove_pod(key_of(gone))
    compare()
    back = msgspec.structs.replace(
        gone, metadata=msgspec.structs.replace(gone.metadata, name="again")
    )
    state.put_pod(back)
    pending.append(back)
    compare()
