"""Pools derived from a cluster's node groups when no NodePool is given (issue 17, point 2):
the realistic dump without pools.yaml, the same dump as an EKS cluster scaled through Cluster
API MachinePools (one empty, described by CA's scale-from-zero annotations), and with
Karpenter's NodePools."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from draplan.api.codec import decode
from draplan.api.core_v1 import Node
from draplan.api.draplan_v1alpha1 import NodePool, NodePoolSpec
from draplan.api.meta import ObjectMeta
from draplan.autoscaler import Autoscaler
from draplan.autoscaler.derived import DERIVED_FROM, INSTANCE_TYPE, derive_pools
from draplan.autoscaler.templates import make_node, pool_members
from draplan.cluster.nodepools import node_pool
from draplan.cluster.state import ClusterState
from draplan.sources.files import load_files
from draplan.sources.prices import load_prices

DUMP = Path(__file__).parent / "data" / "realistic"
GROUPS = Path(__file__).parent / "data" / "node-groups"
PRICES = str(GROUPS / "prices.yaml")


def _state(*names: str) -> ClusterState:
    paths = [str((DUMP if n == "cluster.yaml" else GROUPS) / n) for n in names]
    return ClusterState.from_objects(load_files(paths))


def _derived(*names: str) -> ClusterState:
    state = _state(*names)
    state.node_pools.update(derive_pools(state, load_prices(PRICES)).pools)
    return state


def _plan(state: ClusterState, moves: bool = True) -> dict[str, Any]:
    return Autoscaler().plan(state, moves=moves).to_dict()


def _scale_up(doc: dict[str, Any]) -> dict[str, tuple[int, list[str], float]]:
    return {u["pool"]: (u["add"], u["pods"], u["costPerHour"]) for u in doc["scaleUp"]}


# --- node-group labels --------------------------------------------------------------------------


def test_labelled_dump_gets_one_pool_per_node_group_copying_its_first_node() -> None:
    state = _derived("cluster.yaml")
    pools = state.node_pools
    assert {n: p.spec.from_node for n, p in pools.items()} == {
        "a100": "gpu-a100-a",
        "h100": "gpu-h100-a",
        "l4": "gpu-l4-a",
    }
    # Priced by the nodes' instance types from the table.
    assert {n: p.spec.price_per_hour for n, p in pools.items()} == {
        "a100": "32.77",
        "h100": "98.32",
        "l4": "4.6",
    }
    assert pools["h100"].metadata.annotations[DERIVED_FROM] == "label karpenter.sh/nodepool"
    # Existing nodes belong to them by the one rule, so they count toward the pools' sizes.
    assert [n.metadata.name for n in pool_members(state, pools["l4"])] == ["gpu-l4-a", "gpu-l4-b"]


def test_derived_pools_plan_as_the_hand_written_ones() -> None:
    """pools.yaml copies the same nodes at the same prices: the plans must agree."""
    derived = _plan(_derived("cluster.yaml"))
    written = _plan(
        ClusterState.from_objects(
            load_files([str(DUMP / "cluster.yaml"), str(DUMP / "pools.yaml")])
        )
    )
    assert _scale_up(derived) == _scale_up(written)
    # finetune-numa-0's node is spared by moving embed-0 (a one-pod move, made).
    assert _scale_up(derived) == {"h100": (1, ["research/train-8-0"], 98.32)}
    assert [m["move"] for m in derived["moves"]] == [m["move"] for m in written["moves"]]
    assert [m["made"] for m in derived["moves"]] == [True]


def test_hand_written_pools_win_and_nothing_is_derived(run_cli: Any) -> None:
    files = ["-f", str(DUMP / "cluster.yaml"), "-f", str(DUMP / "pools.yaml")]
    out = run_cli("scale", *files, "--prices", PRICES, "--target", "draplan", "-o", "yaml")
    assert out.code == 0, out.err
    [pool] = [d for d in yaml.safe_load_all(out.out) if d and d["kind"] == "NodePool"]
    assert pool["apiVersion"] == "draplan.io/v1alpha1"
    assert pool["spec"]["maxNodes"] == 4  # pools.yaml's; a derived pool would allow 100
    assert DERIVED_FROM not in pool["metadata"]["annotations"]


def test_scale_plans_a_dump_with_no_nodepool(run_cli: Any, tmp_path: Path) -> None:
    copy = tmp_path / "cluster.yaml"
    shutil.copy(DUMP / "cluster.yaml", copy)
    out = run_cli("scale", "-f", str(copy), "--prices", PRICES, "-o", "json")
    assert out.code == 0, out.err
    doc = out.json()
    assert doc["summary"]["nodesAdded"] == 1 and doc["summary"]["costPerHour"] == 98.32
    table = run_cli("scale", "-f", str(copy)).out
    assert table.startswith("DRA-aware plan: +1 nodes, $0.0/h")  # no price anywhere: 0


def test_why_judges_with_the_pools_scale_derives(run_cli: Any) -> None:
    """No NodePool in the input: `why` derives the pools as `scale` does, priced by --prices
    (else at $0, nothing in the dump giving a price)."""
    plain = run_cli("why", "-f", str(DUMP / "cluster.yaml"), "-o", "json").json()
    priced = run_cli(
        "why", "-f", str(DUMP / "cluster.yaml"), "--prices", PRICES, "-o", "json"
    ).json()
    train = {d["pod"]: d for d in priced["pods"]}["research/train-8-0"]
    assert train["fix"]["pool"] == "h100" and train["fix"]["costPerHour"] == 98.32
    assert train["evidence"]["poolAdds"] == 1  # finetune-numa-0's node spared by a move
    unpriced = {d["pod"]: d for d in plain["pods"]}["research/train-8-0"]
    assert unpriced["fix"]["pool"] == "h100" and unpriced["fix"]["costPerHour"] == 0.0


# --- Cluster Autoscaler's clusterapi node groups ------------------------------------------------


def test_machine_pools_become_pools_with_their_ca_sizes() -> None:
    state = _derived("eks-cluster.yaml")
    pools = state.node_pools
    assert {n: (p.spec.min_nodes, p.spec.max_nodes) for n, p in pools.items()} == {
        "gpu-a100": (0, 4),
        "gpu-h100": (0, 4),
        "gpu-l4": (0, 6),
        "gpu-l40s": (0, 3),
    }
    assert pools["gpu-h100"].spec.from_node == "gpu-h100-a"
    assert pools["gpu-h100"].metadata.annotations[DERIVED_FROM] == "MachinePool capi-prod/gpu-h100"
    assert pools["gpu-l40s"].spec.price_per_hour == "10.49"  # by the annotated instance type


def test_empty_group_is_built_from_the_scale_from_zero_annotations() -> None:
    state = _derived("eks-cluster.yaml")
    pool = state.node_pools["gpu-l40s"]
    new = make_node(state, pool, "gpu-l40s-0", {})
    node = new.node
    assert str(node.status.allocatable["cpu"]) == "48"
    assert str(node.status.allocatable["pods"]) == "110"
    assert node.metadata.labels["node.kubernetes.io/instance-type"] == "g6e.12xlarge"
    assert node.metadata.labels["kubernetes.io/arch"] == "amd64"
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [
        ("nvidia.com/gpu", "present", "NoSchedule")
    ]
    # The one slice CA's clusterapi provider makes for dra-driver: gpu-count devices.
    [rs] = new.slices
    assert rs.spec.driver == "gpu.nvidia.com" and rs.spec.node_name == "gpu-l40s-0"
    assert (rs.spec.pool.name, rs.spec.pool.resource_slice_count) == ("gpu-l40s-0", 1)
    assert [d.name for d in rs.spec.devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert {d.attributes["type"].string for d in rs.spec.devices} == {"gpu"}


def test_eks_dump_scales_its_groups_and_one_from_zero() -> None:
    state = _derived("eks-cluster.yaml")
    doc = _plan(state)
    assert _scale_up(doc) == {
        "gpu-h100": (1, ["research/train-8-0"], 98.32),  # finetune-numa-0: embed-0 moves
        "gpu-l40s": (1, ["render/render-0"], 10.49),
    }
    render = state.pods[("render", "render-0")]
    assert render.spec.node_name == "gpu-l40s-0"


def test_capi_owner_annotation_names_the_pool() -> None:
    """A node CAPI made for a MachineDeployment's MachineSet `<deployment>-<suffix>`."""
    node = Node(
        metadata=ObjectMeta(name="n1", annotations={"cluster.x-k8s.io/owner-name": "workers-7d9f5"})
    )
    state = ClusterState.from_objects([node])
    state.node_pools["workers"] = NodePool(
        metadata=ObjectMeta(name="workers"), spec=NodePoolSpec(max_nodes=3, from_node="n1")
    )
    state.node_pools["other"] = NodePool(
        metadata=ObjectMeta(name="other"), spec=NodePoolSpec(max_nodes=3, from_node="x")
    )
    found = node_pool(state, state.nodes["n1"])
    assert found is not None and found.metadata.name == "workers"


