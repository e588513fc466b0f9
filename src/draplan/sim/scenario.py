"""A simulation input: the cluster objects, a Scenario (workload and settings: the synthetic
mix, jobs as YAML, an openb trace replay), and the jobs it stands for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from draplan.api.codec import decode, to_builtins
from draplan.api.core_v1 import Pod
from draplan.api.draplan_v1alpha1 import Scenario, ScenarioJob, SyntheticWorkload
from draplan.api.errors import BadInput
from draplan.api.features import DEFAULT as DEFAULT_FEATURES
from draplan.api.features import FeatureGates
from draplan.api.meta import KubeStruct
from draplan.cluster.state import admit, key_of
from draplan.sim.replay import load_replay
from draplan.sim.workloads import Job, Mix, synthetic


@dataclass(frozen=True)
class SimInput:
    name: str
    cluster: list[KubeStruct]
    jobs: list[Job]
    scenario: Scenario
    horizon: float | None = None  # the workload's own end (a replayed window), if it has one
    source: str = ""  # the Scenario's file
    features: FeatureGates = DEFAULT_FEATURES  # the simulated cluster's release and gates
    prices: Mapping[str, str] | None = None  # `--prices`, for pools derived from node groups


def _mix(w: SyntheticWorkload) -> Mix:
    return Mix(
        jobs=w.jobs,
        arrivals_per_hour=w.arrivals_per_hour,
        training=w.training,
        finetune=w.finetune,
        inference=w.inference,
        time_compression=w.time_compression,
        namespace=w.namespace,
        gpu_class=w.gpu_class,
        gpu_driver=w.gpu_driver,
        gpu_model=w.gpu_model,
        mig_class=w.mig_class,
        mig_profile=w.mig_profile,
        nic_class=w.nic_class,
        topology_key=w.topology_key,
        tolerations=tuple(to_builtins(t) for t in w.tolerations),
    )


def _yaml_job(job: ScenarioJob, index: int, source: str) -> Job:
    objects = []
    for k, doc in enumerate(job.objects):
        try:
            objects.append(decode(doc, source=source))
        except BadInput as err:
            raise err.located(
                kind="Scenario", path_prefix=f"spec.workload.jobs[{index}].objects[{k}]"
            ) from None
    pods = tuple(key_of(o) for o in objects if isinstance(o, Pod))
    if not pods:
        raise BadInput(
            "a job needs at least one Pod",
            source=source,
            kind="Scenario",
            path=f"spec.workload.jobs[{index}].objects",
        )
    return Job(
        job.name,
        job.workload_class,
        job.arrival_seconds,
        job.duration_seconds,
        tuple(objects),
        pods,
        0,
    )


def build_input(
    objects: list[tuple[KubeStruct, str]], features: FeatureGates = DEFAULT_FEATURES
) -> SimInput:
    """Split the loaded objects into the cluster and one Scenario, and make its jobs, for a
    cluster of `features`."""
    scenarios = [(o, src) for o, src in objects if isinstance(o, Scenario)]
    if len(scenarios) != 1:
        raise BadInput(f"expected exactly one draplan.io/v1alpha1 Scenario, found {len(scenarios)}")
    scenario, source = scenarios[0]
    assert isinstance(scenario, Scenario)
    # Duplicates (a job's objects too), CEL and gated fields, each named with its file.
    admit(objects, features)
    cluster = [o for o, _ in objects if not isinstance(o, Scenario)]
    workload = scenario.spec.workload
    jobs: list[Job] = []
    if workload.synthetic is not None:
        jobs.extend(synthetic(_mix(workload.synthetic), scenario.spec.seed))
    jobs.extend(_yaml_job(j, i, source) for i, j in enumerate(workload.jobs))
    horizon = None
    if workload.openb is not None:
        replay = load_replay(workload.openb, source)
        cluster.extend(replay.cluster)
        jobs.extend(replay.jobs)
        horizon = replay.horizon
    if not jobs:
        raise BadInput(
            "the workload is empty",
            source=source,
            kind="Scenario",
            name=scenario.metadata.name,
            path="spec.workload",
        )
    jobs.sort(key=lambda j: (j.arrival, j.name))
    name = scenario.metadata.name or "scenario"
    return SimInput(name, cluster, jobs, scenario, horizon, source, features)
