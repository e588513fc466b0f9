"""DefaultPreemption on hand-written clusters unlike the fixtures: Gaudi cards from a device
plugin, GB200 MIG partitions through DRA, a control plane with system-critical pods,
PodDisruptionBudgets, nominated pods from the input and from the run, and every form of the
FailedScheduling postfix."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import msgspec
import yaml

from draplan.api.codec import decode
from draplan.api.core_v1 import NodeSelectorRequirement
from draplan.api.meta import KubeStruct, LabelSelector, ObjectMeta
from draplan.api.policy_v1 import (
    PodDisruptionBudget,
    PodDisruptionBudgetSpec,
    PodDisruptionBudgetStatus,
)
from draplan.cluster.state import ClusterState
from draplan.scheduler import PodResult, Scheduler, build_profile
from draplan.scheduler.preemption import DefaultPreemption
from draplan.scheduler.preemption_args import PreemptionArgs
from scheduler_builders import MakeNode, MakePod, priority_class

GAUDI = "habana.ai/gaudi"
HOSTNAME = "kubernetes.io/hostname"
NO_CLAIMS = "no new claims to deallocate, preemption: "


def run(
    objs: list[KubeStruct], free_devices: bool = False
) -> tuple[ClusterState, dict[str, PodResult]]:
    profile = build_profile()
    if free_devices:
        preemption = DefaultPreemption(
            profile.filters, profile.dra, PreemptionArgs(free_devices=True)
        )
        profile = dataclasses.replace(profile, post_filters=(profile.dra, preemption))
    state = ClusterState.from_objects(objs)
    results = Scheduler(profile, post_filter=True).run(state)
    return state, {r.key[1]: r for r in results}


def gaudi_node(name: str, cards: int = 8) -> KubeStruct:
    node = MakeNode().name(name).label(HOSTNAME, name)
    return node.capacity(cpu="160", memory="1Ti", **{GAUDI: cards}).obj()


def running(name: str, node: str, cards: int, priority: int, started: str) -> KubeStruct:
    return (
        MakePod()
        .name(name)
        .node(node)
        .req(cpu="4", **{GAUDI: cards})
        .priority(priority)
        .started(started)
        .obj()
    )


def gaudi_queue() -> list[KubeStruct]:
    """Eight Gaudi cards taken by pods of priority 10, 10 and 100; a 4-card job of priority
    1000 and a 2-card pod of priority 10 wait."""
    return [
        gaudi_node("gaudi-0"),
        running("low-a", "gaudi-0", 4, 10, "2026-10-01T10:00:00Z"),
        running("low-b", "gaudi-0", 2, 10, "2026-10-01T11:00:00Z"),
        running("mid", "gaudi-0", 2, 100, "2026-10-01T09:00:00Z"),
        MakePod().name("train").req(cpu="8", **{GAUDI: 4}).priority(1000).obj(),
        MakePod().name("etl").req(cpu="1", **{GAUDI: 2}).priority(10).obj(),
    ]


def test_gaudi_cards_preempt_the_fewest_least_important_pods() -> None:
    """Eight Gaudi cards on one node, all taken. A 4-card job of priority 1000: every pod
    below it comes off, then they are put back most important first (priority, then earlier
    start): the priority-100 pod and the later-started priority-10 pod fit back beside it,
    the earlier priority-10 pod is the victim. The pod is nominated, not bound; the cards it
    will take count there for the later pod of lower priority, which finds nothing to evict
    (equal priority is no victim)."""
    objs = gaudi_queue()
    state, res = run(objs)
    train = res["train"]
    assert train.node is None and train.nominated == "gaudi-0"
    assert [p.metadata.name for p in train.victims] == ["low-a"]
    assert train.reason is not None and train.reason.message == (
        "0/1 nodes are available: 1 Insufficient habana.ai/gaudi."
    )  # a PostFilter that succeeds adds nothing to FailedScheduling
    assert ("default", "low-a") not in state.pods
    assert state.pods[("default", "train")].status.nominated_node_name == "gaudi-0"
    etl = res["etl"]
    assert etl.node is None and not etl.nominated
    assert etl.reason is not None and etl.reason.message == (
        "0/1 nodes are available: 1 Insufficient habana.ai/gaudi. "
        + NO_CLAIMS
        + "0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_a_nominated_pod_holds_its_node_for_equal_and_lower_priority_pods_only() -> None:
    """A pod nominated in the input (status.nominatedNodeName) counts on its node for the
    pods of equal or lower priority (addGENominatedPods); a pod above it does not see it."""
    objs = [
        gaudi_node("gaudi-0", cards=4),
        gaudi_node("gaudi-1", cards=8),
        MakePod()
        .name("waiting")
        .req(**{GAUDI: 4})
        .priority(100)
        .nominated("gaudi-0")
        .created("2026-10-01T10:00:00Z")
        .obj(),
        MakePod()
        .name("peer")
        .req(**{GAUDI: 4})
        .priority(100)
        .created("2026-10-01T09:00:00Z")
        .node_selector(HOSTNAME, "gaudi-0")
        .obj(),
        MakePod()
        .name("urgent")
        .req(**{GAUDI: 4})
        .priority(500)
        .node_selector(HOSTNAME, "gaudi-0")
        .obj(),
    ]
    state, res = run(objs)
    assert res["urgent"].node == "gaudi-0"  # the priority-100 nomination is not in its way
    assert res["peer"].node is None  # queued first, but the equal nomination holds gaudi-0
    assert res["waiting"].node == "gaudi-1"  # its nominated node is full now: elsewhere
    assert not state.held  # bound: nothing nominated is left


def test_a_pod_goes_to_its_nominated_node_when_it_fits() -> None:
    """evaluateNominatedNode: the nominated node is tried first and taken if it fits, even
    where the scores prefer another node."""
    objs = [
        gaudi_node("gaudi-0"),
        gaudi_node("gaudi-1"),
        running("tenant", "gaudi-1", 2, 0, "2026-10-01T08:00:00Z"),
        MakePod().name("job").req(**{GAUDI: 2}).priority(100).obj(),
    ]
    _, plain = run(objs)
    preferred = plain["job"].node
    other = "gaudi-1" if preferred == "gaudi-0" else "gaudi-0"
    nominated = MakePod().name("job").req(**{GAUDI: 2}).priority(100).nominated(other).obj()
    _, res = run([*objs[:-1], nominated])
    assert preferred is not None and res["job"].node == other


def budget(name: str, app: str, allowed: int | None, min_available: int = 1) -> KubeStruct:
    status = None
    if allowed is not None:
        status = PodDisruptionBudgetStatus(observed_generation=1, disruptions_allowed=allowed)
    return PodDisruptionBudget(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodDisruptionBudgetSpec(
            min_available=min_available, selector=LabelSelector(match_labels={"app": app})
        ),
        status=status,
    )


def test_a_budget_steers_preemption_to_the_node_where_none_breaks() -> None:
    """Two identical nodes, one evictable pod each; the one on gaudi-0 is the last replica its
    PodDisruptionBudget allows to run: gaudi-1 is chosen (fewest violations first). With
    every node breaking a budget, the node that breaks fewest wins and the victims are still
    the ones the pod needs gone; a budget the disruption controller has not seen yet (no
    status) is counted as it would count it."""

    def cluster(allowed: int | None) -> list[KubeStruct]:
        return [
            gaudi_node("gaudi-0", cards=4),
            gaudi_node("gaudi-1", cards=4),
            MakePod()
            .name("serve-0")
            .node("gaudi-0")
            .req(**{GAUDI: 4})
            .priority(0)
            .label("app", "serve")
            .started("2026-10-01T12:00:00Z")
            .obj(),
            MakePod()
            .name("batch-0")
            .node("gaudi-1")
            .req(**{GAUDI: 4})
            .priority(0)
            .started("2026-10-01T08:00:00Z")
            .obj(),
            budget("serve", "serve", allowed),
            MakePod().name("train").req(**{GAUDI: 4}).priority(1000).obj(),
        ]

    for allowed in (0, None):  # None: no status; one healthy pod, minAvailable 1: 0 allowed
        _, res = run(cluster(allowed))
        assert res["train"].nominated == "gaudi-1", allowed
        assert [p.metadata.name for p in res["train"].victims] == ["batch-0"]
    # The budget allows one disruption: both nodes are clean; the later-started victim's
    # node wins on the last criterion (latest start of the highest-priority victims).
    _, res = run(cluster(1))
    assert res["train"].nominated == "gaudi-0"


def test_preemption_policy_never_from_the_priority_class() -> None:
    """Priority admission copies the class's preemptionPolicy to the pod: a pod of a Never
    class waits, with kube-scheduler's words, and evicts nothing."""
    never = msgspec.structs.replace(priority_class("batch-never", 1000), preemption_policy="Never")
    objs = [
        never,
        gaudi_node("gaudi-0", cards=4),
        running("low", "gaudi-0", 4, 0, "2026-10-01T08:00:00Z"),
        MakePod().name("sweep").req(**{GAUDI: 4}).priority_class("batch-never").obj(),
    ]
    state, res = run(objs)
    assert not res["sweep"].nominated and ("default", "low") in state.pods
    assert res["sweep"].reason is not None
    assert res["sweep"].reason.message.endswith(
        NO_CLAIMS + "not eligible due to preemptionPolicy=Never."
    )