def _group_state(*objects: Any) -> ClusterState:
    return ClusterState.from_objects([decode(o) for o in objects])


def _node(name: str, labels: dict[str, str], annotations: dict[str, str], pid: str = "") -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"providerID": pid} if pid else {},
    }


def _scalable(kind: str, name: str, high: int, **spec: Any) -> Any:
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "capi",
            "annotations": {
                "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": str(high)
            },
        },
        "spec": spec,
    }


def test_a_node_group_claims_its_nodes_before_their_labels_do() -> None:
    """The MachinePool's node is labelled with another node-group name: one pool, the
    MachinePool's, and the node belongs to it."""
    state = _group_state(
        _node("n-b", {"eks.amazonaws.com/nodegroup": "ng-a"}, {}, "aws:///z/i-b"),
        _node("n-a", {"eks.amazonaws.com/nodegroup": "ng-a"}, {}, "aws:///z/i-a"),
        _scalable("MachinePool", "mp-a", 3, providerIDList=["aws:///z/i-a", "aws:///z/i-b"]),
    )
    derived = derive_pools(state)
    assert {n: p.spec.from_node for n, p in derived.pools.items()} == {"mp-a": "n-a"}


def test_machine_deployment_nodes_by_their_machine_sets_owner_annotation() -> None:
    owned = {
        "cluster.x-k8s.io/owner-kind": "MachineSet",
        "cluster.x-k8s.io/owner-name": "md-1-x7k2p",
    }
    state = _group_state(
        _node("w-2", {}, owned),
        _node("w-1", {}, owned),
        _node("other", {}, {"cluster.x-k8s.io/owner-name": "md-10-aaaaa"}),
        _scalable("MachineDeployment", "md-1", 2),
    )
    derived = derive_pools(state)
    assert {n: (p.spec.from_node, p.spec.max_nodes) for n, p in derived.pools.items()} == {
        "md-1": ("w-1", 2)
    }
    state.node_pools.update(derived.pools)
    assert [n.metadata.name for n in pool_members(state, derived.pools["md-1"])] == ["w-1", "w-2"]


