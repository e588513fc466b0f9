"""Which scheduler a command models: `--profile`, `--scheduler-config`,
`--dra-allocation-timeout`.

By default kube-scheduler's default profile. `--scheduler-config` reads the cluster's own
KubeSchedulerConfiguration: a file (the configuration, or a ConfigMap holding one), or
`configmap/NAMESPACE/NAME` read from the cluster (the kubeconfig options of `-f`).
`--profile draplan` is draplan's own placement (bin-packing, topology-aware device choice);
`--profile FILE` a draplan.io/v1alpha1 SchedulerProfile, which changes draplan's placement as
before (a file named `draplan` is `./draplan`). Like `-f`'s companions, the options are kept in
the click context and read by `chosen_profile()`, so commands do not pass them around.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from draplan.api import kubescheduler_v1 as v1
from draplan.api.codec import decode
from draplan.api.draplan_v1alpha1 import SchedulerProfile
from draplan.api.duration import parse_duration
from draplan.api.errors import BadInput, quote
from draplan.cli.common import input_settings, remember
from draplan.scheduler import Profile
from draplan.scheduler.config import scheduler_config
from draplan.scheduler.profile import (
    DRAPLAN_PROFILE,
    draplan_profile,
    kube_profile,
)
from draplan.sources import read_documents
from draplan.sources.files import parse_text

F = TypeVar("F", bound=Callable[..., Any])
CONFIGMAP = "configmap/"


def profile_option(func: F) -> F:
    """`--profile`, `--scheduler-config` and `--dra-allocation-timeout` (read by
    `chosen_profile`)."""
    common: dict[str, Any] = {"expose_value": False, "callback": remember}
    func = click.option(
        "--scheduler-config",
        metavar="FILE|configmap/NS/NAME",
        help="The cluster's KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), in a "
        "file or a ConfigMap; pods are scheduled by the profile their schedulerName names.",
        **common,
    )(func)
    func = click.option(
        "--dra-allocation-timeout",
        metavar="DURATION",
        help="DynamicResources' filterTimeout: how long the device search may take per node "
        "before the node is 'timed out trying to allocate devices' (default 10s as "
        "kube-scheduler; 0: no limit).",
        **common,
    )(func)
    return click.option(
        "--profile",
        metavar="draplan|FILE",
        help="The scheduler to model instead of kube-scheduler's default profile: 'draplan' "
        "(bin-packing, topology-aware device choice) or a draplan.io/v1alpha1 "
        "SchedulerProfile file.",
        **common,
    )(func)


def load_scheduler_profile(path: str) -> SchedulerProfile:
    docs = list(read_documents([path]))
    if len(docs) != 1:
        raise BadInput("expected exactly one SchedulerProfile", source=path)
    profile = decode(docs[0].data, source=path)
    if not isinstance(profile, SchedulerProfile):
        raise BadInput(
            f"expected kind SchedulerProfile, got {quote(getattr(profile, 'kind', ''))}",
            source=path,
            path="kind",
        )
    return profile


def _config_documents(where: str) -> list[tuple[dict[str, Any], str]]:
    """(configuration, holder) candidates in a file or a live ConfigMap; holder names the
    ConfigMap and its data key ("ConfigMap/NAME/KEY"), "" for a configuration itself."""
    if where.startswith(CONFIGMAP):
        namespace, _, name = where.removeprefix(CONFIGMAP).partition("/")
        if not namespace or not name:
            raise BadInput(
                f"expected {CONFIGMAP}NAMESPACE/NAME, got {quote(where)}", path="--scheduler-config"
            )
        docs = [(_live_configmap(namespace, name), where)]
    else:
        docs = [(d.data, d.source) for d in read_documents([where])]
    out: list[tuple[dict[str, Any], str]] = []
    for doc, source in docs:
        if doc.get("kind") != "ConfigMap":
            out.append((doc, ""))
            continue
        meta = doc.get("metadata") or {}
        held = [
            (inner, f"ConfigMap/{meta.get('name', '')}/{key}")
            for key, text in sorted((doc.get("data") or {}).items())
            for inner in _parsed(text, source)
            if isinstance(inner, dict) and inner.get("kind") == v1.KIND
        ]
        out.extend(held)
    return out


def _parsed(text: object, source: str) -> list[Any]:
    if not isinstance(text, str):
        return []
    return [d.data for d in parse_text(text, source)]


def _live_configmap(namespace: str, name: str) -> dict[str, Any]:
    from draplan.sources.kubeclient import Access, connect

    settings = input_settings()
    with connect(settings.kubeconfig, settings.context) as conn:
        path = f"/api/v1/namespaces/{namespace}/configmaps/{name}"
        access = Access("get", "configmaps", "", namespace, True)
        doc = conn.get_json(path, access)
    if not isinstance(doc, dict):
        raise BadInput(
            f"no ConfigMap {quote(name)} in namespace {quote(namespace)}",
            path="--scheduler-config",
        )
    return doc


def chosen_profile() -> Profile:
    """The profile the command line asks for (kube-scheduler's default without options)."""
    settings = input_settings()
    timeout = None
    if settings.dra_allocation_timeout is not None:
        timeout = parse_duration(settings.dra_allocation_timeout, "--dra-allocation-timeout")
        if timeout < 0:
            raise BadInput("must be zero or positive", path="--dra-allocation-timeout")
    if settings.scheduler_config is not None:
        if settings.profile is not None:
            raise BadInput(
                "--profile and --scheduler-config exclude each other", path="--scheduler-config"
            )
        where = settings.scheduler_config
        found = _config_documents(where)
        if len(found) != 1:
            what = "no" if not found else "more than one"
            raise BadInput(f"{what} {v1.KIND} found", source=where)
        doc, holder = found[0]
        return scheduler_config(doc, where, holder).profile(filter_timeout=timeout)
    name = settings.profile
    if name is None:
        return kube_profile(filter_timeout=timeout)
    if name == DRAPLAN_PROFILE:
        return draplan_profile(filter_timeout=timeout)
    spec = load_scheduler_profile(name)
    try:
        return draplan_profile(spec, filter_timeout=timeout)
    except BadInput as err:
        raise err.located(source=name, kind="SchedulerProfile", name=spec.metadata.name) from None
