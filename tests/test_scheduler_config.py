"""`--scheduler-config`: a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration (or a
ConfigMap holding one) read, defaulted and validated as kube-scheduler does, its profiles
scheduling the pods that name them; `--dra-allocation-timeout`."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

import audit_scenarios as sc
from draplan.api.codec import encode
from draplan.cluster.state import ClusterState
from draplan.scheduler import Scheduler
from draplan.scheduler.config import parse_config
from draplan.scheduler.plugins.interpodaffinity import AffinityArgs
from draplan.scheduler.plugins.podtopologyspread import SpreadArgs
from scheduler_builders import MakeNode, MakePod

API = "kubescheduler.config.k8s.io/v1"


def config(*profiles: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "KubeSchedulerConfiguration",
        "profiles": list(profiles),
        **extra,
    }


def fit(strategy: str, **more: Any) -> dict[str, Any]:
    return {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": strategy, **more}}}


def spread(constraints: list[dict[str, Any]], kind: str = "") -> dict[str, Any]:
    args: dict[str, Any] = {"defaultConstraints": constraints}
    if kind:
        args["defaultingType"] = kind
    return {"name": "PodTopologySpread", "args": args}


def constraint(skew: int) -> dict[str, Any]:
    return {
        "maxSkew": skew,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
    }


def write(path: Path, docs: list[Any]) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def two_nodes() -> list[Any]:
    """n-busy is half used, n-idle empty: spreading picks n-idle, packing n-busy."""
    return [
        MakeNode().name("n-busy").capacity(cpu="8", memory="32Gi").obj(),
        MakeNode().name("n-idle").capacity(cpu="8", memory="32Gi").obj(),
        MakePod().name("running").req(cpu="4", memory="16Gi").node("n-busy").obj(),
    ]


def test_profiles_schedule_the_pods_that_name_them(run_cli: Any, tmp_path: Path) -> None:
    cfg = config(
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "gpu-packer", "pluginConfig": [fit("MostAllocated")]},
    )
    pods = [
        MakePod().name("spread").req(cpu="1").created("2026-01-01T00:00:01Z").obj(),
        MakePod().name("packed").req(cpu="1").created("2026-01-01T00:00:02Z").obj(),
        MakePod().name("elsewhere").req(cpu="1").created("2026-01-01T00:00:03Z").obj(),
    ]
    docs = [encode(o) for o in [*two_nodes(), *pods]]
    docs[-2]["spec"]["schedulerName"] = "gpu-packer"
    docs[-1]["spec"]["schedulerName"] = "volcano"
    res = run_cli(
        "schedule",
        "-f",
        write(tmp_path / "c.yaml", docs),
        "--scheduler-config",
        write(tmp_path / "s.yaml", [cfg]),
        "-o",
        "json",
    )
    assert res.code == 0, res.err
    placed = {p["name"]: p["node"] for p in res.json()["pods"]}
    # kube-scheduler leaves a pod naming none of its profiles to that other scheduler.
    assert placed == {"spread": "n-idle", "packed": "n-busy"}


def test_a_configmap_holding_the_configuration(run_cli: Any, tmp_path: Path) -> None:
    text = yaml.safe_dump(config({"pluginConfig": [fit("MostAllocated")]}))
    holder = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "scheduler-config", "namespace": "kube-system"},
        "data": {"scheduler-config.yaml": text},
    }
    docs = [encode(o) for o in [*two_nodes(), MakePod().name("p").req(cpu="1").obj()]]
    cluster, cm = write(tmp_path / "c.yaml", docs), write(tmp_path / "cm.yaml", [holder])
    res = run_cli("schedule", "-f", cluster, "--scheduler-config", cm, "-o", "json")
    assert res.code == 0, res.err
    assert res.json()["pods"][0]["node"] == "n-busy"
    broken = copy.deepcopy(holder)
    bad = config({"pluginConfig": [fit("Packed")]})
    broken["data"]["scheduler-config.yaml"] = yaml.safe_dump(bad)
    res = run_cli(
        "schedule", "-f", cluster, "--scheduler-config", write(tmp_path / "b.yaml", [broken])
    )
    assert res.code == 2
    assert res.err.strip().splitlines() == [
        f'error: {tmp_path / "b.yaml"}: ConfigMap "scheduler-config": data[scheduler-config.yaml]'
        ".profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "
        '"Packed": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
    ]


@pytest.mark.parametrize(
    ("profile", "extra", "path", "message"),
    [
        (
            {"pluginConfig": [fit("Packed")]},
            {},
            "profiles[0].pluginConfig[0].args.scoringStrategy.type",
            "Unsupported value",
        ),
        (
            {"pluginConfig": [fit("LeastAllocated", resources=[{"name": "cpu", "weight": 101}])]},
            {},
            "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight",
            "resource weight of cpu not in valid range [1, 100]",
        ),
        (
            {"pluginConfig": [fit("RequestedToCapacityRatio")]},
            {},
            "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape",
            "at least one point must be specified",
        ),
        (
            {"pluginConfig": [{"name": "DynamicResources", "args": {"filterTimeout": "-1s"}}]},
            {},
            "profiles[0].pluginConfig[0].args.filterTimeout",
            "must be zero or positive",
        ),
        (
            {
                "pluginConfig": [
                    {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}
                ]
            },
            {},
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
            "not in valid range [0, 100]",
        ),
        (
            {"pluginConfig": [spread([constraint(1)])]},
            {},
            "profiles[0].pluginConfig[0].args.defaultingType",
            'Invalid value: "System": when .defaultConstraints are not empty',
        ),
        (
            {"pluginConfig": [spread([constraint(1), constraint(2)], "List")]},
            {},
            "profiles[0].pluginConfig[0].args.defaultConstraints[1]",
            'Duplicate value: "{topology.kubernetes.io/zone, DoNotSchedule}"',
        ),
        (
            {"pluginConfig": [spread([constraint(0)], "List")]},
            {},
            "profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew",
            "Invalid value: 0: not in valid range (0, inf)",
        ),
        (
            {
                "pluginConfig": [
                    spread(
                        [{**constraint(1), "labelSelector": {"matchLabels": {"a": "b"}}}], "List"
                    )
                ]
            },
            {},
            "profiles[0].pluginConfig[0].args.defaultConstraints[0].labelSelector",
            "Forbidden: constraint must not define a selector",
        ),
        (
            {
                "pluginConfig": [
                    {
                        "name": "DefaultPreemption",
                        "args": {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
                    }
                ]
            },
            {},
            "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage",
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ),
        (
            {"percentageOfNodesToScore": 120},
            {},
            "profiles[0].percentageOfNodesToScore",
            "not in valid range [0-100]",
        ),
        (
            {},
            {"percentageOfNodesToScore": -1},
            "percentageOfNodesToScore",
            "not in valid range [0-100]",
        ),
        ({}, {"parallelism": 0}, "parallelism", "should be an integer value greater than zero"),
        (
            {"plugins": {"score": {"enabled": [{"name": "GpuFriendly"}]}}},
            {},
            "profiles[0].plugins.score.enabled[0].name",
            'plugin "GpuFriendly" does not exist',
        ),
        (
            {"pluginConfig": [fit("MostAllocated"), fit("LeastAllocated")]},
            {},
            "profiles[0].pluginConfig[1]",
            "Duplicate value",
        ),
        (
            {
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"typ": "x"}}}
                ]
            },
            {},
            "profiles[0].pluginConfig[0].args.scoringStrategy",
            "unknown field",
        ),
    ],
)
def test_invalid_configuration_is_one_line_with_the_field_path(
    run_cli: Any,
    tmp_path: Path,
    profile: dict[str, Any],
    extra: dict[str, Any],
    path: str,
    message: str,
) -> None:
    cluster = write(tmp_path / "c.yaml", [encode(o) for o in two_nodes()])
    cfg = write(tmp_path / "s.yaml", [config(profile, **extra)])
    res = run_cli("schedule", "-f", cluster, "--scheduler-config", cfg)
    assert res.code == 2, res.out
    [line] = res.err.strip().splitlines()
    assert line.startswith(f"error: {cfg}: KubeSchedulerConfiguration: {path}: "), line
    assert message in line, line


def test_two_profiles_need_names_and_differ() -> None:
    with pytest.raises(Exception, match=r"schedulerName: Required value"):
        parse_config(config({}, {"schedulerName": "b"}))
    with pytest.raises(Exception, match=r"profiles\[1\].schedulerName: Duplicate value"):
        parse_config(config({"schedulerName": "a"}, {"schedulerName": "a"}))


def test_plugin_sets_merge_as_upstream() -> None:
    """MultiPoint: "*" drops every default; a per-point `disabled` drops a plugin there only;
    a per-point `enabled` weight wins over MultiPoint's."""
    cfg = parse_config(
        config(
            {
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "ImageLocality", "weight": 5}]},
                    "score": {
                        "disabled": [{"name": "TaintToleration"}],
                        "enabled": [{"name": "NodeResourcesFit", "weight": 7}],
                    },
                }
            }
        )
    )
    profile = cfg.profile()
    scores = [(p.name, w) for p, w in profile.scores]
    assert scores[0] == ("NodeResourcesFit", 7)  # a point's own entries come first
    assert ("ImageLocality", 5) in scores and "TaintToleration" not in dict(scores)
    assert "TaintToleration" in [p.name for p in profile.filters]  # disabled for Score only
    bare = parse_config(
        config(
            {
                "plugins": {
                    "multiPoint": {
                        "disabled": [{"name": "*"}],
                        "enabled": [{"name": "NodeName"}, {"name": "DynamicResources"}],
                    }
                }
            }
        )
    ).profile()
    assert [p.name for p in bare.filters] == ["NodeName", "DynamicResources"]
    assert [p.name for p, _ in bare.scores] == ["DynamicResources"]