def test_a_pod_waits_while_its_victims_terminate() -> None:
    """A pod nominated to a node where a lower-priority pod is still terminating by
    preemption (deletionTimestamp and DisruptionTarget/PreemptionByScheduler) preempts no
    more: the victims of its earlier attempt are on their way out."""
    objs = [
        gaudi_node("gaudi-0", cards=4),
        MakePod().name("old").node("gaudi-0").req(**{GAUDI: 4}).priority(0).preempted().obj(),
        MakePod().name("train").req(**{GAUDI: 4}).priority(1000).nominated("gaudi-0").obj(),
    ]
    _, res = run(objs)
    reason = res["train"].reason
    assert not res["train"].nominated and reason is not None
    assert reason.message.endswith(
        NO_CLAIMS + "not eligible due to a terminating pod on the nominated node."
    )


def test_system_critical_pods_on_the_control_plane_are_never_victims() -> None:
    """A control-plane node (tainted, running kube-apiserver and etcd at system-node-critical,
    a class kube-apiserver creates itself) and two workers full of user pods. A
    node-exporter pod of system-node-critical pinned to worker-1 evicts the later-started
    user pod there. A user job of the highest user priority then evicts one more user pod:
    on worker-1, where one victim suffices (the smallest sum of victim priorities), beside
    the exporter's nomination, which outranks it. The control plane is never a candidate
    (its taint is no failure preemption resolves) and its pods stay."""
    cp = (
        MakeNode()
        .name("cp-0")
        .label(HOSTNAME, "cp-0")
        .taint("node-role.kubernetes.io/control-plane")
        .capacity(cpu="8", memory="32Gi")
        .obj()
    )
    workers = [
        MakeNode().name(n).label(HOSTNAME, n).capacity(cpu="16", memory="64Gi").obj()
        for n in ("worker-0", "worker-1")
    ]
    system = [
        MakePod()
        .name(n)
        .namespace("kube-system")
        .node("cp-0")
        .req(cpu="2")
        .priority_class("system-node-critical")
        .toleration(operator="Exists")
        .obj()
        for n in ("kube-apiserver-cp-0", "etcd-cp-0")
    ]
    users = [
        MakePod()
        .name(f"app-{i}")
        .node(f"worker-{i // 2}")
        .req(cpu="8")
        .priority(0)
        .started(f"2026-10-01T0{i}:00:00Z")
        .obj()
        for i in range(4)
    ]
    exporter = (
        MakePod()
        .name("node-exporter-w1")
        .namespace("kube-system")
        .req(cpu="1")
        .priority_class("system-node-critical")
        .node_selector(HOSTNAME, "worker-1")
        .obj()
    )
    top = priority_class("top", 1_000_000_000)
    job = MakePod().name("big").req(cpu="12").priority_class("top").obj()
    state, res = run([cp, *workers, *system, *users, exporter, top, job])
    exp = res["node-exporter-w1"]
    assert exp.nominated == "worker-1"
    assert [p.metadata.name for p in exp.victims] == ["app-3"]
    big = res["big"]
    assert big.nominated == "worker-1"
    assert [p.metadata.name for p in big.victims] == ["app-2"]
    assert state.pods[("kube-system", "node-exporter-w1")].status.nominated_node_name == (
        "worker-1"
    )
    assert all(("kube-system", p.metadata.name) in state.pods for p in system)
    assert {k[1] for k in state.pods if k[1].startswith("app-")} == {"app-0", "app-1"}


