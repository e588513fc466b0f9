"""Kubernetes versions and the feature gates that change what draplan answers.

The gates keep upstream's names, stages and per-version defaults (kube_features.go's versioned
specs for 1.36 and 1.37), so `--kubernetes-version` and `--feature-gates` read as they do for
kube-scheduler. Each gate also says which values draplan models: a value it cannot model is an
error, never a silently different answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from draplan.api.errors import BadInput

VERSIONS = ("1.36", "1.37")
DEFAULT_VERSION = "1.37"


@dataclass(frozen=True)
class Spec:
    """A gate in one Kubernetes version."""

    stage: str  # Alpha, Beta or GA
    default: bool
    locked: bool = False


@dataclass(frozen=True)
class Gate:
    name: str
    specs: dict[str, Spec]  # version -> spec; absent: the version has no such gate
    modelled: frozenset[bool]  # the values draplan can answer for
    effect: str  # what the gate changes in draplan (shown in the README's table)


def _gate(name: str, modelled: tuple[bool, ...], effect: str, **specs: Spec) -> Gate:
    """Specs by keyword: `v1_37=Spec(...)` is Kubernetes 1.37's."""
    by_version = {v.removeprefix("v").replace("_", "."): s for v, s in specs.items()}
    return Gate(name, by_version, frozenset(modelled), effect)


BOTH = (True, False)
GATES = {
    g.name: g
    for g in (
        _gate(
            "DRAPartitionableDevices",
            BOTH,
            "off: devices that consume shared counters are never allocated",
            v1_36=Spec("Beta", True),
            v1_37=Spec("Beta", True),
        ),
        _gate(
            "DRADeviceTaints",
            BOTH,
            "off: device taints are ignored",
            v1_36=Spec("Beta", True),
            v1_37=Spec("GA", True),
        ),
        _gate(
            "DRADeviceTaintRules",
            BOTH,
            "off: DeviceTaintRules are ignored",
            v1_36=Spec("Beta", False),
            v1_37=Spec("GA", True),
        ),
        _gate(
            "DRAExtendedResource",
            BOTH,
            "off: extended resources are counted against node allocatable only",
            v1_36=Spec("Beta", True),
            v1_37=Spec("GA", True, locked=True),
        ),
        _gate(
            "DRAPrioritizedList",
            (True,),
            "on only: firstAvailable alternatives",
            v1_36=Spec("GA", True),
            v1_37=Spec("GA", True, locked=True),
        ),
        _gate(
            "DRAAdminAccess",
            (True,),
            "on only: adminAccess requests",
            v1_36=Spec("GA", True, locked=True),
            v1_37=Spec("GA", True, locked=True),
        ),
        _gate(
            "DRAConsumableCapacity",
            (True,),
            "on only: shared devices, capacity requests, distinctAttribute",
            v1_36=Spec("Beta", True),
            v1_37=Spec("Beta", True),
        ),
        _gate(
            "DRADeviceBindingConditions",
            (True,),
            "on only: binding conditions are read, not waited for",
            v1_36=Spec("Beta", True),
            v1_37=Spec("Beta", True),
        ),
        _gate(
            "DRAFractionalCapacityRange",
            BOTH,
            "on: a validRange with a fractional min, max or step rounds in milli units; "
            "off: in whole units",
            v1_37=Spec("Beta", True),
        ),
        _gate(
            "DRAWorkloadResourceClaims",
            BOTH,
            "on: a claim a PodGroup names is allocated once for the gang, reserved for the group",
            v1_36=Spec("Alpha", False),
            v1_37=Spec("Beta", False),
        ),
        _gate(
            "DRAListTypeAttributes",
            BOTH,
            "on: list-typed attributes, CEL includes(), matchAttribute as a common value and "
            "distinctAttribute as disjoint sets; off: list values are an error",
            v1_36=Spec("Alpha", False),
            v1_37=Spec("Alpha", False),
        ),
        _gate(
            "DRADeviceCompatibilityGroups",
            BOTH,
            "on: devices on one counter set are co-allocated only if their compatibilityGroups "
            "intersect; off: compatibilityGroups are an error",
            v1_37=Spec("Alpha", False),
        ),
        _gate(
            "CompositePodGroup",
            (False,),
            "composite pod groups: read, not scheduled as one",
            v1_37=Spec("Alpha", False),
        ),
        _gate(
            "PodLevelResources",
            BOTH,
            "off: spec.resources is ignored, a pod's requests are its containers' (KEP-2837)",
            v1_36=Spec("Beta", True),
            v1_37=Spec("Beta", True),
        ),
        _gate(
            "GangScheduling",
            BOTH,
            "on: kube-scheduler places a Workload PodGroup's pods all or nothing; off: one by "
            "one (in 1.37 part of GenericWorkload)",
            v1_36=Spec("Alpha", False),
        ),
        _gate(
            "TopologyAwareWorkloadScheduling",
            BOTH,
            "on: kube-scheduler places a Workload PodGroup inside the one domain its "
            "schedulingConstraints.topology names; off: the constraint is ignored",
            v1_36=Spec("Alpha", False),
            v1_37=Spec("Alpha", False),
        ),
        # A cluster holds Workload objects only with the gate on, so their presence in the
        # input is the gate: draplan reads them whenever they are there.
        _gate(
            "GenericWorkload",
            BOTH,
            "none: Workload and PodGroup objects are read whenever the input has them",
            v1_36=Spec("Alpha", False),
            v1_37=Spec("Beta", False),
        ),
    )
}


@dataclass(frozen=True)
class FeatureGates:
    version: str
    enabled: frozenset[str]

    def __contains__(self, name: str) -> bool:
        return name in self.enabled


def defaults(version: str = DEFAULT_VERSION) -> FeatureGates:
    return FeatureGates(
        version,
        frozenset(
            g.name for g in GATES.values() if version in g.specs and g.specs[version].default
        ),
    )


DEFAULT = defaults()


def feature_gates(version: str = DEFAULT_VERSION, text: str = "") -> FeatureGates:
    """`--kubernetes-version` and `--feature-gates Name=true,Other=false` as kube-scheduler
    reads them; a bad value is BadInput naming the flag."""
    if version not in VERSIONS:
        raise BadInput(
            f"unsupported Kubernetes version {version!r}: {' or '.join(VERSIONS)}",
            path="--kubernetes-version",
        )
    enabled = set(defaults(version).enabled)
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        gate = GATES.get(name)
        if not sep or value not in ("true", "false"):
            raise BadInput(
                f"invalid value of {item!r}: expected Name=true|false", path="--feature-gates"
            )
        if gate is None or version not in gate.specs:
            raise BadInput(
                f"unrecognized feature gate: {name} (Kubernetes {version})", path="--feature-gates"
            )
        spec, on = gate.specs[version], value == "true"
        if spec.locked and on != spec.default:
            raise BadInput(
                f"cannot set feature gate {name} to {value}, feature is locked to "
                f"{str(spec.default).lower()}",
                path="--feature-gates",
            )
        if on not in gate.modelled:
            raise BadInput(
                f"{name}={value} is not modelled by draplan ({gate.effect})", path="--feature-gates"
            )
        if on:
            enabled.add(name)
        else:
            enabled.discard(name)
    return FeatureGates(version, frozenset(enabled))