def test_an_empty_group_without_capacity_annotations_is_left_out() -> None:
    state = _group_state(_scalable("MachineDeployment", "bare", 2))
    derived = derive_pools(state)
    assert not derived.pools
    assert derived.skipped == [
        "MachineDeployment capi/bare: no node and no cpu/memory capacity annotations"
    ]


# --- Karpenter -----------------------------------------------------------------------------------


def test_karpenter_limits_and_weight_size_the_pools() -> None:
    state = _derived("cluster.yaml", "karpenter-nodepools.yaml")
    pools = state.node_pools
    # h100: 576 cpu over 192-cpu nodes, 2 of them already: 3 in all.
    assert pools["h100"].spec.max_nodes == 3
    # l4: cpu allows 480 / 48 = 10 nodes, memory 2Ti / 192Gi = 10 (both bind at 10).
    assert pools["a100"].spec.max_nodes == 10
    assert {n: p.spec.priority for n, p in pools.items()} == {"a100": 20, "h100": 50, "l4": 10}
    assert pools["h100"].metadata.annotations[DERIVED_FROM] == "Karpenter NodePool h100"


def test_karpenter_limit_stops_the_second_h100_node(run_cli: Any) -> None:
    files = ["-f", str(DUMP / "cluster.yaml"), "-f", str(GROUPS / "karpenter-nodepools.yaml")]
    doc = run_cli("scale", *files, "--prices", PRICES, "-o", "json").json()
    assert [(u["pool"], u["add"]) for u in doc["scaleUp"]] == [("h100", 1)]
    blocked = {b["pod"]: b for b in doc["notTriggerScaleUp"]}
    [waiting] = [p for p in ("research/finetune-numa-0", "research/train-8-0") if p in blocked]
    assert blocked[waiting]["nodeGroups"]["h100"] == "max node group size reached"
    assert blocked[waiting]["message"] == (
        "pod didn't trigger scale-up: 1 max node group size reached, "
        "2 node(s) had untolerated taint(s)"
    )


SPOT = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "h100-spot"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "research"}},
            "spec": {
                "requirements": [
                    {
                        "key": INSTANCE_TYPE,
                        "operator": "In",
                        "values": ["p5.48xlarge", "p5e.48xlarge"],
                    },
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                ],
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "gpu",
                },
            },
        },
        "limits": {"cpu": "200"},
    },
}


