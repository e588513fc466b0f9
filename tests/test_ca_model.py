"""Cluster Autoscaler 1.36 as draplan predicts it (issue 28, point 8): its templates — a node of
the group once Ready for a minute, else the provider's (Cluster API's scale-from-zero node, whose
DRA slice 1.36 writes without resourceSliceCount; AWS's instance template, without slices) —
its options found pod by pod on them, and `scale` showing CA's outcome beside draplan's. The
cluster is an Intel Gaudi one: a Cluster API group at zero replicas, an EKS node group whose
only node has just joined, and a Karpenter NodePool CA does not manage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from draplan.api.codec import decode
from draplan.autoscaler import Autoscaler
from draplan.autoscaler.ca import INCOMPLETE, ca_group, ca_options, ca_outcome, good_template
from draplan.autoscaler.derived import derive_pools
from draplan.cluster.state import ClusterState
from scale_scenarios import device_class, node, pod, resource_slice, template, write

GAUDI = "habana.ai"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _at(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _gaudi_class() -> dict[str, Any]:
    return device_class("gaudi.habana.ai", f"device.driver == '{GAUDI}'")


def _cards(n: int) -> list[dict[str, Any]]:
    return [{"name": f"gaudi-{i}", "attributes": {"type": {"string": "gpu"}}} for i in range(n)]


def _ready_node(name: str, labels: dict[str, str], ready_at: datetime | None) -> list[Any]:
    doc = node(name, cpu="160", memory="1Ti", labels=labels)
    if ready_at is not None:
        doc["status"]["conditions"] = [
            {"type": "Ready", "status": "True", "lastTransitionTime": _at(ready_at)}
        ]
    rs = resource_slice(name, _cards(8), driver=GAUDI)
    return [doc, rs]


def objects(eks_ready_at: datetime | None = T0 - timedelta(minutes=30)) -> list[dict[str, Any]]:
    burst = {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineDeployment",
        "metadata": {
            "name": "gaudi-burst",
            "namespace": "ml",
            "annotations": {
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "4",
                "capacity.cluster-autoscaler.kubernetes.io/cpu": "160",
                "capacity.cluster-autoscaler.kubernetes.io/memory": "1Ti",
                "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "8",
                "capacity.cluster-autoscaler.kubernetes.io/dra-driver": GAUDI,
                "capacity.cluster-autoscaler.kubernetes.io/labels": "pool=burst",
            },
        },
        "spec": {"clusterName": "prod", "replicas": 0},
    }
    waiting = pod("tune-0", "one-card", cpu="8", spec_extra={"nodeSelector": {"pool": "burst"}})
    waiting["metadata"]["creationTimestamp"] = _at(T0)
    eks = pod("eval-0", "one-card", cpu="8")
    eks["spec"]["nodeSelector"] = {"eks.amazonaws.com/nodegroup": "gaudi-ng"}
    eks["metadata"]["creationTimestamp"] = _at(T0)
    return [
        _gaudi_class(),
        burst,
        *_ready_node("ip-10-1-0-7", {"eks.amazonaws.com/nodegroup": "gaudi-ng"}, eks_ready_at),
        template("one-card", [{"name": "card", "exactly": {"deviceClassName": "gaudi.habana.ai"}}]),
        waiting,
        eks,  # one card: fits the EKS group's node
        _eight("eval-big"),  # all eight cards: needs a node of its own
    ]


def _eight(name: str) -> dict[str, Any]:
    doc = pod(name, "eight-cards", cpu="8")
    doc["spec"]["nodeSelector"] = {"eks.amazonaws.com/nodegroup": "gaudi-ng"}
    doc["metadata"]["creationTimestamp"] = _at(T0)
    return doc


def cluster(**kwargs: Any) -> ClusterState:
    objs = objects(**kwargs)
    objs.append(
        template(
            "eight-cards",
            [{"name": "cards", "exactly": {"deviceClassName": "gaudi.habana.ai", "count": 8}}],
        )
    )
    state = ClusterState.from_objects(decode(o) for o in objs)
    state.node_pools.update(derive_pools(state).pools)
    return state


# --- templates ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ready_for", "good"),
    [(None, True), (timedelta(minutes=2), True), (timedelta(seconds=61), True),
     (timedelta(seconds=59), False), (timedelta(0), False)],
)  # fmt: skip
def test_a_node_is_a_template_once_ready_for_a_minute(
    ready_for: timedelta | None, good: bool
) -> None:
    state = cluster(eks_ready_at=None if ready_for is None else T0 - ready_for)
    assert good_template(state.nodes["ip-10-1-0-7"], T0) is good
    group = ca_group(state, state.node_pools["gaudi-ng"], T0)
    assert group.template is not None
    if good:
        assert group.source == "node ip-10-1-0-7" and group.template.spec.from_node
    else:
        # AWS's instance template: the node's shape, no ResourceSlices.
        assert group.source.startswith("the instance template (no node of the group")
        assert not group.template.spec.resource_slices and not group.template.spec.from_node


def test_a_scale_from_zero_group_is_never_scaled_for_dra_claims() -> None:
    """draplan's own model of gaudi-burst sets resourceSliceCount and adds a node for tune-0;
    CA 1.36's template of it does not, so CA offers no option and says why."""
    state = cluster()
    group = ca_group(state, state.node_pools["gaudi-burst"], T0)
    assert group.source == "the scale-from-zero annotations of MachineDeployment ml/gaudi-burst"
    assert group.note == INCOMPLETE
    options = {o.pool.metadata.name: o for o in ca_options(state, T0)}
    assert "gaudi-burst" not in options
    plan = Autoscaler().plan(state, T0)
    assert [(o.pool.metadata.name, len(o.nodes)) for o in plan.scale_up][:1] == [("gaudi-burst", 1)]


