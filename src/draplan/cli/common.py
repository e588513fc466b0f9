"""Options and input loading shared by every command.

`filename_option()` gives a command `-f` and, with it, the live-cluster options (`--kubeconfig`,
`--context`, `-n`, `-A`). Those are not passed to the command function: they are kept in the
click context, where `load_input` / `load_state` find them, so a command only ever handles
`filenames`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from draplan.api.core_v1 import Pod
from draplan.api.errors import quote
from draplan.api.features import DEFAULT_VERSION, VERSIONS, FeatureGates, feature_gates
from draplan.api.meta import KubeStruct
from draplan.cli.output import OutputFormat, remember_format, remember_no_headers
from draplan.cluster.labelselector import parse_selector
from draplan.cluster.state import ClusterState
from draplan.sources import gc_paused, load_objects

if TYPE_CHECKING:
    # The HTTP client costs ~0.4 s to import: only commands that read a cluster pay for it.
    from draplan.sources.live import LiveOptions

F = TypeVar("F", bound=Callable[..., Any])

_META_KEY = "draplan.input"


@dataclass
class InputSettings:
    """Where a command's input comes from, as given on the command line."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    all_namespaces: bool = False
    selector: str = ""
    kubernetes_version: str = DEFAULT_VERSION
    feature_gates: str = ""
    required: bool = True
    # The scheduler modelled (cli.profiles).
    profile: str | None = None
    scheduler_config: str | None = None
    dra_allocation_timeout: str | None = None

    @property
    def live_requested(self) -> bool:
        return bool(self.kubeconfig or self.context)

    def features(self) -> FeatureGates:
        """The modelled cluster's feature gates (BadInput naming the flag if wrong)."""
        return feature_gates(self.kubernetes_version, self.feature_gates)

    def live_options(self) -> LiveOptions:
        from draplan.sources.live import LiveOptions

        namespace = None if self.all_namespaces else self.namespace
        return LiveOptions(kubeconfig=self.kubeconfig, context=self.context, namespace=namespace)


def shown_pods(state: ClusterState) -> Callable[[tuple[str, str]], bool]:
    """Whether a command shows the pod (namespace, name): `-n` without `-A`, and `-l`. Only
    output is filtered: pods not shown still hold capacity and queue ahead, so a pod's verdict
    is the same whatever is shown."""
    settings = input_settings()
    namespace = None if settings.all_namespaces else settings.namespace
    selects = parse_selector(settings.selector) if settings.selector else None

    def shown(key: tuple[str, str]) -> bool:
        if namespace is not None and key[0] != namespace:
            return False
        pod = state.pods.get(key)
        return selects is None or (pod is not None and selects(pod.metadata.labels))

    return shown