def test_requested_to_capacity_ratio_packs_by_its_shape() -> None:
    """Shape 0 % -> 0, 100 % -> 10: the fuller node scores higher (a bin-packing curve)."""
    shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    cfg = parse_config(
        config(
            {
                "pluginConfig": [
                    fit("RequestedToCapacityRatio", requestedToCapacityRatio={"shape": shape})
                ]
            }
        )
    )
    state = ClusterState.from_objects([*two_nodes(), MakePod().name("p").req(cpu="1").obj()])
    (result,) = Scheduler(cfg.profile()).run(state)
    assert result.node == "n-busy"


def test_percentage_of_nodes_to_score_from_the_configuration() -> None:
    """percentageOfNodesToScore 50 on 300 identical nodes: 150 are scored, from n000 on."""
    nodes = [MakeNode().name(f"n{i:03d}").obj() for i in range(300)]
    cfg = parse_config(config({}, percentageOfNodesToScore=50))
    profile = cfg.profile()
    assert profile.percentage == 50
    state = ClusterState.from_objects([*nodes, MakePod().name("p").obj()])
    Scheduler(profile).run(state)
    # The scheduler went through 150 nodes: the next cycle starts at n150.
    assert state.search_start.get(profile.name) == 150


def test_dra_allocation_timeout_is_reported_when_hit(run_cli: Any, tmp_path: Path) -> None:
    """A search longer than the timeout ends on every node with kube-scheduler's words."""
    path = write(tmp_path / "c.yaml", sc.search_budget(2))
    res = run_cli("schedule", "-f", path, "--dra-allocation-timeout", "1ns", "-o", "json")
    assert res.code == 0, res.err
    [pod] = res.json()["pods"]
    assert pod["reason"]["message"].startswith(
        "0/2 nodes are available: 2 timed out trying to allocate devices."
    )
    res = run_cli("schedule", "-f", path, "--dra-allocation-timeout", "soon")
    assert res.code == 2 and "--dra-allocation-timeout" in res.err


def test_spread_and_affinity_args_reach_their_plugins_typed() -> None:
    """PodTopologySpread's and InterPodAffinity's args, defaulted and validated, are the
    plugins' own SpreadArgs and AffinityArgs in the profile's spec (scheduler.profile hands
    them to the plugins' factories)."""
    cfg = parse_config(
        config(
            {
                "pluginConfig": [
                    spread([constraint(2)], "List"),
                    {
                        "name": "InterPodAffinity",
                        "args": {"ignorePreferredTermsOfExistingPods": True},
                    },
                ]
            }
        )
    )
    [spec] = cfg.profiles
    args = spec.args["PodTopologySpread"]
    assert isinstance(args, SpreadArgs) and args.defaulting_type == "List"
    assert [(c.max_skew, c.topology_key) for c in args.default_constraints] == [
        (2, "topology.kubernetes.io/zone")
    ]
    affinity = spec.args["InterPodAffinity"]
    assert affinity == AffinityArgs(1, True)
    [plain] = parse_config(config({"pluginConfig": [spread([])]})).profiles
    assert plain.args["PodTopologySpread"] == SpreadArgs((), "System")
