"""A pod that stops reserving a claim — deleted (`ClusterState.remove_pod`) or unreserved by
the scheduler (`claims.unreserve`) — takes only its own entry out of status.reservedFor: the
claim stays allocated while any consumer (another pod, a PodGroup of the same name) is left,
and its devices are freed with the last one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from draplan.cluster.state import ClusterState, ObjectKey
from draplan.scheduler.claims import unreserve
from scale_scenarios import DRIVER, allocated_claim, gpu_node, load, running_pod

Release = Callable[[ClusterState, ObjectKey], None]
RELEASES: dict[str, Release] = {
    "deleted": lambda state, key: state.remove_pod(key),
    "unreserved": unreserve,
}
GPU = (DRIVER, "h1", "gpu-0")


def _cluster(users: list[str], group: str | None = None) -> ClusterState:
    claim = allocated_claim("shared", "h1", ["gpu-0"], users)
    if group is not None:
        claim["status"]["reservedFor"].append(
            {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": group, "uid": "g"}
        )
    objs: list[dict[str, Any]] = [*gpu_node("h1"), claim]
    objs += [running_pod(u, "h1", "shared") for u in users]
    return load(objs)


def _consumers(state: ClusterState) -> list[tuple[str, str]]:
    return [(r.resource, r.name) for r in state.claims["default", "shared"].status.reserved_for]


@pytest.mark.parametrize("how", sorted(RELEASES))
def test_the_last_pod_frees_the_devices(how: str) -> None:
    state = _cluster(["w0", "w1"])
    RELEASES[how](state, ("default", "w0"))
    assert _consumers(state) == [("pods", "w1")] and state.in_use(GPU)
    RELEASES[how](state, ("default", "w1"))
    claim = state.claims["default", "shared"]
    assert _consumers(state) == [] and claim.status.allocation is None
    assert not state.in_use(GPU)


@pytest.mark.parametrize("how", sorted(RELEASES))
def test_a_podgroup_named_as_the_pod_keeps_the_claim(how: str) -> None:
    state = _cluster(["trainer"], group="trainer")
    RELEASES[how](state, ("default", "trainer"))
    assert _consumers(state) == [("podgroups", "trainer")] and state.in_use(GPU)