def input_settings() -> InputSettings:
    """The current command's input settings (defaults outside a command)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return InputSettings(required=False)  # library use: never a cluster unasked
    settings = ctx.meta.setdefault(_META_KEY, InputSettings())
    assert isinstance(settings, InputSettings)
    return settings


def remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """An option's callback keeping its value in the command's InputSettings."""
    setattr(input_settings(), str(param.name), value)
    return value


def _live_options() -> list[Callable[[F], F]]:
    common: dict[str, Any] = {"expose_value": False, "callback": remember}
    return [
        click.option(
            "--kubeconfig",
            metavar="PATH",
            help="Read the cluster this kubeconfig points at (default: $KUBECONFIG, "
            "~/.kube/config, in-cluster).",
            **common,
        ),
        click.option("--context", metavar="NAME", help="The kubeconfig context to use.", **common),
        click.option(
            "-n",
            "--namespace",
            metavar="NAME",
            help="Show the pods of one namespace. From a cluster, read namespaced objects of "
            "that namespace only (ResourceClaims are always read in all: their allocations "
            "occupy devices cluster-wide); from files, everything is still read.",
            **common,
        ),
        click.option(
            "-A",
            "--all-namespaces",
            is_flag=True,
            help="Read every namespace (the default; overrides -n).",
            **common,
        ),
        click.option(
            "-l",
            "--selector",
            metavar="SELECTOR",
            default="",
            help="Only the pending pods with these labels (kubectl's syntax: k=v, k!=v, "
            "k in (a,b), k notin (a), k, !k): why and schedule show only them (the others "
            "still queue ahead); other commands read only them. Running pods always count.",
            **common,
        ),
        click.option(
            "--kubernetes-version",
            type=click.Choice(VERSIONS),
            default=DEFAULT_VERSION,
            show_default=True,
            help="The Kubernetes release modelled: its feature gates' defaults.",
            **common,
        ),
        click.option(
            "--feature-gates",
            metavar="NAME=BOOL,...",
            default="",
            help="Feature gates as kube-scheduler takes them, e.g. DRADeviceTaintRules=false "
            "(the README lists those that change draplan's answers).",
            **common,
        ),
    ]


def filename_option(required: bool = True) -> Callable[[F], F]:
    """`-f` plus the live-cluster options. With `required`, a command given neither `-f` nor
    `--kubeconfig` / `--context` reads the default cluster, as kubectl does."""

    def remember_required(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        input_settings().required = required
        return value

    def decorate(func: F) -> F:
        for option in reversed(_live_options()):
            func = option(func)
        return click.option(
            "-f",
            "--filename",
            "filenames",
            multiple=True,
            callback=remember_required,
            help="File, directory or - for stdin (repeatable); with --kubeconfig, added to "
            "what the cluster holds.",
        )(func)

    return decorate


def output_option(func: F) -> F:
    """`-o` and `--no-headers` as kubectl spells them: table|wide|json|yaml|name,
    jsonpath=TEMPLATE, custom-columns=SPEC (see `draplan.cli.output`)."""
    func = click.option(
        "--no-headers",
        is_flag=True,
        expose_value=False,
        callback=remember_no_headers,
        help="Print tables without their title and header row; every column stays.",
    )(func)
    return click.option(
        "-o",
        "--output",
        type=OutputFormat(),
        default="table",
        show_default=True,
        callback=remember_format,
        help="table (long cells cut with …), wide (every column, whole), json, yaml, name, "
        "jsonpath=TEMPLATE or custom-columns=HEADER:JSONPATH,… as kubectl reads them.",
    )(func)


def load_input(
    filenames: tuple[str, ...], *, live: LiveOptions | None = None, select: bool = True
) -> list[tuple[KubeStruct, str]]:
    """Objects from the files, then from the cluster when one is asked for (or when a command
    that needs input got no file)."""
    settings = input_settings()
    objects = load_objects(list(filenames)) if filenames else []
    if live is None and (settings.live_requested or (settings.required and not filenames)):
        live = settings.live_options()
    if live is not None:
        from draplan.sources.live import read_cluster

        objects.extend(read_cluster(live).objects)
    if select and settings.selector:
        selects = parse_selector(settings.selector)
        objects = [
            (o, src)
            for o, src in objects
            if not isinstance(o, Pod) or o.spec.node_name or selects(o.metadata.labels)
        ]
    return objects


def date_option(func: F) -> F:
    """`--date`: what the report states as its date (see `draplan.report.info`)."""
    return click.option(
        "--date",
        metavar="YYYY-MM-DD",
        help="The date the report states (default: $SOURCE_DATE_EPOCH, else today in UTC).",
    )(func)


def prices_option(func: F) -> F:
    """`--prices FILE`: prices of the pools derived when no NodePool is given."""
    return click.option(
        "--prices",
        "prices_path",
        metavar="FILE",
        help="Dollars per node-hour by pool name or instance type (YAML mapping or CSV "
        "name,price), for pools derived from the cluster's node groups when no NodePool is given.",
    )(func)


def with_derived_pools(
    state: ClusterState, prices_path: str | None, kube: bool = True
) -> ClusterState:
    """`state` with pools derived from its node groups when the input has no NodePool
    (`autoscaler.derived`; `kube`: the command models a kube-scheduler profile, not
    draplan's); groups that give no pool are notices on stderr."""
    from draplan.api.draplan_v1alpha1 import PRICE_LABEL
    from draplan.autoscaler.derived import derive_pools
    from draplan.sources.files import stderr_notice
    from draplan.sources.prices import load_prices

    prices = load_prices(prices_path) if prices_path else None
    if state.node_pools:
        return state
    derived = derive_pools(state, prices, kube=kube)
    state.node_pools.update(derived.pools)
    for note in derived.skipped:
        stderr_notice(f"no pool derived from {note}")
    if derived.unpriced:
        # Costs of $0/h would make least-cost choices and savings silently wrong: say so.
        stderr_notice(
            f"no price for pool(s) {', '.join(sorted(derived.unpriced))}: their nodes count "
            f"as $0/h (give --prices, or label their nodes {PRICE_LABEL})"
        )
    return state


def load_state(
    filenames: tuple[str, ...], *, live: LiveOptions | None = None, select: bool = True
) -> ClusterState:
    """The cluster snapshot described by the input files and/or the live cluster; `select`
    False keeps the pending pods `-l` does not select (a command filtering by `shown_pods`)."""
    settings = input_settings()
    features = settings.features()  # a bad flag is reported before any reading
    objects = load_input(filenames, live=live, select=select)
    with gc_paused():  # the indexes of a 100 MB dump are a bulk load too
        state = ClusterState.from_objects(objects, features)
    if state.taint_rules and "DRADeviceTaintRules" not in features:
        from draplan.sources.files import stderr_notice

        first, more = min(state.taint_rules), len(state.taint_rules) - 1
        why = (
            "--feature-gates"
            if "DRADeviceTaintRules" in settings.feature_gates
            else f"Kubernetes {settings.kubernetes_version}'s default"
        )
        stderr_notice(
            f"DeviceTaintRule {quote(first)}{f' and {more} more' if more else ''} ignored: "
            f"the DRADeviceTaintRules feature gate is off ({why})"
        )
    return state
