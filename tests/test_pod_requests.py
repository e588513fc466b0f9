"""A pod's requests as kube-scheduler computes them: KEP-753's formula for sidecars and init
containers, pod-level resources (KEP-2837) while their gate is on, overhead, and the non-zero
requests the scores read; checked against the KEP's own statement of the formula and through
the scheduler, `why` and the node ledgers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from draplan.api.core_v1 import Container, Pod, PodSpec, ResourceRequirements
from draplan.api.features import feature_gates
from draplan.api.meta import ObjectMeta
from draplan.api.quantity import Quantity
from draplan.cluster.podresources import (
    DEFAULT_MEMORY,
    DEFAULT_MILLI_CPU,
    NONZERO_CPU,
    NONZERO_MEMORY,
    PODS,
    bound_usage,
    nonzero_requests,
    pod_requests,
)
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler, build_profile
from scheduler_builders import MakeNode, MakePod

RESOURCES = ("cpu", "memory", "example.com/fpga")

amounts = st.dictionaries(st.sampled_from(RESOURCES), st.integers(0, 4000), max_size=3)
containers = st.lists(st.tuples(amounts, st.booleans()), max_size=4)


def _milli(values: dict[str, int]) -> dict[str, Quantity]:
    return {k: Quantity(f"{v}m") for k, v in values.items()}


def _container(i: int, requests: dict[str, int], sidecar: bool = False) -> Container:
    return Container(
        name=f"c{i}",
        resources=ResourceRequirements(requests=_milli(requests)),
        restart_policy="Always" if sidecar else "",
    )


def _pod(
    apps: list[dict[str, int]],
    inits: list[tuple[dict[str, int], bool]],
    level: dict[str, int] | None = None,
    overhead: dict[str, int] | None = None,
) -> Pod:
    return Pod(
        metadata=ObjectMeta(name="p", namespace="ns"),
        spec=PodSpec(
            containers=tuple(_container(i, r) for i, r in enumerate(apps)),
            init_containers=tuple(
                _container(100 + i, r, sidecar) for i, (r, sidecar) in enumerate(inits)
            ),
            resources=ResourceRequirements(
                requests={k: Quantity(f"{v}m") for k, v in level.items()}
            )
            if level is not None
            else None,
            overhead=_milli(overhead or {}),
        ),
    )


def _kep_753(
    apps: list[dict[str, int]], inits: list[tuple[dict[str, int], bool]], name: str
) -> int | None:
    """KEP-753, "Resources calculation for scheduling and pod admission": the pod's request is
    the larger of (the app containers plus every sidecar) and, over the init containers, the
    largest InitContainerUse(i) = the sidecars declared before i, plus i itself. None when no
    container names the resource."""
    if not any(name in r for r in apps) and not any(name in r for r, _ in inits):
        return None
    sidecars = [r.get(name, 0) for r, sidecar in inits if sidecar]
    steady = sum(r.get(name, 0) for r in apps) + sum(sidecars)
    uses = [
        sum(r.get(name, 0) for r, sidecar in inits[:i] if sidecar) + inits[i][0].get(name, 0)
        for i in range(len(inits))
    ]
    return max([steady, *uses])


@settings(max_examples=150, deadline=None)
@given(st.lists(amounts, min_size=1, max_size=4), containers, st.booleans())
def test_requests_follow_kep_753(
    apps: list[dict[str, int]], inits: list[tuple[dict[str, int], bool]], overhead: bool
) -> None:
    extra = {"cpu": 250, "memory": 7} if overhead else {}
    got = pod_requests(_pod(apps, inits, overhead=extra))
    assert got.pop(PODS) == 1000
    for name in RESOURCES:
        want = _kep_753(apps, inits, name)
        if want is None and name not in extra:
            assert name not in got
            continue
        assert got[name] == (want or 0) + extra.get(name, 0)


@settings(max_examples=100, deadline=None)
@given(st.lists(amounts, min_size=1, max_size=3), containers, amounts)
def test_pod_level_requests_replace_the_containers_sum(
    apps: list[dict[str, int]], inits: list[tuple[dict[str, int], bool]], level: dict[str, int]
) -> None:
    pod = _pod(apps, inits, level=level, overhead={"cpu": 100})
    on, off = pod_requests(pod), pod_requests(pod, feature_gates(text="PodLevelResources=false"))
    for name in RESOURCES:
        containers_sum = _kep_753(apps, inits, name)
        overhead = 100 if name == "cpu" else 0
        # Only cpu, memory and hugepages may be set at the pod level (the fpga is not).
        if name in level and name != "example.com/fpga":
            assert on[name] == level[name] + overhead
        else:
            assert on.get(name) == off.get(name)
        if containers_sum is not None:
            assert off[name] == containers_sum + overhead


@settings(max_examples=100, deadline=None)
@given(st.lists(amounts, min_size=1, max_size=3), containers, st.none() | amounts, st.booleans())
def test_a_bound_pods_usage_is_both_maps(
    apps: list[dict[str, int]],
    inits: list[tuple[dict[str, int], bool]],
    level: dict[str, int] | None,
    gate: bool,
) -> None:
    pod = _pod(apps, inits, level=level, overhead={"memory": 64})
    features = feature_gates(text=f"PodLevelResources={str(gate).lower()}")
    want = {**pod_requests(pod, features), **nonzero_requests(pod, features, placed=True)}
    assert bound_usage(pod, features) == want


def test_non_zero_requests_default_each_container_that_sets_none() -> None:
    # cpu: the first and third app containers and the sidecar set none (the second's 0
    # stays 0); memory: all but the third.
    pod = _pod([{}, {"cpu": 0}, {"memory": 1000}], [({}, True)])
    got = nonzero_requests(pod)
    assert got[NONZERO_CPU] == 3 * DEFAULT_MILLI_CPU
    assert got[NONZERO_MEMORY] == 3 * DEFAULT_MEMORY * 1000 + 1000


def test_non_zero_requests_with_pod_level_resources() -> None:
    # cpu set at the pod level, memory nowhere: the pod being scheduled counts its containers
    # with defaults; a placed one (NodeInfo) only where no level sets the resource.
    pod = _pod([{}, {}], [], level={"cpu": 1500})
    assert nonzero_requests(pod)[NONZERO_CPU] == 1500
    assert nonzero_requests(pod)[NONZERO_MEMORY] == 2 * DEFAULT_MEMORY * 1000
    assert nonzero_requests(pod, placed=True)[NONZERO_MEMORY] == 2 * DEFAULT_MEMORY * 1000
    some = _pod([{"memory": 5000}, {}], [], level={"cpu": 1500})
    assert nonzero_requests(some)[NONZERO_MEMORY] == 5000 + DEFAULT_MEMORY * 1000
    assert nonzero_requests(some, placed=True)[NONZERO_MEMORY] == 5000


def test_a_sidecar_counts_for_the_pods_whole_life() -> None:
    # The case: one node, a pod whose sidecar and app together exceed its memory,
    # each alone would fit. kube-scheduler: "0/1 nodes are available: 1 Insufficient memory".
    node = MakeNode().name("gaudi-0").capacity(cpu="96", memory="10Gi").obj()
    pod = MakePod().name("trainer").req(cpu="1", memory="6Gi").obj()
    sidecar = Container(
        name="log-shipper",
        restart_policy="Always",
        resources=ResourceRequirements(requests={"memory": Quantity("6Gi")}),
    )
    pod = pod.__class__(
        metadata=pod.metadata,
        spec=PodSpec(containers=pod.spec.containers, init_containers=(sidecar,)),
    )
    state = ClusterState.from_objects([node, pod])
    (result,) = Scheduler(build_profile()).run(state)
    assert result.node is None and result.reason is not None
    assert result.reason.message.startswith("0/1 nodes are available: 1 Insufficient memory.")
    # A plain init container of the same size runs before the app and fits.
    plain = pod.__class__(
        metadata=pod.metadata,
        spec=PodSpec(
            containers=pod.spec.containers,
            init_containers=(Container(name="fetch", resources=sidecar.resources),),
        ),
    )
    state = ClusterState.from_objects([node, plain])
    (result,) = Scheduler(build_profile()).run(state)
    assert result.node == "gaudi-0"
    assert state.requested("gaudi-0")["memory"] == 6 * 1024**3 * 1000


def test_a_running_pod_with_a_sidecar_holds_both() -> None:
    node = MakeNode().name("tpu-host").capacity(cpu="8", memory="16Gi").obj()
    running = _pod([{"cpu": 2000}], [({"cpu": 3000}, True), ({"cpu": 4000}, False)])
    running = running.__class__(
        metadata=running.metadata,
        spec=PodSpec(
            node_name="tpu-host",
            containers=running.spec.containers,
            init_containers=running.spec.init_containers,
        ),
    )
    state = ClusterState.from_objects([node, running])
    # max(2 + 3, 3 + 4) = 7 cpu held; a 2-cpu pod no longer fits.
    assert state.requested("tpu-host")["cpu"] == 7000
    pending = MakePod().name("next").req(cpu="2").obj()
    state.put_pod(pending)
    assert Scheduler(build_profile()).schedule_pod(state, pending).node is None
