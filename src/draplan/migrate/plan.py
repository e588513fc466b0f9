"""Plan a migration: every pod site planned first (bad input stops it before any output),
then each file's text rewritten."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from draplan.api.codec import KINDS, decode
from draplan.api.core_v1 import Node, Pod
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct
from draplan.api.resource_v1 import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draplan.cluster.podresources import is_terminal
from draplan.migrate.check import CheckRow, CheckStep
from draplan.migrate.edits import Edit, Path, get
from draplan.migrate.inputs import SourceFile, objects_of, read_files
from draplan.migrate.mapping import Mapping, load_mapping
from draplan.migrate.needs import Need, pod_needs
from draplan.migrate.render import FileResult, render_files
from draplan.migrate.rewrite import claim_name, pod_edits
from draplan.migrate.shapes import MAX_DEVICES_PER_CLAIM, ClaimShape, RequestShape, request_shapes
from draplan.migrate.sites import PodSite, dotted, pod_sites
from draplan.migrate.templates import TemplateResult, Templates
from draplan.migrate.topology import Decision, Topology, pod_node_filter

TOPOLOGY_MODES = ("auto", "none")
# Kinds read as the cluster's state.
_CLUSTER_KINDS = {"Node", "ResourceSlice", "DeviceClass", "ResourceClaimTemplate"}


@dataclass
class SiteResult:
    """One pod spec that asked for device-plugin resources, and what it became."""

    source: str
    kind: str
    namespace: str
    name: str
    site: PodSite
    needs: tuple[Need, ...]
    shape: ClaimShape | None  # None when only zero counts were removed
    template: str
    decision: Decision
    notes: tuple[str, ...]
    location: tuple[int, int, Path]  # file, chunk, object path in the document
    edits: list[Edit] = field(default_factory=list)
    original: dict[str, Any] = field(default_factory=dict)
    migrated: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return site_label(self.kind, self.namespace, self.name, self.site)


def site_label(kind: str, namespace: str, name: str, site: PodSite) -> str:
    """`Kind ns/name`, with the template's path unless it is the usual `spec.template`."""
    ns = f"{namespace}/" if namespace else ""
    path = site.template
    where = f" {path}" if path not in ("", "spec.template") else ""
    return f"{kind} {ns}{name}{where}"