def test_ca_scales_a_group_once_its_node_is_a_template() -> None:
    """eval-big needs a whole node of gaudi-ng: CA offers it only once the group's node has
    been Ready for a minute (before, its template shows no cards)."""
    fresh = cluster(eks_ready_at=T0 - timedelta(seconds=20))
    assert "gaudi-ng" not in {o.pool.metadata.name for o in ca_options(fresh, T0)}
    settled = cluster()
    options = {o.pool.metadata.name: o for o in ca_options(settled, T0)}
    assert options["gaudi-ng"].node_count == 1
    assert options["gaudi-ng"].pods == (("default", "eval-big"),)


def test_karpenter_pools_are_not_cas_groups() -> None:
    state = cluster()
    karpenter = msgspec_copy(state.node_pools["gaudi-ng"], "Karpenter NodePool gaudi-ng")
    state.node_pools["gaudi-ng"] = karpenter
    outcome = ca_outcome(state, T0)
    assert [g.pool.metadata.name for g in outcome.groups] == ["gaudi-burst"]


def msgspec_copy(pool: Any, source: str) -> Any:
    import msgspec

    meta = msgspec.structs.replace(
        pool.metadata, annotations={**pool.metadata.annotations, "draplan.io/derived-from": source}
    )
    return msgspec.structs.replace(pool, metadata=meta)


# --- scale shows CA's outcome beside draplan's -------------------------------------------------


def test_scale_shows_what_cluster_autoscaler_does(tmp_path: Path, run_cli: Any) -> None:
    objs = objects()
    objs.append(
        template(
            "eight-cards",
            [{"name": "cards", "exactly": {"deviceClassName": "gaudi.habana.ai", "count": 8}}],
        )
    )
    dump = write(tmp_path, objs)
    doc = run_cli("scale", "-f", dump, "-o", "json").json()
    assert {u["pool"] for u in doc["scaleUp"]} == {"gaudi-burst", "gaudi-ng"}
    ca = doc["clusterAutoscaler"]
    assert ca["version"] == "1.36" and ca["expander"] == "least-waste"
    groups = {g["nodeGroup"]: g for g in ca["nodeGroups"]}
    assert groups["gaudi-burst"]["note"] == INCOMPLETE
    assert ca["scaleUp"] == {
        "nodeGroup": "gaudi-ng",
        "add": 1,
        "pods": ["default/eval-big"],
        "podsStarted": ["default/eval-big"],
    }
    # draplan adds a gaudi-burst node for tune-0; CA never would, and says why.
    [event] = ca["notTriggerScaleUp"]
    assert event["pod"] == "default/tune-0"
    assert event["nodeGroups"]["gaudi-burst"] == "cannot allocate all claims"
    assert event["notes"] == {"gaudi-burst": INCOMPLETE}
    table = run_cli("scale", "-f", dump, "-o", "wide").out
    assert "Cluster Autoscaler 1.36 (least-waste) on the same cluster: +1 gaudi-ng" in table
    assert f"the scale-from-zero annotations of MachineDeployment ml/gaudi-burst; {INCOMPLETE}" in (
        table
    )
