"""NodePorts as kube-scheduler has it: host ports of the app containers and of sidecars
(restartPolicy Always init containers), conflicts by protocol, port and host IP (0.0.0.0 binds
every IP), finished pods holding nothing; and the validation of ports an API server does."""

from __future__ import annotations

from typing import Any

import pytest

from draplan.api.codec import decode
from draplan.api.errors import BadInput
from draplan.scheduler.framework import SKIP, CycleState, PodInfo
from draplan.scheduler.plugins.nodeports import REASON, NodePorts, conflicts, host_ports
from topology_builders import node, pod, state_of, typed_pod


def port(host: int, protocol: str = "", ip: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"containerPort": 8000 + host % 1000, "hostPort": host}
    if protocol:
        out["protocol"] = protocol
    if ip:
        out["hostIP"] = ip
    return out


def fits(docs: list[dict[str, Any]], incoming: dict[str, Any]) -> dict[str, bool]:
    state = state_of(*docs)
    plugin = NodePorts()
    p = typed_pod(incoming)
    info = PodInfo(p, ("default", p.metadata.name), {}, b"")
    cycle = CycleState()
    if plugin.pre_filter(state, cycle, info) == SKIP:
        return {n: True for n in state.nodes}
    out = {}
    for name, n in sorted(state.nodes.items()):
        status = plugin.filter(state, cycle, info, n)
        assert status.ok or status.reasons == (REASON,)
        out[name] = status.ok
    return out


def test_conflicts_by_protocol_port_and_ip() -> None:
    assert conflicts([("0.0.0.0", "TCP", 80)], ("10.0.0.1", "TCP", 80))
    assert conflicts([("10.0.0.1", "TCP", 80)], ("0.0.0.0", "TCP", 80))
    assert conflicts([("10.0.0.1", "TCP", 80)], ("10.0.0.1", "TCP", 80))
    assert not conflicts([("10.0.0.1", "TCP", 80)], ("10.0.0.2", "TCP", 80))
    assert not conflicts([("0.0.0.0", "UDP", 80)], ("0.0.0.0", "TCP", 80))
    assert not conflicts([("0.0.0.0", "TCP", 81)], ("0.0.0.0", "TCP", 80))


def test_host_ports_of_containers_and_sidecars() -> None:
    doc = pod("p", ports=[port(80), {"containerPort": 9090}])  # no hostPort: none held
    doc["spec"]["initContainers"] = [
        {"name": "setup", "ports": [port(81)]},  # a plain init container has ended
        {"name": "proxy", "restartPolicy": "Always", "ports": [port(82, "UDP", "10.0.0.1")]},
    ]
    assert host_ports(typed_pod(doc)) == (("10.0.0.1", "UDP", 82), ("0.0.0.0", "TCP", 80))


def test_filter_against_the_pods_on_each_node() -> None:
    docs = [
        node("n1"),
        node("n2"),
        node("n3"),
        pod("agent", on="n1", ports=[port(9100)]),
        pod("dns", on="n2", ports=[port(53, "UDP")]),
        {**pod("done", on="n3", ports=[port(9100)]), "status": {"phase": "Failed"}},
    ]
    assert fits(docs, pod("exporter", ports=[port(9100)])) == {"n1": False, "n2": True, "n3": True}
    assert fits(docs, pod("dns2", ports=[port(53, "UDP")])) == {"n1": True, "n2": False, "n3": True}
    assert fits(docs, pod("tcp53", ports=[port(53, "TCP")])) == {"n1": True, "n2": True, "n3": True}
    assert fits(docs, pod("plain")) == {"n1": True, "n2": True, "n3": True}


def test_nodeports_signature_tells_nodes_apart_by_their_ports() -> None:
    state = state_of(node("n1"), node("n2"), pod("agent", on="n1", ports=[port(9100)]))
    plugin = NodePorts()
    assert plugin.signature(state, state.nodes["n1"]) != plugin.signature(state, state.nodes["n2"])


@pytest.mark.parametrize(
    ("ports", "path", "message"),
    [
        (
            [{"containerPort": 0}],
            "spec.containers[0].ports[0].containerPort",
            "between 1 and 65535",
        ),
        (
            [{"containerPort": 80, "hostPort": 70000}],
            "spec.containers[0].ports[0].hostPort",
            "between",
        ),
        (
            [{"containerPort": 80, "protocol": "HTTP"}],
            "spec.containers[0].ports[0].protocol",
            "unsupported value 'HTTP'",
        ),
        ([port(80), port(80)], "spec.containers[0].ports[1].hostPort", "duplicate value 80/TCP"),
    ],
)
def test_bad_ports(ports: list[dict[str, Any]], path: str, message: str) -> None:
    with pytest.raises(BadInput) as err:
        decode(pod("p", ports=ports))
    assert err.value.path == path
    assert message in err.value.message