@dataclass(frozen=True)
class Recreated:
    """An object asking for device-plugin resources that is not rewritten: a running Pod (its
    spec cannot change) or an object a controller owns (the controller's template is what
    to migrate); it gets DRA claims when it is made again."""

    source: str
    kind: str
    namespace: str
    name: str
    needs: tuple[Need, ...]
    by: str  # "<Kind> <namespace>/<name>" of its controller; "" for a bare running Pod

    @property
    def label(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {ns}{self.name}"

    @property
    def how(self) -> str:
        if self.by:
            return f"recreate from its controller {self.by}"
        return "recreate it from its migrated manifest (a Pod's spec cannot change)"


@dataclass
class Migration:
    """Everything `draplan migrate` reports and prints."""

    files: list[FileResult]
    sites: list[SiteResult]
    templates: list[TemplateResult]
    cluster: list[tuple[KubeStruct, str]]
    recreated: list[Recreated] = field(default_factory=list)
    checks: list[CheckRow] = field(default_factory=list)
    # What runs now: bound Pods (but the ones being migrated) and ResourceClaims, so a check
    # judges the migrated pods against the capacity left, not against empty nodes.
    running: list[tuple[KubeStruct, str]] = field(default_factory=list)

    def pods(self) -> Iterator[tuple[SiteResult, Pod, Pod]]:
        """Each site as a typed Pod before and after, validated (for checks and tests)."""
        for site in self.sites:
            yield site, _as_pod(site, site.original), _as_pod(site, site.migrated)


def _as_pod(site: SiteResult, spec: dict[str, Any]) -> Pod:
    meta = {"name": site.name or "pod", **({"namespace": site.namespace} if site.namespace else {})}
    pod = decode({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    assert isinstance(pod, Pod)
    return pod


def migrate(
    paths: Sequence[str],
    *,
    mapping_file: str | None = None,
    topology: str = "auto",
    check: CheckStep | None = None,
    cluster: Sequence[tuple[KubeStruct, str]] = (),
) -> Migration:
    """Read, plan and rewrite; raises BadInput before producing anything. `cluster` adds
    objects read elsewhere (a live cluster) to the files' Nodes, slices and classes."""
    if topology not in TOPOLOGY_MODES:
        raise BadInput(f"unsupported value {topology!r}: auto or none", path="--topology")
    files = read_files(paths)
    kinds = ResourceSlice | Node | DeviceClass | ResourceClaimTemplate
    live = list(cluster)
    cluster = [*_cluster_objects(files), *((o, s) for o, s in live if isinstance(o, kinds))]
    classes = [o for o, _ in cluster if isinstance(o, DeviceClass)]
    mapping = load_mapping(mapping_file).with_classes(classes)
    topo = Topology(cluster) if topology == "auto" else None
    existing = [o for o, _ in cluster if isinstance(o, ResourceClaimTemplate)]
    planner = _Planner(mapping, topo, Templates(existing))
    for f, file in enumerate(files):
        for c, chunk in enumerate(file.chunks):
            for prefix, obj in objects_of(chunk.data):
                planner.plan_object(file.source, (f, c, prefix), obj)
    out = render_files(files, planner.sites, planner.templates.results)
    migration = Migration(out, planner.sites, planner.templates.results, cluster, planner.recreated)
    migration.running = _running(files, live, planner.sites)
    if check is not None:
        migration.checks = check(migration)
    return migration


def _cluster_objects(files: Sequence[SourceFile]) -> list[tuple[KubeStruct, str]]:
    out = []
    for file in files:
        for chunk in file.chunks:
            for _, obj in objects_of(chunk.data):
                kind, version = obj.get("kind"), obj.get("apiVersion")
                if kind in _CLUSTER_KINDS and (version, kind) in KINDS:
                    out.append((decode(obj, source=file.source), file.source))
    return out


def _running(
    files: Sequence[SourceFile],
    live: Sequence[tuple[KubeStruct, str]],
    sites: Sequence[SiteResult],
) -> list[tuple[KubeStruct, str]]:
    """Bound, unfinished Pods and every ResourceClaim of the files and the live cluster; Pods
    that are themselves migrated are left out (their check places them anew)."""
    migrated = {(s.namespace, s.name) for s in sites if s.kind == "Pod"}
    found = list(live)
    for file in files:
        for chunk in file.chunks:
            for _, obj in objects_of(chunk.data):
                kind, version = obj.get("kind"), obj.get("apiVersion")
                if kind in ("Pod", "ResourceClaim") and (version, kind) in KINDS:
                    found.append((decode(obj, source=file.source), file.source))
    out: list[tuple[KubeStruct, str]] = []
    for obj, source in found:
        if isinstance(obj, ResourceClaim):
            out.append((obj, source))
        elif isinstance(obj, Pod) and obj.spec.node_name and not is_terminal(obj):
            meta = obj.metadata
            if (meta.namespace, meta.name) not in migrated:
                out.append((obj, source))
    return out


class _Planner:
    def __init__(self, mapping: Mapping, topology: Topology | None, templates: Templates):
        self.mapping = mapping
        self.topology = topology
        self.templates = templates
        self.sites: list[SiteResult] = []
        self.recreated: list[Recreated] = []
        self._decisions: dict[tuple[object, ...], Decision] = {}

    def plan_object(
        self, source: str, location: tuple[int, int, Path], obj: dict[str, Any]
    ) -> None:
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        kind, name = str(obj.get("kind", "")), str(meta.get("name", ""))
        namespace = str(meta.get("namespace", "") or "")
        by = _controller(meta, namespace)
        if by or (kind == "Pod" and _stored_pod(obj, meta)):
            needs = tuple(
                need
                for site in pod_sites(obj)
                for need in _needs_of(get(obj, site.path), self.mapping, site)
            )
            if needs:
                self.recreated.append(Recreated(source, kind, namespace, name, needs, by))
            return
        for site in pod_sites(obj):
            try:
                result = self._plan_site(source, location, obj, site, kind, namespace, name)
            except BadInput as err:
                raise err.located(source=source, kind=kind, name=name) from None
            if result is not None:
                self.sites.append(result)

    def _plan_site(
        self,
        source: str,
        location: tuple[int, int, Path],
        obj: dict[str, Any],
        site: PodSite,
        kind: str,
        namespace: str,
        name: str,
    ) -> SiteResult | None:
        spec = get(obj, site.path)
        where = dotted(site.path)
        needs = pod_needs(spec, self.mapping, where)
        if not needs:
            return None
        requests = request_shapes(needs)
        total = sum(r.count for r in requests)
        if total > MAX_DEVICES_PER_CLAIM:
            raise BadInput(
                f"the pod asks for {total} devices; a ResourceClaim holds at most "
                f"{MAX_DEVICES_PER_CLAIM}",
                path=where,
            )
        shape: ClaimShape | None = None
        template = claim = ""
        if requests:
            decision = self._decide(spec, where, requests)
            shape = ClaimShape(requests, decision.attribute)
            label = site_label(kind, namespace, name, site)
            template = self.templates.assign(namespace, shape, label, location)
            claim = claim_name(spec, requests)
        else:
            decision = Decision(None, "only zero counts: removed")
        spec_path = (*location[2], *site.path)
        return SiteResult(
            source=source,
            kind=kind,
            namespace=namespace,
            name=name,
            site=site,
            needs=tuple(needs),
            shape=shape,
            template=template,
            decision=decision,
            notes=tuple(_notes(needs)),
            location=location,
            edits=pod_edits(spec_path, spec, needs, requests, claim, template),
        )

    def _decide(
        self, spec: dict[str, Any], where: str, requests: Sequence[RequestShape]
    ) -> Decision:
        if self.topology is None:
            return Decision(None, "--topology none")
        if self.topology.has_node_objects:
            node_filter, scope = pod_node_filter(spec, where)
            if node_filter is not None:
                return self.topology.decide(requests, node_filter, scope)
        key = tuple((r.device_class, r.selectors, r.count, r.topology) for r in requests)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decisions[key] = self.topology.decide(requests)
        return decision


def _controller(meta: dict[str, Any], namespace: str) -> str:
    """The object's controller as `Kind namespace/name`, "" if none owns it."""
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            ns = f"{namespace}/" if namespace else ""
            return f"{ref.get('kind', '')} {ns}{ref.get('name', '')}"
    return ""


def _stored_pod(obj: dict[str, Any], meta: dict[str, Any]) -> bool:
    """A Pod the API server holds (a dump's, not a manifest to create): server-set metadata,
    a status or a node. Its spec can no longer change."""
    spec = obj.get("spec")
    bound = isinstance(spec, dict) and bool(spec.get("nodeName"))
    stored = any(meta.get(k) for k in ("uid", "resourceVersion", "creationTimestamp"))
    return stored or bound or bool(obj.get("status"))


def _needs_of(spec: Any, mapping: Mapping, site: PodSite) -> list[Need]:
    """The device-plugin requests of an object not rewritten; what migration would refuse in
    it (requests and limits apart, a fraction) is left to the object that makes it again."""
    try:
        return pod_needs(spec, mapping, dotted(site.path))
    except BadInput:
        return []


def _notes(needs: Sequence[Need]) -> Iterator[str]:
    seen: set[str] = set()
    for note in _all_notes(needs):
        if note not in seen:
            seen.add(note)
            yield note


def _all_notes(needs: Sequence[Need]) -> Iterator[str]:
    for need in needs:
        if need.count == 0:
            yield f"{need.container}: {need.resource} 0 removed"
        elif need.field == "initContainers":
            yield (
                f"init container {need.container} gets devices of its own "
                "(the device plugin let app containers reuse them)"
            )
        if need.rule.origin != "built-in" and need.count:
            yield f"{need.resource} -> {need.rule.device_class} ({need.rule.origin})"
