"""Cluster Autoscaler's scale-down flags, spelled and defaulted as CA spells them
(`--skip-nodes-with-system-pods=false`, `--scale-down-unneeded-time=10m0s`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

import click

from draplan.api.duration import parse_duration
from draplan.api.errors import BadInput
from draplan.autoscaler.drain import DrainOptions
from draplan.autoscaler.scaledown import ScaleDownOptions

F = TypeVar("F", bound=Callable[..., Any])


class Duration(click.ParamType):  # type: ignore[type-arg]
    """A Go duration ("10m", "1h30m", "20m0s"), as CA's flags take it (time.ParseDuration:
    `api.duration`); negative ones are refused."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, timedelta):
            return value
        text = str(value)
        try:
            seconds = parse_duration(text)
        except BadInput as err:
            self.fail(f"{err.message}: not a duration like 10m or 1h30m", param, ctx)
        if seconds < 0:
            self.fail(f"{text!r} is negative", param, ctx)
        if seconds > 10 * 365 * 86_400:
            self.fail(f"{text!r} is longer than ten years", param, ctx)
        return timedelta(seconds=seconds)


_THRESHOLD = click.FloatRange(0, 1)
_FLAGS: list[tuple[str, Any, Any, str]] = [
    ("--scale-down-utilization-threshold", _THRESHOLD, 0.5, "Remove a node only below this."),
    ("--scale-down-gpu-utilization-threshold", _THRESHOLD, 0.5, "The same for nodes with GPUs."),
    ("--scale-down-unneeded-time", Duration(), "10m", "How long a node must be unneeded."),
    ("--scale-down-unready-time", Duration(), "20m", "How long an unready one must be."),
    ("--scale-down-unready-enabled", click.BOOL, True, "Remove unready nodes too."),
    ("--skip-nodes-with-system-pods", click.BOOL, True, "Keep nodes running kube-system pods "
     "without a PodDisruptionBudget."),
    ("--skip-nodes-with-local-storage", click.BOOL, True, "Keep nodes whose pods have "
     "hostPath or emptyDir volumes."),
    ("--skip-nodes-with-custom-controller-pods", click.BOOL, True, "Keep nodes whose pods "
     "have a controller other than ReplicationController, Job, ReplicaSet or StatefulSet."),
]  # fmt: skip


def scale_down_flags(func: F) -> F:
    """CA's scale-down flags, each with CA's default."""
    for flag, kind, default, text in reversed(_FLAGS):
        func = click.option(
            flag, type=kind, default=default, show_default=True, help=f"{text} (as CA's flag)"
        )(func)
    return func


def scale_down_options(values: dict[str, Any]) -> ScaleDownOptions:
    """The flags' values (popped from a command's keyword arguments) as ScaleDownOptions."""
    return ScaleDownOptions(
        utilization_threshold=values.pop("scale_down_utilization_threshold"),
        gpu_utilization_threshold=values.pop("scale_down_gpu_utilization_threshold"),
        unneeded_time=values.pop("scale_down_unneeded_time"),
        unready_time=values.pop("scale_down_unready_time"),
        unready_enabled=values.pop("scale_down_unready_enabled"),
        drain=DrainOptions(
            skip_nodes_with_system_pods=values.pop("skip_nodes_with_system_pods"),
            skip_nodes_with_local_storage=values.pop("skip_nodes_with_local_storage"),
            skip_nodes_with_custom_controller_pods=values.pop(
                "skip_nodes_with_custom_controller_pods"
            ),
        ),
    )
