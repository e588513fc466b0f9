"""NodePools kept in a cluster as a ConfigMap.

NodePool is draplan's own kind, so a cluster has no API for it; teams keep the pools next to the
cluster instead, in a ConfigMap labelled `draplan.io/node-pools: "true"` whose every data value
is a YAML or JSON text of NodePools (one, several documents, or a `kind: List`). The ConfigMap is
replaced by the NodePools it holds wherever objects are loaded, from files and from a live
cluster alike, so a snapshot of a cluster shows the pools as plain NodePool objects.
"""

from __future__ import annotations

from collections.abc import Iterable

from draplan.api.codec import decode
from draplan.api.core_v1 import ConfigMap
from draplan.api.draplan_v1alpha1 import NodePool
from draplan.api.errors import BadInput
from draplan.api.meta import KubeStruct
from draplan.sources.files import parse_text

NODE_POOLS_LABEL = "draplan.io/node-pools"


def holds_node_pools(obj: KubeStruct) -> bool:
    return isinstance(obj, ConfigMap) and obj.metadata.labels.get(NODE_POOLS_LABEL) == "true"


def node_pools_of(config_map: ConfigMap, source: str) -> list[tuple[KubeStruct, str]]:
    """The NodePools in a labelled ConfigMap, each with where it came from."""
    meta = config_map.metadata
    name = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
    out: list[tuple[KubeStruct, str]] = []
    for key in sorted(config_map.data):
        where = f'{source}: ConfigMap "{name}": data.{key}' if source else f"data.{key}"
        for doc in parse_text(config_map.data[key], where):
            obj = decode(doc.data, source=where)
            if not isinstance(obj, NodePool):
                raise BadInput(
                    f"a {NODE_POOLS_LABEL} ConfigMap may hold only NodePools",
                    source=where,
                    kind=getattr(obj, "kind", ""),
                    name=obj.metadata.name if hasattr(obj, "metadata") else "",
                )
            out.append((obj, where))
    if not out:
        raise BadInput(
            "labelled " + NODE_POOLS_LABEL + " but holds no NodePools",
            source=source,
            kind="ConfigMap",
            name=name,
            path="data",
        )
    return out


def expand_node_pools(
    objects: Iterable[tuple[KubeStruct, str]],
) -> list[tuple[KubeStruct, str]]:
    """`objects` with every labelled ConfigMap replaced by its NodePools (others kept)."""
    out: list[tuple[KubeStruct, str]] = []
    for obj, source in objects:
        if holds_node_pools(obj):
            assert isinstance(obj, ConfigMap)
            out.extend(node_pools_of(obj, source))
        else:
            out.append((obj, source))
    return out
