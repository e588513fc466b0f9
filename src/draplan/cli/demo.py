"""`draplan demo`: the built-in example AI cluster, validated, summarised, and each pending
pod's claims tried on every node with the allocator."""

from __future__ import annotations

from collections import Counter
from importlib import resources

from draplan.allocator import Options, allocate
from draplan.api.meta import ObjectMeta
from draplan.api.resource_v1 import ResourceClaim
from draplan.cli.output import emit_table
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects

EXAMPLE = "ai-cluster.yaml"


def example_path() -> str:
    return str(resources.files("draplan.examples").joinpath(EXAMPLE))


def run_demo() -> None:
    path = example_path()
    state = ClusterState.from_objects(load_objects([path]))
    devices: Counter[str] = Counter()
    for rs in state.slices.values():
        devices[rs.spec.driver] += len(rs.spec.devices)
    emit_table(
        f"built-in example cluster ({path})",
        ["NODES", "PODS", "SLICES", "DEVICES"],
        [
            (
                len(state.nodes),
                len(state.pods),
                len(state.slices),
                ", ".join(f"{n} {d}" for d, n in sorted(devices.items())),
            )
        ],
    )
    rows = []
    for (ns, name), pod in sorted(state.pods.items()):
        claims = []
        for ref in pod.spec.resource_claims:
            tmpl = state.claim_templates[(ns, ref.resource_claim_template_name or "")]
            meta = ObjectMeta(name=f"{name}-{ref.name}", namespace=ns)
            claims.append(ResourceClaim(metadata=meta, spec=tmpl.spec.spec))
        fits, reasons = [], Counter[str]()
        for node_name, node in sorted(state.nodes.items()):
            outcome = allocate(state, node, claims, Options())
            if outcome.ok:
                fits.append(node_name)
            elif outcome.reason is not None:
                reasons[outcome.reason.code] += 1
        why = ", ".join(f"{n} {code}" for code, n in sorted(reasons.items()))
        rows.append(
            (f"{ns}/{name}", len(fits), ", ".join(fits[:3]) + (" …" if len(fits) > 3 else ""), why)
        )
    emit_table(
        "where each pending pod's device claims fit (DRA allocator, per node)",
        ["POD", "NODES THAT FIT", "EXAMPLES", "OTHER NODES"],
        rows,
    )
