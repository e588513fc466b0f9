"""Read a live cluster: discover what is served, list it read-only, decode it like a file.

Objects come out exactly as `files.load_files` gives them (typed, validated, paired with
where they came from), older resource.k8s.io versions converted to v1, so every command works
the same on a cluster and on a snapshot of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from draplan.api.codec import decode
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct
from draplan.sources.files import gc_paused, stderr_notice
from draplan.sources.kubeclient import Access, Connection, Forbidden, PageCallback, connect
from draplan.sources.kubeconvert import GROUP as RESOURCE_GROUP
from draplan.sources.kubeconvert import VERSIONS as RESOURCE_VERSIONS
from draplan.sources.kubeconvert import to_v1
from draplan.sources.kuberedact import scrub
from draplan.sources.nodepools import NODE_POOLS_LABEL, expand_node_pools


@dataclass(frozen=True)
class Resource:
    """One kind draplan reads, and the versions it can read it from (preferred first)."""

    group: str
    kind: str
    plural: str
    versions: tuple[str, ...]
    namespaced: bool = False
    # Read in every namespace even with -n: allocations occupy devices cluster-wide.
    cluster_wide: bool = False
    field_selector: str = ""
    label_selector: str = ""
    # Read when allowed: a refused list is a notice, not a failure.
    optional: bool = False
    # Read where served: an alpha kind, or another autoscaler's, that most clusters lack is no
    # notice when absent.
    when_served: bool = False


RESOURCES: tuple[Resource, ...] = (
    Resource(RESOURCE_GROUP, "DeviceClass", "deviceclasses", RESOURCE_VERSIONS),
    Resource(RESOURCE_GROUP, "ResourceSlice", "resourceslices", RESOURCE_VERSIONS),
    Resource(
        RESOURCE_GROUP,
        "ResourceClaim",
        "resourceclaims",
        RESOURCE_VERSIONS,
        namespaced=True,
        cluster_wide=True,
    ),
    Resource(
        RESOURCE_GROUP,
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        RESOURCE_VERSIONS,
        namespaced=True,
    ),
    # GA in 1.37 (KEP-5055); older clusters' alpha and beta shapes are not read.
    Resource(RESOURCE_GROUP, "DeviceTaintRule", "devicetaintrules", ("v1",)),
    # KEP-5677 (alpha, DRAResourcePoolStatus): the controller's answers, for `metrics` to
    # compare with draplan's own pool counts.
    Resource(
        RESOURCE_GROUP,
        "ResourcePoolStatusRequest",
        "resourcepoolstatusrequests",
        ("v1alpha3",),
        optional=True,
        when_served=True,
    ),
    Resource("", "Node", "nodes", ("v1",)),
    # Finished pods hold nothing; leaving them out is most of a big cluster's pod list.
    Resource(
        "",
        "Pod",
        "pods",
        ("v1",),
        namespaced=True,
        field_selector="status.phase!=Succeeded,status.phase!=Failed",
    ),
    Resource("", "PodTemplate", "podtemplates", ("v1",), namespaced=True),
    # Pod affinity's namespace selectors read namespaces' labels; PodTopologySpread's default
    # constraints, the selectors of the Services and controllers that select a pod.
    Resource("", "Namespace", "namespaces", ("v1",), optional=True),
    Resource("", "Service", "services", ("v1",), namespaced=True, optional=True),
    Resource(
        "",
        "ReplicationController",
        "replicationcontrollers",
        ("v1",),
        namespaced=True,
        optional=True,
    ),
    Resource(
        "apps",
        "ReplicaSet",
        "replicasets",
        ("v1",),
        namespaced=True,
        optional=True,
        when_served=True,
    ),
    Resource(
        "apps",
        "StatefulSet",
        "statefulsets",
        ("v1",),
        namespaced=True,
        optional=True,
        when_served=True,
    ),
    Resource("scheduling.k8s.io", "PriorityClass", "priorityclasses", ("v1",)),
    Resource("policy", "PodDisruptionBudget", "poddisruptionbudgets", ("v1",), namespaced=True),
    Resource(
        "scheduling.k8s.io",
        "Workload",
        "workloads",
        ("v1beta1", "v1alpha3", "v1alpha2", "v1alpha1"),
        namespaced=True,
    ),
    Resource(
        "scheduling.k8s.io",
        "PodGroup",
        "podgroups",
        ("v1beta1", "v1alpha3", "v1alpha2"),
        namespaced=True,
    ),
    Resource("scheduling.x-k8s.io", "PodGroup", "podgroups", ("v1alpha1",), namespaced=True),
    Resource(
        "autoscaling.x-k8s.io",
        "ProvisioningRequest",
        "provisioningrequests",
        ("v1",),
        namespaced=True,
    ),
    # Kueue's admission state, for pods it holds back with its scheduling gate.
    Resource(
        "kueue.x-k8s.io",
        "Workload",
        "workloads",
        ("v1beta2", "v1beta1"),
        namespaced=True,
        optional=True,
    ),
    # Node groups to derive pools from when no NodePool is given (autoscaler.derived):
    # Karpenter's NodePools and Cluster Autoscaler's clusterapi node groups.
    Resource("karpenter.sh", "NodePool", "nodepools", ("v1",), optional=True, when_served=True),
    Resource(
        "cluster.x-k8s.io",
        "MachineDeployment",
        "machinedeployments",
        ("v1beta2", "v1beta1"),
        namespaced=True,
        optional=True,
        when_served=True,
    ),
    Resource(
        "cluster.x-k8s.io",
        "MachinePool",
        "machinepools",
        ("v1beta2", "v1beta1"),
        namespaced=True,
        optional=True,
        when_served=True,
    ),
    # NodePools are no API kind: they live in labelled ConfigMaps (see sources.nodepools).
    Resource(
        "",
        "ConfigMap",
        "configmaps",
        ("v1",),
        namespaced=True,
        label_selector=f"{NODE_POOLS_LABEL}=true",
        optional=True,
    ),
)


@dataclass(frozen=True)
class LiveOptions:
    """Where and what to read; `namespace=None` reads all namespaces."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    page_size: int = 500
    progress: bool | None = None  # None: only when stderr is a terminal
    timeout: float = 60.0


