"""`draplan pools`: the node pools every command judges with, as `kubectl get` lists objects."""

from __future__ import annotations

import click

from draplan.api.codec import encode
from draplan.autoscaler.owners import owner, selector, source
from draplan.cli.common import (
    filename_option,
    load_state,
    output_option,
    prices_option,
    with_derived_pools,
)
from draplan.cli.output import emit_json, emit_table, emit_yaml
from draplan.cluster.nodepools import node_pool


@click.command("pools")
@filename_option()
@prices_option
@output_option
def pools(filenames: tuple[str, ...], prices_path: str | None, output: str) -> None:
    """List the node pools that why, scale, metrics, simulate and serve judge with: the
    NodePools given, else those derived from the cluster's node groups (Cluster API
    MachineDeployments and MachinePools, Karpenter NodePools, node-group labels).

    -o yaml / json print them as draplan.io/v1alpha1 NodePools, to edit and give back with -f.
    """
    state = with_derived_pools(load_state(filenames), prices_path)
    found = [state.node_pools[name] for name in sorted(state.node_pools)]
    docs = [encode(pool) for pool in found]
    if output == "json":
        emit_json({"apiVersion": "v1", "kind": "List", "items": docs})
        return
    if output not in ("table", "wide"):
        emit_yaml(docs)
        return
    if not found:  # as kubectl says "No resources found"
        click.echo("No NodePool given and no node group to derive one from.")
        return
    members: dict[str, int] = {}
    for node in state.nodes.values():
        pool = node_pool(state, node)
        if pool is not None:
            members[pool.metadata.name] = members.get(pool.metadata.name, 0) + 1
    wide = output == "wide"
    headers = ["NAME", "SOURCE", "AUTOSCALER", "NODES", "MIN", "MAX", "PRICE/H"]
    rows = []
    for pool in found:
        spec = pool.spec
        pin = selector(state, pool)
        row = [
            pool.metadata.name,
            source(pool),
            owner(state, pool),
            members.get(pool.metadata.name, 0),
            spec.min_nodes,
            spec.max_nodes,
            spec.price_per_hour,
        ]
        if wide:
            copied = spec.from_node or ("template" if spec.template is not None else "-")
            row += [",".join(f"{k}={v}" for k, v in pin.items()) or "<none>", copied]
        rows.append(row)
    emit_table(
        f"{len(found)} node pools",
        [*headers, "SELECTOR", "NODE"] if wide else headers,
        rows,
    )


COMMANDS = [pools]
