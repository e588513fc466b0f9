"""Loading a generated 10,000-node dump (one slice of 8 GPUs with 8 attributes per node)."""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from clusters import gpu_node_objects
from draplan.cluster.state import ClusterState
from draplan.sources import load_objects


def run(nodes: int = 10_000) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dump.json"
        path.write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": gpu_node_objects(nodes)})
        )
        size = path.stat().st_size
        start = time.perf_counter()
        objects = load_objects([str(path)])
        loaded = time.perf_counter()
        state = ClusterState.from_objects(objects)
        indexed = time.perf_counter()
        pools = sum(len(state.pools_for_node(n)) for n in state.nodes.values())
        gathered = time.perf_counter()
    return {
        "nodes": nodes,
        "dumpMB": round(size / 1e6, 1),
        "loadSeconds": round(loaded - start, 2),
        "indexSeconds": round(indexed - loaded, 2),
        "gatherPoolsSeconds": round(gathered - indexed, 2),
        "pools": pools,
        "peakRSSMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0),
    }


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)))
