"""`draplan pools`: the pools every command judges with, listed as `kubectl get` lists objects:
where each came from, which autoscaler grows it, how many nodes it has and may have, and the
label that selects its nodes; as NodePools that, given back with -f, plan the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from conftest import DATA

MIXED = DATA / "multivendor"
CLUSTER = str(MIXED / "cluster.yaml")
PRICES = str(MIXED / "prices.yaml")


def test_the_table_names_source_autoscaler_size_and_selector(run_cli: Any) -> None:
    out = run_cli("pools", "-f", CLUSTER, "--prices", PRICES, "-o", "wide")
    assert out.code == 0, out.err
    rows = {line.split()[0]: line for line in out.out.splitlines()[2:]}
    assert set(rows) == {
        "atlas-cpu",
        "atlas-gaudi3",
        "atlas-gaudi3-burst",
        "atlas-system",
        "gb200",
        "tpu-v5e-dra",
        "tpu-v6e-a",
        "tpu-v6e-b",
    }
    burst = rows["atlas-gaudi3-burst"].split()
    assert burst[1:3] == ["MachineDeployment", "atlas-capi/atlas-gaudi3-burst"]
    assert burst[3:8] == ["cluster-autoscaler", "0", "0", "2", "58.0"]
    assert burst[8:] == ["node.cluster.x-k8s.io/pool=gaudi3-burst", "template"]
    gb200 = rows["gb200"].split()
    assert gb200[1:9] == ["Karpenter", "NodePool", "gb200", "karpenter", "2", "0", "4", "96.4"]
    assert "karpenter.sh/nodepool=gb200" in gb200
    v6e = rows["tpu-v6e-a"].split()
    assert v6e[1:5] == ["label", "cloud.google.com/gke-nodepool", "cluster-autoscaler", "4"]


def test_yaml_gives_node_pools_that_plan_the_same(run_cli: Any, tmp_path: Path) -> None:
    out = run_cli("pools", "-f", CLUSTER, "--prices", PRICES, "-o", "yaml")
    assert out.code == 0, out.err
    docs = [d for d in yaml.safe_load_all(out.out) if d]
    assert {d["kind"] for d in docs} == {"NodePool"} and len(docs) == 8
    path = tmp_path / "pools.yaml"
    path.write_text(out.out)
    derived = run_cli("scale", "-f", CLUSTER, "--prices", PRICES, "-o", "json").json()
    given = run_cli("scale", "-f", CLUSTER, "-f", str(path), "-o", "json").json()
    assert given["scaleUp"] == derived["scaleUp"]
    listed = run_cli("pools", "-f", CLUSTER, "-f", str(path), "-o", "json").json()
    assert [i["metadata"]["name"] for i in listed["items"]] == [d["metadata"]["name"] for d in docs]


def test_pools_given_are_listed_as_given(run_cli: Any) -> None:
    realistic = DATA / "realistic"
    out = run_cli(
        "pools", "-f", str(realistic / "cluster.yaml"), "-f", str(realistic / "pools.yaml")
    )
    assert out.code == 0, out.err
    rows = [line.split() for line in out.out.splitlines()[2:]]
    assert [(r[0], r[1]) for r in rows] == [
        ("a100", "NodePool"),
        ("h100", "NodePool"),
        ("l4", "NodePool"),
    ]
    # Their nodes are Karpenter's (karpenter.sh/nodepool): Karpenter grows them.
    assert {r[2] for r in rows} == {"karpenter"}