GB200 = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: mig.nvidia.com}
spec:
  selectors:
  - cel:
      expression: >-
        device.driver == 'gpu.nvidia.com' &&
        device.attributes['gpu.nvidia.com'].type == 'mig'
---
apiVersion: v1
kind: Node
metadata:
  name: gb200-0
  labels: {kubernetes.io/hostname: gb200-0, kubernetes.io/arch: arm64}
status:
  allocatable: {cpu: "140", memory: 800Gi, pods: "110"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gb200-0-counters}
spec:
  driver: gpu.nvidia.com
  nodeName: gb200-0
  pool: {name: gb200-0, generation: 1, resourceSliceCount: 2}
  sharedCounters:
  - name: gpu-0-counter-set
    counters:
      memory-slice-0: {value: "1"}
      memory-slice-1: {value: "1"}
      memory-slice-2: {value: "1"}
      memory-slice-3: {value: "1"}
      memory-slice-4: {value: "1"}
      memory-slice-5: {value: "1"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gb200-0-devices}
spec:
  driver: gpu.nvidia.com
  nodeName: gb200-0
  pool: {name: gb200-0, generation: 1, resourceSliceCount: 2}
  devices:
  - name: gpu-0-mig-3g-0
    attributes: {type: {string: mig}, profile: {string: 3g.93gb}}
    consumesCounters:
    - counterSet: gpu-0-counter-set
      counters:
        memory-slice-0: {value: "1"}
        memory-slice-1: {value: "1"}
        memory-slice-2: {value: "1"}
  - name: gpu-0-mig-3g-1
    attributes: {type: {string: mig}, profile: {string: 3g.93gb}}
    consumesCounters:
    - counterSet: gpu-0-counter-set
      counters:
        memory-slice-3: {value: "1"}
        memory-slice-4: {value: "1"}
        memory-slice-5: {value: "1"}
  - name: gpu-0-mig-1g-0
    attributes: {type: {string: mig}, profile: {string: 1g.23gb}}
    consumesCounters:
    - counterSet: gpu-0-counter-set
      counters: {memory-slice-0: {value: "1"}}
