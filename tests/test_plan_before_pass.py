"""`why` asks the autoscaler only about pods its scheduling pass leaves pending, and the
autoscaler still plans on the state as it is before the pass: `ClusterState.set_aside` shows
the state below a fork for a while and then puts the fork's changes back as they were.

The cluster (unlike the GPU fixtures): Intel Gaudi3 nodes with cards in use, a tainted
control-plane node and CPU-only system nodes, a NodePool of Gaudi3 nodes, pending pods asking
cards with and without a NUMA constraint."""

from __future__ import annotations

from typing import Any

import pytest

from draplan.api.codec import decode
from draplan.audit.pools import PoolAdvisor
from draplan.audit.reach import Reacher
from draplan.audit.why import Auditor
from draplan.cluster.state import ClusterState, key_of
from draplan.scheduler import Scheduler, build_profile
from gaudi_scenarios import DRIVER, Objs, device_class, gaudi_node, pending, running, system_nodes


def gaudi_pool(max_nodes: int) -> dict[str, Any]:
    devices = [
        {
            "name": f"card-{i}",
            "attributes": {
                "model": {"string": "Gaudi3"},
                "numa": {"int": i // 4},
                "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{i // 2:02x}"},
            },
        }
        for i in range(8)
    ]
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": "gaudi3"},
        "spec": {
            "minNodes": 0,
            "maxNodes": max_nodes,
            "pricePerHour": "40",
            "template": {
                "metadata": {"labels": {"node.kubernetes.io/instance-type": "gaudi3-8x"}},
                "status": {"allocatable": {"cpu": "160", "memory": "1Ti", "pods": "110"}},
            },
            "resourceSlices": [
                {
                    "driver": DRIVER,
                    "nodeName": "$NODE_NAME",
                    "pool": {"name": "$NODE_NAME", "generation": 1},
                    "devices": devices,
                }
            ],
        },
    }


def cluster(waiting: int, max_nodes: int = 2) -> ClusterState:
    docs: Objs = [device_class(), *system_nodes(), gaudi_pool(max_nodes)]
    for n in range(3):
        docs += gaudi_node(f"gaudi-{n}")
        docs += running(f"busy-{n}", f"gaudi-{n}", list(range(2 + 2 * n)))
    for i in range(waiting):
        docs += pending(f"wait-{i}", (4, 2, 8, 4, 6)[i % 5], numa=i % 2 == 0)
    # No card anywhere matches (NoMatchingDevice): the pass leaves it out, the plan does not.
    gaudi2 = pending("gaudi2", 1)
    model = f"device.attributes['{DRIVER}'].model == 'Gaudi2'"
    gaudi2[0]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": model}}
    ]
    docs += gaudi2
    return ClusterState.from_objects([decode(d) for d in docs])


def pending_pods(state: ClusterState) -> list[Any]:
    return [p for _, p in sorted(state.pods.items()) if not p.spec.node_name]


def snapshot(state: ClusterState) -> Any:
    return (
        dict(state.pods.items()),
        state.pods.version,
        dict(state.claims.items()),
        dict(state.exclusive.items()),
        dict(state.node_requested.items()),
        dict(state.node_pods.items()),
        dict(state.node_version.items()),
        {n: state.pools_for_node(state.nodes[n]) for n in sorted(state.nodes.keys())},
    )


def test_set_aside_shows_the_state_below_the_fork_then_the_fork_as_it_was() -> None:
    state = cluster(4)
    base = snapshot(state)
    with state.forked():
        results = Scheduler().run(state)
        assert any(r.node for r in results)
        placed = snapshot(state)
        assert placed != base
        log = len(state.change_log)
        with state.set_aside():
            assert snapshot(state) == base
            with state.forked():  # what the body does in its own forks goes with them
                Scheduler().run(state)
            assert snapshot(state) == base
        assert snapshot(state) == placed
        changed = {n for n in state.change_log[log:]}
        assert changed >= {r.node for r in results if r.node}
    assert snapshot(state) == base


def test_set_aside_refuses_a_body_that_leaves_a_fork_open() -> None:
    state = cluster(1)
    with state.forked(), pytest.raises(RuntimeError), state.set_aside():
        state.fork()


@pytest.mark.parametrize(("waiting", "planned"), [(2, False), (9, True)])
def test_the_plan_is_made_only_for_pods_left_pending_and_on_the_state_before_the_pass(
    waiting: int, planned: bool
) -> None:
    state = cluster(waiting)
    profile = build_profile()
    # The plan the auditor made before the pass (the order it used to have).
    before = PoolAdvisor(state, profile, waiting + 1, Scheduler(profile))
    auditor = Auditor(state, profile)
    verdicts = auditor.audit(pending_pods(state))
    left = [d for d in verdicts if d.category not in ("Schedulable", "NoMatchingDevice")]
    assert bool(left) is planned
    # Node kinds too are worked out only when a pod is left, and on the state before the pass.
    fresh = Reacher(state, profile).kinds()
    if not planned:
        assert auditor.pools is None
        assert auditor.reacher._kinds is None
        return
    assert auditor.reacher.kinds() == fresh
    assert auditor.pools is not None
    assert auditor.pools.reasons == before.reasons
    assert auditor.pools.spared == before.spared

    def options(advisor: PoolAdvisor) -> dict[Any, Any]:
        return {k: (o.pool.metadata.name, len(o.nodes), o.pods) for k, o in advisor.options.items()}

    assert options(auditor.pools) == options(before)
    assert {d.category for d in left} & {"WaitingForScaleUp", "PoolLimitReached"}
    assert all(key_of(p) in {d.pod for d in verdicts} for p in pending_pods(state))