def test_karpenter_pool_without_nodes_copies_a_node_of_its_instance_type() -> None:
    state = ClusterState.from_objects(
        [
            *load_files([str(DUMP / "cluster.yaml"), str(GROUPS / "karpenter-nodepools.yaml")]),
            decode(SPOT),
        ]
    )
    state.node_pools.update(derive_pools(state, load_prices(PRICES)).pools)
    spot = state.node_pools["h100-spot"]
    assert spot.spec.template is not None and not spot.spec.from_node
    assert spot.spec.max_nodes == 1  # 200 cpu: one 192-cpu node
    assert spot.spec.price_per_hour == "98.32"  # by the copied instance type
    new = make_node(state, spot, "h100-spot-0", {})
    labels = new.node.metadata.labels
    assert labels["karpenter.sh/nodepool"] == "h100-spot"
    assert labels["karpenter.sh/capacity-type"] == "spot"
    assert labels["team"] == "research" and labels[INSTANCE_TYPE] == "p5.48xlarge"
    assert not new.node.spec.taints and not new.node.spec.provider_id
    assert len(new.slices[0].spec.devices) == 8  # gpu-h100-a's GPUs, in the new node's pool
    assert {rs.spec.pool.name for rs in new.slices} == {"h100-spot-0"}
    # The h100 pool's limit leaves one node; the spot pool takes the other pod (without the
    # move that would spare finetune-numa-0's node).
    doc = _plan(state, moves=False)
    assert {u["pool"]: u["add"] for u in doc["scaleUp"]} == {"h100": 1, "h100-spot": 1}


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec:\n"
            "  template:\n    spec:\n      requirements:\n"
            "      - {key: a, operator: Within, values: [b]}\n",
            'NodePool "x": spec.template.spec.requirements[0].operator: unsupported value',
        ),
        (
            "apiVersion: cluster.x-k8s.io/v1beta2\nkind: MachinePool\nmetadata:\n  name: mp\n"
            "  annotations:\n    cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size: '3'\n"
            "    cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size: '2'\n",
            'MachinePool "mp": metadata.annotations[cluster.x-k8s.io/cluster-api-autoscaler-'
            "node-group-max-size]: must not be below min-size",
        ),
    ],
    ids=["karpenter-operator", "capi-max-below-min"],
)
def test_bad_node_groups_are_one_line_errors(
    run_cli: Any, tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    out = run_cli("scale", "-f", str(path))
    assert out.code == 2
    [line] = out.err.strip().splitlines()
    assert message in line and line.startswith(f"error: {path}: ")


def test_prices_csv_and_a_bad_price(run_cli: Any, tmp_path: Path) -> None:
    table = tmp_path / "prices.csv"
    table.write_text("name,pricePerHour\n# on demand\nh100,98.32\np4d.24xlarge,32.77\n")
    assert load_prices(str(table)) == {"h100": "98.32", "p4d.24xlarge": "32.77"}
    table.write_text("h100,cheap\n")
    out = run_cli("scale", "-f", str(DUMP / "cluster.yaml"), "--prices", str(table))
    assert out.code == 2
    [line] = out.err.strip().splitlines()
    assert line.startswith(f"error: {table}: ") and "'cheap' is not a price" in line


@pytest.mark.parametrize(
    ("prices", "unpriced"),
    [
        ({}, "gaudi-pool, tpu-v5e"),
        ({"tpu-v5e": "0"}, "gaudi-pool"),  # a price of 0 said is a price
        ({"gaudi-pool": "39.0", "ct5lp-hightpu-4t": "4.8"}, ""),  # by name, by instance type
    ],
)
def test_pools_with_no_price_are_named_on_stderr(
    run_cli: Any, tmp_path: Path, prices: dict[str, str], unpriced: str
) -> None:
    """A derived pool whose price neither --prices nor its node's label gives costs $0/h in
    every plan: the command says which pools those are, once, instead of staying silent."""
    gaudi = _node("gaudi-0", {"eks.amazonaws.com/nodegroup": "gaudi-pool"}, {})
    tpu = _node(
        "tpu-0",
        {
            "cloud.google.com/gke-nodepool": "tpu-v5e",
            "node.kubernetes.io/instance-type": "ct5lp-hightpu-4t",
        },
        {},
    )
    system = _node(
        "cp-0",
        {"eks.amazonaws.com/nodegroup": "system", "draplan.io/price-per-hour": "0.19"},
        {},
    )
    objs = [gaudi, tpu, system]
    for n, extra in zip(objs, ({"habana.ai/gaudi": "8"}, {"google.com/tpu": "4"}, {}), strict=True):
        n["status"] = {"allocatable": {"cpu": "96", "memory": "512Gi", "pods": "110", **extra}}
    dump = tmp_path / "cluster.yaml"
    dump.write_text(yaml.safe_dump_all(objs))
    table = tmp_path / "prices.yaml"
    table.write_text(yaml.safe_dump(prices))
    out = run_cli("scale", "-f", str(dump), "--prices", str(table))
    assert out.code == 0, out.err
    notices = [line for line in out.err.splitlines() if "no price for" in line]
    if unpriced:
        assert notices == [
            f"notice: no price for pool(s) {unpriced}: their nodes count as $0/h (give "
            "--prices, or label their nodes draplan.io/price-per-hour)"
        ]
    else:
        assert notices == []