"""


def _notebook(name: str, device: str, started: str) -> str:
    return f"""
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}-mig, namespace: default}}
spec:
  devices:
    requests:
    - name: mig
      exactly: {{deviceClassName: mig.nvidia.com}}
status:
  allocation:
    devices:
      results: [{{request: mig, driver: gpu.nvidia.com, pool: gb200-0, device: {device}}}]
    nodeSelector:
      nodeSelectorTerms:
      - matchFields: [{{key: metadata.name, operator: In, values: [gb200-0]}}]
  reservedFor: [{{resource: pods, name: {name}, uid: uid-{name}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, uid: uid-{name}}}
spec:
  nodeName: gb200-0
  priority: 10
  containers: [{{name: main, resources: {{requests: {{cpu: "2"}}}}}}]
  resourceClaims: [{{name: mig, resourceClaimName: {name}-mig}}]
status:
  phase: Running
  startTime: "{started}"
"""


FINETUNE = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: mig-3g, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: mig
        exactly:
          deviceClassName: mig.nvidia.com
          selectors:
          - cel: {expression: "device.attributes['gpu.nvidia.com'].profile == '3g.93gb'"}
---
apiVersion: v1
kind: Pod
metadata: {name: finetune, namespace: default, uid: uid-finetune}
spec:
  priority: 1000
  containers: [{name: main, resources: {requests: {cpu: "8"}}}]
  resourceClaims: [{name: mig, resourceClaimTemplateName: mig-3g}]
"""


def _gb200() -> list[KubeStruct]:
    text = (
        GB200
        + _notebook("notebook-a", "gpu-0-mig-3g-0", "2026-10-01T08:00:00Z")
        + _notebook("notebook-b", "gpu-0-mig-3g-1", "2026-10-01T09:00:00Z")
        + FINETUNE
    )
    return [decode(doc) for doc in yaml.safe_load_all(text) if doc]


def test_gb200_mig_partitions_are_not_freed_by_preemption_in_1_37() -> None:
    """Both 3g.93gb MIG partitions of a GB200 GPU are held by notebooks of priority 10. A
    fine-tune of priority 1000 cannot preempt them: kube-scheduler 1.37's DynamicResources
    has no PreFilter extensions, so removing the notebooks in the dry run leaves their
    partitions allocated and the node still fails with "cannot allocate all claims"."""
    state, res = run(_gb200())
    ft = res["finetune"]
    assert not ft.nominated and ft.reason is not None
    assert ft.reason.message == (
        "0/1 nodes are available: 1 cannot allocate all claims. still not schedulable, "
        "preemption: 0/1 nodes are available: 1 cannot allocate all claims."
    )
    assert ("default", "notebook-a") in state.pods and ("default", "notebook-b") in state.pods


def test_gb200_mig_partition_freed_by_a_victim_with_draplan_device_preemption() -> None:
    """draplan's own option (KEP-5690's DRA preemption, not yet kube-scheduler's): a claim
    only the victim reserves is released in the dry run. One notebook goes, the later
    started; its partition (and the counters it consumed) is free for the fine-tune."""
    state, res = run(_gb200(), free_devices=True)
    ft = res["finetune"]
    assert ft.nominated == "gb200-0"
    assert [p.metadata.name for p in ft.victims] == ["notebook-b"]
    assert ("default", "notebook-b-mig") in state.claims  # a named claim stays, released
    assert state.claims[("default", "notebook-b-mig")].status.allocation is None
    assert [d[2] for d in state.exclusive] == ["gpu-0-mig-3g-0"]


def test_the_postfix_of_failed_scheduling_in_kube_schedulers_words() -> None:
    """Six nodes: two full of pods at the pod's own priority (no victims: equal priority is
    not lower), four tainted (preemption cannot help). The message is kube-scheduler's:
    DynamicResources' PostFilter, then DefaultPreemption's own FitError, histogram sorted."""
    nodes = [gaudi_node(f"gaudi-{i}", cards=2) for i in range(2)] + [
        MakeNode().name(f"infra-{i}").taint("dedicated", "infra").obj() for i in range(4)
    ]
    pods = [running(f"peer-{i}", f"gaudi-{i}", 2, 100, "2026-10-01T08:00:00Z") for i in range(2)]
    job = MakePod().name("job").req(**{GAUDI: 2}).priority(100).obj()
    _, res = run([*nodes, *pods, job])
    reason = res["job"].reason
    assert reason is not None
    assert reason.post_filter == (
        "no new claims to deallocate, preemption: 0/6 nodes are available: "
        "2 No preemption victims found for incoming pod, "
        "4 Preemption is not helpful for scheduling."
    )
    assert reason.message.startswith("0/6 nodes are available: 2 Insufficient habana.ai/gaudi, ")
    assert reason.message.endswith(". " + reason.post_filter)


def test_a_prefilter_failure_leaves_preemption_nothing_to_try() -> None:
    """A claim of a DeviceClass no cluster has fails PreFilter: every node is absent from
    the dry run, Preemption is not helpful for any of them. DynamicResources' PreFilter
    stopped before it recorded the pod's claims, so its PostFilter finds none."""
    objs = [decode(d) for d in yaml.safe_load_all(GB200) if d][1:]  # no DeviceClass
    pod = yaml.safe_load(FINETUNE.split("---")[2])
    tmpl = yaml.safe_load(FINETUNE.split("---")[1])
    _, res = run([*objs, decode(tmpl), decode(pod)])
    reason = res["finetune"].reason
    assert reason is not None
    assert reason.message == (
        "0/1 nodes are available: request mig: device class mig.nvidia.com does not exist. "
        "no new claims to deallocate, preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling."
    )


def test_schedule_shows_the_nomination_and_the_victims(run_cli: Any, tmp_path: Path) -> None:
    """`schedule`: the preemptor is Nominated (not bound: it binds in a later attempt), its
    victims are Preempted; -o wide names the nominated node; -o json carries both; -o yaml
    writes the preemptor with status.nominatedNodeName and no Binding for it."""
    from draplan.api.codec import encode

    objs = [
        gaudi_node("gaudi-0"),
        running("low-a", "gaudi-0", 4, 10, "2026-10-01T10:00:00Z"),
        running("low-b", "gaudi-0", 4, 10, "2026-10-01T11:00:00Z"),
        MakePod().name("train").req(cpu="8", **{GAUDI: 4}).priority(1000).obj(),
    ]
    path = tmp_path / "gaudi.yaml"
    path.write_text(yaml.safe_dump_all([encode(o) for o in objs]))
    table = run_cli("schedule", "-f", str(path))
    assert table.code == 0, table.err
    lines = table.out.splitlines()
    assert lines[0] == "0 scheduled, 1 unschedulable (1 nominated, 1 pod(s) preempted)"
    train = next(line.split() for line in lines if line.split()[1] == "train")
    assert train[2:4] == ["Nominated", "<none>"]
    assert "nominated to gaudi-0, preempting default/low-b;" in " ".join(train)
    low = next(line.split() for line in lines if line.split()[1] == "low-b")
    assert low[2:4] == ["Preempted", "gaudi-0"]
    wide = run_cli("schedule", "-f", str(path), "-o", "wide").out.splitlines()
    # draplan's own profile preempts the same pod for the same devices: DRAPLAN says "=".
    assert wide[1].split()[-4:] == ["NOMINATED", "NODE", "ALLOCATED", "DRAPLAN"]
    assert next(line for line in wide if " train " in line).split()[-3:] == [
        "gaudi-0",
        "<none>",
        "=",
    ]
    assert next(line for line in wide if " low-b " in line).split()[-3:] == ["<none>"] * 3
    doc = run_cli("schedule", "-f", str(path), "-o", "json").json()
    assert doc["summary"]["nominated"] == 1 and doc["summary"]["preempted"] == 1
    (pod,) = doc["pods"]
    assert pod["node"] is None and pod["nominatedNode"] == "gaudi-0"
    assert pod["victims"] == [{"namespace": "default", "name": "low-b", "node": "gaudi-0"}]
    out = run_cli("schedule", "-f", str(path), "-o", "yaml").out
    (written,) = [d for d in yaml.safe_load_all(out) if d]
    assert written["kind"] == "Pod" and written["metadata"]["name"] == "train"
    assert written["status"]["nominatedNodeName"] == "gaudi-0"
    assert "nodeName" not in written["spec"]
    bindings = run_cli("schedule", "-f", str(path), "-o", "yaml", "--manifests", "bindings")
    assert not [d for d in yaml.safe_load_all(bindings.out) if d]


def test_why_says_who_would_be_preempted(run_cli: Any, tmp_path: Path) -> None:
    """`why` judges the pods on kube-scheduler's pass, preemption included: the job that
    evicts a lower-priority pod is Schedulable, with the victims; the pod of lower priority
    queued after it finds the cards held for the nominated job."""
    from draplan.api.codec import encode

    objs = gaudi_queue()
    path = tmp_path / "gaudi.yaml"
    path.write_text(yaml.safe_dump_all([encode(o) for o in objs]))
    doc = run_cli("why", "-f", str(path), "-o", "json").json()
    by_pod = {d["pod"]: d for d in doc["pods"]} if "pods" in doc else None
    assert by_pod is not None, doc
    train = by_pod["default/train"]
    assert train["category"] == "Schedulable"
    assert train["message"].startswith(
        "It would preempt 1 pod(s) on gaudi-0 (priority 10 < 1000): default/low-a;"
    )
    assert train["evidence"]["victims"] == [
        {"pod": "default/low-a", "node": "gaudi-0", "priority": 10}
    ]
    assert by_pod["default/etl"]["category"] != "Schedulable"


def test_a_scheduler_profile_opts_into_freeing_devices(run_cli: Any, tmp_path: Path) -> None:
    """`--profile` with `spec.preemptionFreesDevices: true` (draplan's option, KEP-5690's
    behaviour): the GB200 fine-tune evicts a notebook through `schedule`."""
    from draplan.api.codec import encode

    path = tmp_path / "gb200.yaml"
    path.write_text(yaml.safe_dump_all([encode(o) for o in _gb200()]))
    profile = tmp_path / "profile.yaml"
    profile.write_text(
        "apiVersion: draplan.io/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: p}\n"
        "spec: {preemptionFreesDevices: true}\n"
    )
    faithful = run_cli("schedule", "-f", str(path), "-o", "json").json()
    assert faithful["summary"]["nominated"] == 0
    doc = run_cli("schedule", "-f", str(path), "--profile", str(profile), "-o", "json").json()
    (pod,) = doc["pods"]
    assert pod["nominatedNode"] == "gb200-0" and [v["name"] for v in pod["victims"]] == [
        "notebook-b"
    ]


def test_a_budget_without_status_is_counted_as_the_disruption_controller_would() -> None:
    """Four healthy replicas and one pending (five expected): minAvailable 3 allows one
    disruption; "60%" of five is 3, one allowed; maxUnavailable "25%" of five rounds up to 2,
    so 3 must stay, one allowed; a budget with neither is minAvailable 1, three allowed."""
    from draplan.scheduler.preemption_victims import disruptions_allowed

    pods = [MakePod().name(f"web-{i}").node("n0").label("app", "web").obj() for i in range(4)] + [
        MakePod().name("web-4").label("app", "web").obj()
    ]

    def allowed(**spec: Any) -> int:
        pdb = PodDisruptionBudget(
            metadata=ObjectMeta(name="web", namespace="default"),
            spec=PodDisruptionBudgetSpec(
                selector=LabelSelector(match_labels={"app": "web"}), **spec
            ),
        )
        return disruptions_allowed(pdb, pods)

    assert allowed(min_available=3) == 1
    assert allowed(min_available="60%") == 1
    assert allowed(max_unavailable="25%") == 1
    assert allowed() == 3
    assert allowed(min_available=5) == 0


def test_why_says_a_nominated_pod_waits_for_its_victims(run_cli: Any, tmp_path: Path) -> None:
    """A dump taken mid-preemption: the pod is nominated and its victim is terminating."""
    from draplan.api.codec import encode

    objs = [
        gaudi_node("gaudi-0", cards=4),
        MakePod().name("old").node("gaudi-0").req(**{GAUDI: 4}).priority(0).preempted().obj(),
        MakePod().name("train").req(**{GAUDI: 4}).priority(1000).nominated("gaudi-0").obj(),
    ]
    path = tmp_path / "mid.yaml"
    path.write_text(yaml.safe_dump_all([encode(o) for o in objs]))
    (train,) = run_cli("why", "-f", str(path), "-o", "json").json()["pods"]
    assert train["category"] == "Schedulable"
    assert train["message"] == (
        "It is nominated to gaudi-0, where 1 pod(s) it preempted are still terminating "
        "(default/old); it binds there once they are gone."
    )


def test_a_pod_failing_prefilter_again_after_a_node_joins() -> None:
    """A pod that fails PreFilter (its claim is missing) is judged twice, a node added in
    between: no node has a status, so nothing of the first dry run is kept for the second
    (the autoscaler's loop does this on every pass)."""
    objs = [
        gaudi_node("gaudi-0"),
        MakePod().name("train").claim("gpu", "missing").priority(1000).obj(),
    ]
    state = ClusterState.from_objects(objs)
    scheduler = Scheduler(build_profile(), post_filter=True)
    train = state.pods[("default", "train")]
    with state.forked():
        scheduler.schedule_pod(state, train)
    state.add_node(gaudi_node("gaudi-1"))
    with state.forked():
        got = scheduler.schedule_pod(state, train)
    assert got.reason is not None and got.reason.message.endswith(
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_a_pod_pinned_by_metadata_name_preempts_on_its_node() -> None:
    """A DaemonSet-style pod (required node affinity on metadata.name) narrows PreFilter to
    one node; preemption still runs there, and counts the nodes left out as unresolvable."""
    pin = NodeSelectorRequirement(key="metadata.name", operator="In", values=("gaudi-1",))
    objs: list[KubeStruct] = [
        gaudi_node("gaudi-0"),
        gaudi_node("gaudi-1"),
        gaudi_node("gaudi-2"),
        running("low", "gaudi-1", 8, 10, "2026-10-01T10:00:00Z"),
        MakePod()
        .name("agent")
        .req(cpu="1", **{GAUDI: 2})
        .priority(1000)
        .affinity_term(fields=[pin])
        .obj(),
        MakePod()
        .name("never")
        .req(cpu="1", **{GAUDI: 2})
        .priority(1000)
        .preemption_policy("Never")
        .affinity_term(fields=[pin])
        .obj(),
    ]
    _, results = run(objs[:-1])
    agent = results["agent"]
    assert agent.node is None and agent.nominated == "gaudi-1"
    assert [v.metadata.name for v in agent.victims] == ["low"]
    never = run([*objs[:4], objs[-1]])[1]["never"].reason
    assert never is not None
    assert never.message == (
        "0/3 nodes are available: 1 Insufficient habana.ai/gaudi, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
        + NO_CLAIMS
        + "not eligible due to preemptionPolicy=Never."
    )


def test_why_names_the_victims_when_nothing_else_takes_their_room(
    run_cli: Any, tmp_path: Path
) -> None:
    """With the victim gone the node fits the pod, yet it is nominated, not bound: `why` says
    who it preempts rather than "it fits now"."""
    from draplan.api.codec import encode

    objs = [
        gaudi_node("gaudi-0"),
        running("low", "gaudi-0", 8, 10, "2026-10-01T10:00:00Z"),
        MakePod().name("train").req(cpu="8", **{GAUDI: 4}).priority(1000).obj(),
    ]
    path = tmp_path / "gaudi.yaml"
    path.write_text(yaml.safe_dump_all([encode(o) for o in objs]))
    (train,) = run_cli("why", "-f", str(path), "-o", "json").json()["pods"]
    assert train["category"] == "Schedulable"
    assert train["message"].startswith("It would preempt 1 pod(s) on gaudi-0 (priority 10 < 1000)")
    assert train["evidence"]["nominatedNode"] == "gaudi-0"
