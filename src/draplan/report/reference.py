"""docs/reference.md, generated from the msgspec types of `draplan.api.draplan_v1alpha1`: every
field of every draplan kind with its type, default and the comment beside it in the source, so
the reference cannot drift from the code (tests/test_reference.py regenerates and compares).
`draplan docs reference` prints it."""

from __future__ import annotations

import inspect
import json
import re
import types
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec

from draplan.api import draplan_v1alpha1 as v1alpha1
from draplan.api.codec import encode, yaml_text
from draplan.api.meta import KubeStruct, ObjectMeta
from draplan.cluster.nodepools import POOL_LABEL, PRICE_LABEL, PROVIDER_POOL_LABELS
from draplan.sim.demo import demo_objects, demo_profile, demo_scenario
from draplan.sim.prices import PRICES_FILE, load_prices

KINDS = (v1alpha1.NodePool, v1alpha1.Scenario, v1alpha1.SchedulerProfile)
_COMMENT = re.compile(r"^\s+(\w+)\s*:[^#]*#\s*(.+)$")


def all_fields(value: KubeStruct) -> dict[str, Any]:
    """A struct's wire form with defaults written out (encode() omits them)."""
    out = {}
    for f in msgspec.structs.fields(type(value)):
        out[f.encode_name] = msgspec.to_builtins(getattr(value, f.name))
    return out


def _comments(cls: type) -> dict[str, str]:
    """`field: type = default  # comment` lines of a class's source."""
    found = {}
    for line in inspect.getsource(cls).splitlines():
        m = _COMMENT.match(line)
        if m:
            found[m.group(1)] = m.group(2).strip()
    return found


def _is_ours(tp: Any) -> bool:
    return (
        isinstance(tp, type) and issubclass(tp, KubeStruct) and tp.__module__ == v1alpha1.__name__
    )


def _bounds(metas: tuple[Any, ...]) -> str:
    """A field's range as the decoder enforces it (msgspec.Meta)."""
    parts = []
    for meta in metas:
        if not isinstance(meta, msgspec.Meta):
            continue
        if isinstance(meta.le, int) and meta.ge == -meta.le - 1:
            parts.append(f"int{meta.le.bit_length() + 1}")  # a signed integer's whole range
            continue
        for bound, sign in ((meta.ge, "≥"), (meta.gt, ">"), (meta.le, "≤"), (meta.lt, "<")):
            if bound is not None:
                parts.append(f"{sign} {bound:g}" if isinstance(bound, float) else f"{sign} {bound}")
        if meta.max_length is not None:
            parts.append(f"at most {meta.max_length} items")
    return ", ".join(parts)


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Annotated:
        base, *metas = get_args(tp)
        bounds = _bounds(tuple(metas))
        return f"{_type_name(base)} ({bounds})" if bounds else _type_name(base)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return " or ".join(_type_name(a) for a in args)
    if origin is tuple:
        return f"list of {_type_name(get_args(tp)[0])}"
    if origin is dict:
        key, val = get_args(tp)
        return f"map of {_type_name(key)} to {_type_name(val)}"
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if tp in simple:
        return simple[tp]
    if tp is Any:
        return "any"
    if tp is ObjectMeta:
        return "ObjectMeta (v1)"
    if _is_ours(tp):
        return "object"
    if isinstance(tp, type):
        return f"{tp.__name__} ({tp.__module__.rpartition('.')[2].replace('_', '/')})"
    return str(tp)


def _default(f: msgspec.structs.FieldInfo) -> str:
    if f.default is msgspec.NODEFAULT and f.default_factory is msgspec.NODEFAULT:
        return "required"
    value = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
    if value is None:
        return "unset"
    if isinstance(value, KubeStruct):
        return "{}"
    return f"`{json.dumps(msgspec.to_builtins(value))}`"


