"""Pods whose claims are named but alike (unallocated, reserved by nobody) share the
scheduler's per-node evaluations; what a node-local plugin adds to a pod (its host ports) keeps
it apart; and each pod still gets its own claim allocated, on devices of its own."""

from __future__ import annotations

import msgspec

from draplan.api.core_v1 import ContainerPort, Pod
from draplan.api.meta import KubeStruct
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import Scheduler
from draplan.scheduler.evaluations import evaluation_key
from draplan.scheduler.plugins.dynamicresources import DraState
from draplan.scheduler.plugins.names import DYNAMIC_RESOURCES
from scheduler_builders import MakeClaim, MakeNode, MakePod, MakeSlice, device_class, schedule


def _with_host_port(pod: Pod, port: int) -> Pod:
    first = pod.spec.containers[0]
    container = msgspec.structs.replace(
        first, ports=(ContainerPort(container_port=port, host_port=port),)
    )
    return msgspec.structs.replace(
        pod, spec=msgspec.structs.replace(pod.spec, containers=(container,))
    )


def _cluster(pods: list[Pod], nodes: int = 3) -> list[KubeStruct]:
    objs: list[KubeStruct] = [device_class()]
    for i in range(nodes):
        objs.append(MakeNode().name(f"gb200-{i}").capacity(cpu="72", memory="480Gi").obj())
        objs.append(MakeSlice().node(f"gb200-{i}").gpus(4, numa_groups=2).obj())
    for i in range(len(pods)):
        objs.append(MakeClaim().name(f"train-{i}").gpus(2).match_attribute().obj())
    return [*objs, *pods]


def _pods(count: int) -> list[Pod]:
    return [
        MakePod().name(f"train-{i}").req(cpu="4").claim("gpus", f"train-{i}").obj()
        for i in range(count)
    ]


def _key(scheduler: Scheduler, state: ClusterState, pod: Pod) -> bytes:
    info, cycle, status = scheduler._pre_filter(state, pod)
    assert status.ok, status
    dra = cycle.data[DYNAMIC_RESOURCES]
    assert isinstance(dra, DraState)
    return evaluation_key(info, dra.claims)


def test_alike_named_claims_share_a_key_and_host_ports_keep_pods_apart() -> None:
    pods = _pods(3)
    pods[2] = _with_host_port(pods[2], 9400)
    state = ClusterState.from_objects(_cluster(pods))
    scheduler = Scheduler()
    keys = [_key(scheduler, state, p) for p in pods]
    assert keys[0] == keys[1]  # the claims' names differ, their specs do not
    assert keys[2] != keys[0]  # NodePorts reads the host port


def test_each_pod_gets_its_own_claim_on_its_own_devices() -> None:
    pods = _pods(6)
    run = schedule(_cluster(pods))
    state = run.state
    placed = {r.key[1]: r for r in run.results}
    used: set[tuple[str, str, str]] = set()
    for i in range(6):
        result = placed[f"train-{i}"]
        assert result.node is not None
        claim = state.claims[("default", f"train-{i}")]
        assert claim.status.allocation is not None
        assert [r.uid for r in claim.status.reserved_for] == [result.pod.metadata.uid]
        devices = {(d.driver, d.pool, d.device) for d in claim.status.allocation.devices.results}
        assert len(devices) == 2 and not devices & used
        used |= devices
        # On the node the pod went to (its pool is that node's).
        assert {d[1] for d in devices} == {result.node}
    assert len({key_of(p) for p in pods}) == 6
