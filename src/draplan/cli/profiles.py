"""Which scheduler a command models: `--profile`, `--dra-allocation-timeout`.

By default kube-scheduler's default profile. `--profile draplan` is draplan's own placement
(bin-packing, topology-aware device choice); `--profile FILE` a draplan.io/v1alpha1
SchedulerProfile, which changes draplan's placement as before (a file named `draplan` is
`./draplan`). Like `-f`'s companions, the options are kept in the click context and read by
`chosen_profile()`, so commands do not pass them around.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from draplan.api.codec import decode
from draplan.api.draplan_v1alpha1 import SchedulerProfile
from draplan.api.duration import parse_duration
from draplan.api.errors import BadInput, quote
from draplan.cli.common import input_settings, remember
from draplan.scheduler import Profile
from draplan.scheduler.profile import (
    DRAPLAN_PROFILE,
    draplan_profile,
    kube_profile,
)
from draplan.sources import read_documents

F = TypeVar("F", bound=Callable[..., Any])


def profile_option(func: F) -> F:
    """`--profile` and `--dra-allocation-timeout` (read by `chosen_profile`)."""
    common: dict[str, Any] = {"expose_value": False, "callback": remember}
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


def chosen_profile() -> Profile:
    """The profile the command line asks for (kube-scheduler's default without options)."""
    settings = input_settings()
    timeout = None
    if settings.dra_allocation_timeout is not None:
        timeout = parse_duration(settings.dra_allocation_timeout, "--dra-allocation-timeout")
        if timeout < 0:
            raise BadInput("must be zero or positive", path="--dra-allocation-timeout")
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