@dataclass
class LiveRead:
    """What was read, and how."""

    objects: list[tuple[KubeStruct, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)  # group -> first version read
    requests: int = 0
    seconds: float = 0.0


class _Discovery:
    """Which versions and resources the server serves, one request per group and version."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._groups: dict[str, list[str] | None] = {"": ["v1"]}
        self._resources: dict[str, set[str] | None] = {}

    def versions(self, group: str) -> list[str] | None:
        if group not in self._groups:
            path = f"/apis/{group}"
            doc = self._conn.get_json(path, Access("get", url=path))
            versions = doc.get("versions") if isinstance(doc, dict) else None
            self._groups[group] = (
                [str(v.get("version")) for v in versions if isinstance(v, dict)]
                if isinstance(versions, list)
                else None
            )
        return self._groups[group]

    def resources(self, group: str, version: str) -> set[str]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        if path not in self._resources:
            doc = self._conn.get_json(path, Access("get", url=path))
            entries = doc.get("resources") if isinstance(doc, dict) else None
            self._resources[path] = {
                str(r.get("name"))
                for r in entries or ()
                if isinstance(r, dict) and "list" in (r.get("verbs") or ["list"])
            }
        return self._resources[path] or set()

    def pick(self, res: Resource) -> str | None:
        """The first version of `res` draplan reads that the server serves, if any."""
        if not res.group:
            return res.versions[0]  # the core API is always there
        served = self.versions(res.group) or []
        for version in res.versions:
            if version in served and res.plural in self.resources(res.group, version):
                return version
        return None


class _Bar:
    """A progress bar on stderr, started only once a list turns out to span several pages."""

    def __init__(self, enabled: bool | None, page_size: int) -> None:
        console = Console(stderr=True)
        self._enabled = console.is_terminal if enabled is None else enabled
        self._console = console
        self._page_size = page_size
        self._progress: Progress | None = None

    def tracker(self, label: str) -> PageCallback | None:
        if not self._enabled:
            return None
        task: list[Any] = []

        def on_page(done: int, total: int | None) -> None:
            if not task and (total or 0) <= done and done < self._page_size:
                return  # one page: nothing worth a bar
            if self._progress is None:
                self._progress = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    console=self._console,
                    transient=True,
                )
                self._progress.start()
            if not task:
                task.append(self._progress.add_task(label, total=total))
            self._progress.update(task[0], completed=done, total=total)

        return on_page

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()


@contextmanager
def _bar(enabled: bool | None, page_size: int) -> Iterator[_Bar]:
    bar = _Bar(enabled, page_size)
    try:
        yield bar
    finally:
        bar.stop()


def list_path(res: Resource, version: str, namespace: str | None) -> str:
    base = f"/apis/{res.group}/{version}" if res.group else f"/api/{version}"
    if namespace:
        return f"{base}/namespaces/{namespace}/{res.plural}"
    return f"{base}/{res.plural}"


def _plural(kind: str) -> str:
    return kind + ("es" if kind.endswith("s") else "s")


def _group_notices(missing: dict[str, list[str]], disc: _Discovery) -> list[str]:
    notes = []
    for group, kinds in missing.items():
        names = ", ".join(_plural(k) for k in kinds)
        if disc.versions(group) is None:
            notes.append(f"API group {group} is not served: no {names} read")
        else:
            notes.append(f"{group} serves no version draplan reads for {names}: none read")
    return notes


def _read_one(
    conn: Connection,
    res: Resource,
    version: str,
    options: LiveOptions,
    on_page: PageCallback | None,
) -> list[tuple[KubeStruct, str]] | None:
    namespace = None if res.cluster_wide or not res.namespaced else options.namespace
    path = list_path(res, version, namespace)
    access = Access("list", res.plural, res.group, namespace or "", namespaced=res.namespaced)
    params = {}
    if res.field_selector:
        params["fieldSelector"] = res.field_selector
    if res.label_selector:
        params["labelSelector"] = res.label_selector
    items = conn.list_items(
        path, access, params or None, page_size=options.page_size, on_page=on_page
    )
    if items is None:
        return None
    source = f"{conn.server}{path}"
    return [(decode_item(item, res, version, source), source) for item in items]


def decode_item(item: Any, res: Resource, version: str, source: str) -> KubeStruct:
    """One item of a list (or a watch event's object) of `res` served as `version`, typed and
    in the version draplan reads; BadInput when it is not a valid object."""
    if not isinstance(item, dict):
        raise BadInput("a list item is not an object", source=source)
    # List items carry no apiVersion and kind of their own.
    item["apiVersion"] = f"{res.group}/{version}" if res.group else version
    item["kind"] = res.kind
    scrub(item)
    if res.group == RESOURCE_GROUP and version in RESOURCE_VERSIONS:
        item = to_v1(item, version)
    return decode(item, source=source)


def read_cluster(
    options: LiveOptions, notify: Callable[[str], None] | None = stderr_notice
) -> LiveRead:
    """Everything draplan reads from the cluster `options` points at; notices go to `notify`."""
    start = time.perf_counter()
    result = LiveRead()
    with connect(options.kubeconfig, options.context, timeout=options.timeout) as conn:
        disc = _Discovery(conn)
        missing: dict[str, list[str]] = {}
        plan: list[tuple[Resource, str]] = []
        for res in RESOURCES:
            version = disc.pick(res)
            if version is None:
                if not res.when_served:
                    missing.setdefault(res.group, []).append(res.kind)
            else:
                plan.append((res, version))
                result.versions.setdefault(res.group, version)
        result.notices.extend(_group_notices(missing, disc))
        old = result.versions.get(RESOURCE_GROUP, "v1")
        if old != "v1":
            result.notices.append(
                f"{RESOURCE_GROUP} is served as {old}, not v1: its objects were converted to v1"
            )
        with gc_paused(), _bar(options.progress, options.page_size) as bar:
            for res, version in plan:
                try:
                    read = _read_one(conn, res, version, options, bar.tracker(_plural(res.kind)))
                except Forbidden as err:
                    if not res.optional:
                        raise
                    result.notices.append(f"{res.plural} not read: {err.message}")
                    continue
                if read is None:  # listed in discovery, gone by now
                    result.notices.append(f"{res.group}/{version} {res.plural}: not found")
                    continue
                result.objects.extend(read)
                key = f"{res.kind} ({res.group}/{version})" if res.group else res.kind
                result.counts[key] = result.counts.get(key, 0) + len(read)
        result.requests = conn.requests
    result.objects = expand_node_pools(result.objects)
    result.seconds = time.perf_counter() - start
    if notify is not None:
        for note in result.notices:
            notify(note)
    return result