def _inner(tp: Any) -> Any:
    """The draplan struct a field holds (through lists and optionals), if any."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _inner(get_args(tp)[0])
    if origin in (Union, types.UnionType, tuple):
        for arg in get_args(tp):
            found = _inner(arg)
            if found is not None:
                return found
        return None
    return tp if _is_ours(tp) else None


def _rows(cls: type, prefix: str) -> list[tuple[str, str, str, str]]:
    rows = []
    notes = _comments(cls)
    for f in msgspec.structs.fields(cls):
        if prefix == "spec." and f.encode_name in ("apiVersion", "kind", "metadata"):
            continue
        path = prefix + f.encode_name
        inner = _inner(f.type)
        list_of = "list of" in _type_name(f.type)
        rows.append((path, _type_name(f.type), _default(f), notes.get(f.name, "")))
        if inner is not None:
            rows.extend(_rows(inner, path + ("[]." if list_of else ".")))
    return rows


def _doc_line(cls: type) -> str:
    """The class's own docstring (not KubeStruct's), on one line."""
    return " ".join(inspect.cleandoc(cls.__dict__.get("__doc__") or "").split())


def _kind_section(cls: type, example: list[dict[str, Any]]) -> list[str]:
    spec_type = next(f.type for f in msgspec.structs.fields(cls) if f.name == "spec")
    lines = [
        f"## {cls.__name__}",
        "",
        f"`apiVersion: draplan.io/v1alpha1`, `kind: {cls.__name__}`. {_doc_line(cls)}",
        "",
    ]
    structs = [spec_type, *sorted(_nested(spec_type), key=lambda t: t.__name__)]
    lines += [f"- `{t.__name__}`: {_doc_line(t)}" for t in structs if _doc_line(t)]
    lines += ["", "| field | type | default | meaning |", "|---|---|---|---|"]
    for path, tp, default, note in _rows(spec_type, "spec."):
        lines.append(f"| `{path}` | {tp} | {default} | {note} |")
    lines += ["", "Example:", "", "```yaml"]
    lines.append(yaml_text(example).rstrip())
    lines += ["```", ""]
    return lines


def _nested(cls: type) -> set[type]:
    found: set[type] = set()
    for f in msgspec.structs.fields(cls):
        inner = _inner(f.type)
        if inner is not None and inner not in found:
            found |= {inner, *_nested(inner)}
    return found


def _examples() -> dict[str, list[dict[str, Any]]]:
    pool = next(o for o in demo_objects() if isinstance(o, v1alpha1.NodePool))
    slices = pool.spec.resource_slices
    # The demo's first pool, two of its eight GPUs shown.
    short = msgspec.structs.replace(slices[0], devices=slices[0].devices[:2])
    pool = msgspec.structs.replace(
        pool, spec=msgspec.structs.replace(pool.spec, resource_slices=(short, *slices[1:]))
    )
    openb = v1alpha1.Scenario(
        metadata=ObjectMeta(name="openb-30d"),
        spec=v1alpha1.ScenarioSpec(
            policies=("legacy", "dra"),
            workload=v1alpha1.ScenarioWorkload(
                openb=v1alpha1.OpenbReplay(
                    data_dir="../shared/data/openb",
                    start_seconds=10310960,
                    end_seconds=12902960,
                )
            ),
        ),
    )
    jobs = {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "two-jobs"},
        "spec": {
            "policies": ["dra"],
            "workload": {
                "jobs": [
                    {
                        "name": "train-a",
                        "arrivalSeconds": 0,
                        "durationSeconds": 3600,
                        "workloadClass": "training",
                        "objects": [
                            {
                                "apiVersion": "resource.k8s.io/v1",
                                "kind": "ResourceClaimTemplate",
                                "metadata": {"name": "eight-gpus", "namespace": "ml"},
                                "spec": {
                                    "spec": {
                                        "devices": {
                                            "requests": [
                                                {
                                                    "name": "gpus",
                                                    "exactly": {
                                                        "deviceClassName": "gpu.nvidia.com",
                                                        "count": 8,
                                                    },
                                                }
                                            ]
                                        }
                                    }
                                },
                            },
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "metadata": {"name": "train-a-0", "namespace": "ml"},
                                "spec": {
                                    "containers": [{"name": "main"}],
                                    "resourceClaims": [
                                        {"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}
                                    ],
                                },
                            },
                        ],
                    }
                ]
            },
        },
    }
    return {
        "NodePool": [encode(pool)],
        "Scenario": [encode(demo_scenario()), jobs, encode(openb)],
        "SchedulerProfile": [encode(demo_profile())],
    }


def reference_markdown() -> str:
    examples = _examples()
    lines = [
        "# draplan reference: the draplan.io/v1alpha1 kinds",
        "",
        "Generated by `draplan docs reference` from `src/draplan/api/draplan_v1alpha1.py` "
        "(tests/test_reference.py fails when this file is stale). Kubernetes kinds (Node, "
        "ResourceSlice, DeviceClass, ResourceClaim, Pod, …) follow their upstream API and are "
        "not repeated here. Field names are camelCase on the wire; an omitted field takes its "
        "default; an unknown field or a wrong type is bad input (exit 2).",
        "",
    ]
    for cls in KINDS:
        lines += _kind_section(cls, examples[cls.__name__])
    lines += _pools_and_prices()
    return "\n".join(lines)


def _pools_and_prices() -> list[str]:
    prices = load_prices()
    lines = [
        "## Node pools, labels and prices",
        "",
        f"Every command finds a node's pool by one rule (`draplan.cluster.nodepools`): the "
        f"NodePool its `{POOL_LABEL}` label names; else the NodePool whose `fromNode` is the "
        "node; else the NodePool named by its provider's node-group label, the first of "
        + ", ".join(f"`{k}`" for k in PROVIDER_POOL_LABELS)
        + ". With no NodePool to match, that label's value itself names the pool. Nodes the "
        f"autoscaler adds from a NodePool carry `{POOL_LABEL}: <pool>`.",
        "",
        "A node's price per hour is its NodePool's `pricePerHour` (a decimal string, dollars); "
        f"a node no NodePool prices may carry its own in the `{PRICE_LABEL}` label (e.g. set "
        "by a cost exporter), a finite non-negative number (anything else is an input error). "
        "A simulation's cost is each node's price times the hours it "
        "existed; nodes without a price cost 0.",
        "",
        "## Trace data",
        "",
        "The `openb` workload replays the Alibaba GPU cluster trace v2023 (github.com/alibaba/"
        'clusterdata, `cluster-trace-gpu-v2023/csv`; Weng et al., "Beware of Fragmentation", '
        "USENIX ATC 2023): `openb_node_list_gpu_node.csv` (nodes: CPU, memory, GPUs, model) and "
        "`openb_pod_list_<trace>.csv` (pods: CPU, memory, GPUs, GPU milli-share, allowed "
        "models, creation and deletion times). draplan does not ship the trace: `dataDir` "
        "points at a copy (default `../shared/data`). Synthetic run times are drawn from "
        "Microsoft Philly's job run-time distribution (`draplan.sim.calibration`).",
        "",
        f"The trace's nodes have no prices; `pricePerGpuHour` unset prices each GPU model by "
        f"the table shipped in `{PRICES_FILE}` (public on-demand prices of equivalent cloud "
        "instances, per GPU-hour; the trace's own models G2 and G3 are not public and are "
        "priced as the instance named):",
        "",
        "| GPU model | $ per GPU-hour | equivalent instance |",
        "|---|---|---|",
    ]
    for model, price in sorted(prices.items()):
        lines.append(f"| {model} | {price.per_gpu_hour:.3f} | {price.instance} |")
    lines.append("")
    return lines
