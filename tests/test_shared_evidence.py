"""The allocator's evidence for a pending pod on every node is that node's own: when the
scheduler explains a shape on thousands of alike nodes it words one node's failure for the
others instead of searching each, and that must equal what the allocator says on each node
(Intel Gaudi3 nodes with random cards in use, DeviceTaintRules and slice taints, system and
control-plane nodes; pending pods with and without a NUMA constraint, some tolerating the
taint)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from draplan.allocator import Reason, allocate
from draplan.api.codec import decode
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler
from draplan.scheduler.claims import pod_claims
from gaudi_scenarios import (
    UNHEALTHY,
    Objs,
    device_class,
    gaudi_node,
    pending,
    running,
    system_nodes,
    taint_rule,
)

TOLERATE = {"key": UNHEALTHY, "operator": "Exists", "effect": "NoSchedule"}


def _cluster(seed: int) -> tuple[ClusterState, list[str]]:
    rng = random.Random(seed)
    docs: Objs = [device_class(), *system_nodes()]
    for n in range(24):
        name = f"gaudi-{n:02d}"
        tainted = {rng.randrange(8): {"key": UNHEALTHY, "effect": "NoSchedule"}}
        docs += gaudi_node(name, tainted if n % 7 == 3 else None)
        # Few distinct usages, so that many nodes read alike.
        used = rng.choice(([], [0], [0, 1], [4, 5, 6, 7], [1, 2, 3], list(range(7))))
        if used:
            docs += running(f"run-{name}", name, used)
        if n % 5 == 1:
            docs.append(taint_rule(name, rng.choice([c for c in range(8) if c not in used])))
    names = []
    for i in range(8):
        name = f"wait-{i}"
        docs += pending(
            name,
            rng.choice((2, 3, 4, 5, 8)),
            numa=rng.random() < 0.5,
            tolerations=[TOLERATE] if i % 3 == 0 else [],
        )
        names.append(name)
    return ClusterState.from_objects([decode(d) for d in docs]), names


@pytest.mark.parametrize("seed", range(4))
def test_every_node_gets_its_own_allocator_evidence(seed: int) -> None:
    state, names = _cluster(seed)
    scheduler = Scheduler()
    options = scheduler.profile.dra.options
    reasons = 0
    for name in names:
        pod = state.pods[("ml", name)]
        claims = [c for c in pod_claims(state, pod) if c.status.allocation is None]
        _, statuses = scheduler.evaluate(state, pod)
        seen: Counter[tuple[str, str]] = Counter()
        for node, status in statuses.items():
            if not isinstance(status.detail, Reason):
                continue
            own = allocate(state, state.nodes[node], claims, options).reason
            assert status.detail == own, (name, node)
            seen[own.code, own.message.replace(node, "")] += 1
            reasons += 1
        # Nodes that read alike were explained by one search: the property was exercised.
        assert not seen or max(seen.values()) > 1
    assert reasons


def test_a_reason_worded_for_another_node() -> None:
    reason = Reason("InsufficientDevices", "3 match but only 1 are free on node a", {"node": "a"})
    assert reason.on_node("b") == Reason(
        "InsufficientDevices", "3 match but only 1 are free on node b", {"node": "b"}
    )
    # A name that the message holds twice (node "a" inside "node ab") is not guessed at.
    assert Reason("X", "node a is not node ab", {"node": "a"}).on_node("b") is None
    assert Reason("Timeout", "allocation search ended", {"steps": 3}).on_node("b") is None
