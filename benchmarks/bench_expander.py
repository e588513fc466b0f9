"""The gRPC expander's answer time, printed as JSON: one BestOptions call over a local gRPC
channel shaped as Cluster Autoscaler 1.35+ sends it (every option repeats every pod's
protobuf v1.Pod bytes, each pod about the 1.4 KB a real one is; `nodeBytesMap` holds every
group's template), against node groups of varied shapes (1/2/4/8 GPUs, two per PCIe root or
all on one, varied cpu and price): 50 options × 200 pods and 100 × 500 by default. CA's client
waits 5 s (`gRPCTimeout`) and accepts 128 MiB; the target is 1 s.

`--live NODES` asks on the live model instead, as `draplan serve --expander-listen` answers:
NODES nodes x 8 GPUs (half in use) served by the API-server double in a process of its own with
the node groups as NodePools in a labelled ConfigMap, the watch-fed model with its audit loop
(`--audit-interval 0`) and planner, and pod and claim churn at 500 changes a second while the
calls are made from another process, as CA makes them.

Usage: python benchmarks/bench_expander.py [--sizes 50x200,100x500] [--repeat N] [--live NODES]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import resource
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import grpc
from prometheus_client import CollectorRegistry

from draplan.api.codec import decode
from draplan.autoscaler.templates import make_node
from draplan.cluster.state import ClusterState
from draplan.grpcplugin.encode import node_message, pod_message
from draplan.grpcplugin.judge import Judge
from draplan.grpcplugin.protos import expander_pb2, expander_pb2_grpc
from draplan.grpcplugin.server import MAX_MESSAGE, add_expander, new_server
from draplan.scheduler import Scheduler
from draplan.serve.answers import Answers, Auditor
from draplan.serve.audited import AuditedState
from draplan.serve.loop import AuditLoop
from draplan.sources.nodepools import NODE_POOLS_LABEL

DRIVER = "gpu.example.com"
ROOT = "resource.kubernetes.io/pcieRoot"
CHURN = 500  # pod and claim changes a second on the live model, as bench_serve_freshness


def _pool(rng: random.Random, i: int) -> dict[str, Any]:
    gpus = rng.choice((1, 2, 4, 8))
    one_root = rng.random() < 0.5
    devices = [
        {
            "name": f"gpu-{d}",
            "attributes": {ROOT: {"string": "pcie-0" if one_root else f"pcie-{d // 2}"}},
            "capacity": {"memory": {"value": "80Gi"}},
        }
        for d in range(gpus)
    ]
    cpu = rng.choice((16, 32, 64, 96))
    return {
        "apiVersion": "draplan.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": f"group-{i:02d}"},
        "spec": {
            "maxNodes": 1000,
            "pricePerHour": f"{gpus * rng.uniform(2.0, 4.0) + cpu * 0.02:.2f}",
            "template": {
                "metadata": {"labels": {"node.kubernetes.io/instance-type": f"t{i}"}},
                "status": {"allocatable": {"cpu": str(cpu), "memory": "1Ti", "pods": "110"}},
            },
            "resourceSlices": [
                {
                    "driver": DRIVER,
                    "nodeName": "$NODE_NAME",
                    "pool": {"name": "$NODE_NAME", "generation": 1},
                    "devices": devices,
                }
            ],
        },
    }


def _claim_template(name: str, count: int, same_root: bool) -> dict[str, Any]:
    devices: dict[str, Any] = {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": DRIVER, "count": count}}]
    }
    if same_root:
        devices["constraints"] = [{"requests": ["gpus"], "matchAttribute": ROOT}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": devices}},
    }


SHAPES = (("one", 1, False, 4), ("two", 2, False, 8), ("four-root", 4, True, 16))
PAD = "x" * 1100


def objects(groups: int, pods: int, seed: int = 3) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
        }
    ]
    objs += [_pool(rng, i) for i in range(groups)]
    objs += [_claim_template(name, n, root) for name, n, root, _ in SHAPES]
    for i in range(pods):
        name, _, _, cpu = SHAPES[i % len(SHAPES)]
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"p-{i:03d}",
                    "namespace": "default",
                    "uid": f"u-{i}",
                    # What makes a real pod's bytes about 1.4 KB: owner, labels, the
                    # last-applied configuration.
                    "labels": {"app": "train", "pod-template-hash": "5d8f9c7b6"},
                    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": PAD},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "resources": {
                                "requests": {"cpu": str(cpu)},
                                "claims": [{"name": "gpus"}],
                            },
                        }
                    ],
                    "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": name}],
                },
            }
        )
    return objs


def request(options: int, pods: int) -> tuple[ClusterState, expander_pb2.BestOptionsRequest]:
    """The cluster of `objects` and CA's BestOptions request for its pending pods."""
    state = ClusterState.from_objects(decode(o) for o in objects(options, pods))
    pending = [p for _, p in sorted(state.pods.items())]
    pod_bytes = [pod_message(p).SerializeToString() for p in pending]
    gpus = sum(int(n) for _, n, _, _ in SHAPES) * pods / len(SHAPES)
    req = expander_pb2.BestOptionsRequest()
    for name, pool in sorted(state.node_pools.items()):
        per_node = len(pool.spec.resource_slices[0].devices)
        # CA's count-based estimate: enough GPUs in total.
        req.options.add(nodeGroupId=name, nodeCount=math.ceil(gpus / per_node), podBytes=pod_bytes)
        req.nodeBytesMap[name] = node_message(
            make_node(state, pool, f"template-{name}", {}).node
        ).SerializeToString()
    return state, req


def bench(options: int = 50, pods: int = 200, repeat: int = 3) -> dict[str, Any]:
    state, req = request(options, pods)
    server = new_server(2)
    port = add_expander(server, "localhost:0", None, None, lambda: state, insecure=True)
    server.start()
    times, cpu = [], []
    limits = [("grpc.max_send_message_length", MAX_MESSAGE)]
    with grpc.insecure_channel(f"localhost:{port}", options=limits) as channel:
        stub = expander_pb2_grpc.ExpanderStub(channel)
        for _ in range(repeat):
            start, cpu_start = time.perf_counter(), time.process_time()
            answer = stub.BestOptions(req, timeout=30)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu_start)
    server.stop(None)
    return {
        "options": options,
        "podsPerOption": pods,
        "requestMiB": round(req.ByteSize() / 2**20, 2),
        "secondsFirst": round(times[0], 3),
        "secondsBest": round(min(times), 3),
        # CPU time of client and server (one process): wall time is noisy on a shared machine.
        "cpuSecondsFirst": round(cpu[0], 3),
        "cpuSecondsBest": round(min(cpu), 3),
        "loadAverage": round(os.getloadavg()[0], 2),
        "targetSeconds": 1.0,
        "withinTarget": times[0] <= 1.0,
        "withinCADeadline": times[0] <= 5.0,
        "answered": len(answer.options),
        "best": answer.options[0].nodeGroupId if answer.options else None,
        "peakRSSMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _client(conn: Connection, port: int, sizes: list[tuple[int, int]], repeat: int) -> None:
    """Cluster Autoscaler's side, in a process of its own: each size's request `repeat` times
    once the parent says go; each call's wall time and answer."""
    requests = [(o, p, request(o, p)[1]) for o, p in sizes]
    conn.send("ready")
    conn.recv()
    out = []
    limits = [("grpc.max_send_message_length", MAX_MESSAGE)]
    with grpc.insecure_channel(f"localhost:{port}", options=limits) as channel:
        stub = expander_pb2_grpc.ExpanderStub(channel)
        for options, pods, req in requests:
            for _ in range(repeat):
                start = time.perf_counter()
                answer = stub.BestOptions(req, timeout=30)
                seconds = time.perf_counter() - start
                best = answer.options[0].nodeGroupId if answer.options else None
                out.append((options, pods, round(req.ByteSize() / 2**20, 2), seconds, best))
    conn.send(out)


def _node_pools(groups: int) -> dict[str, Any]:
    """The node groups of `objects` as NodePools in a ConfigMap, as a cluster keeps them."""
    pools = [o for o in objects(groups, 0) if o["kind"] == "NodePool"]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "node-pools",
            "namespace": "draplan",
            "labels": {NODE_POOLS_LABEL: "true"},
        },
        "data": {"pools.json": json.dumps({"apiVersion": "v1", "kind": "List", "items": pools})},
    }


def live(nodes: int, sizes: list[tuple[int, int]], repeat: int) -> dict[str, Any]:
    """Each size's calls answered by `serve`'s expander on the live model of `nodes` nodes
    while pods and claims churn."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from bench_serve_intake import _Remote
    from watch_support import model_of, wait_for

    groups = max(o for o, _ in sizes)
    templates = [o for o in objects(groups, 0) if o["kind"] == "ResourceClaimTemplate"]
    # Forked before gRPC starts here (its threads do not survive a fork).
    remote = _Remote(
        nodes, 8, min(0.5, 20_000 / (nodes * 8)), 16, (_node_pools(groups), *templates)
    )
    published: list[Answers] = []
    judged: list[tuple[float, float]] = []  # each call's judging: wall and CPU seconds
    waited: list[float] = []  # each call's wait for the audited state
    out: dict[str, Any] = {"liveNodes": nodes, "churnPerSecond": CHURN}
    with tempfile.TemporaryDirectory() as tmp:
        model = model_of(remote, remote.kubeconfig(str(Path(tmp) / "kubeconfig")))  # type: ignore[arg-type]
        auditor = Auditor(plan_process=True)
        # As `serve --expander-listen` serves it (cli.cmd_serve.start_expander): on the
        # newest audited generation's own state; the time each call spends judging is
        # noted beside.
        judge = Judge(Scheduler(auditor.profile))
        audited = auditor.audited = AuditedState(judge.prepare)
        loop = AuditLoop(model, auditor, 0.0, CollectorRegistry(), (published.append,))
        ctx = multiprocessing.get_context("spawn")
        conn, child = ctx.Pipe()
        client = None
        server = None
        try:
            model.start()
            wait_for(lambda: model.health().ready, timeout=900)
            loop.start()
            wait_for(loop.first_answers.is_set, timeout=900, what="the first audit")
            answer = judge.answer

            def timed(state: ClusterState, offered: Any) -> Any:
                start, cpu = time.perf_counter(), time.thread_time()
                try:
                    return answer(state, offered)
                finally:
                    judged.append((time.perf_counter() - start, time.thread_time() - cpu))

            judge.answer = timed  # type: ignore[method-assign]
            server = new_server()
            wait_for(lambda: audited.generation, timeout=600, what="the audited state")

            class Waited:
                """`audited.reader`, noting how long each call waits for it (while the
                changes of the last audit are applied)."""

                def __enter__(self) -> None:
                    start = time.perf_counter()
                    audited.reader.__enter__()
                    waited.append(time.perf_counter() - start)

                def __exit__(self, *exc: Any) -> None:
                    audited.reader.__exit__(*exc)

            port = add_expander(
                server,
                "localhost:0",
                None,
                None,
                audited.state,
                insecure=True,
                judge=judge,
                lock=Waited(),
            )
            server.start()
            client = ctx.Process(target=_client, args=(child, port, sizes, repeat), daemon=True)
            client.start()
            assert conn.recv() == "ready"
            remote.conn.send(("churn", CHURN, CHURN * 600))  # longer than the calls take
            remote.recv()
            remote.conn.send(("go",))
            time.sleep(2.0)  # the churn under way
            audits_before = len(published)
            conn.send("go")
            calls = conn.recv()
            out["auditsDuringCalls"] = len(published) - audits_before
        finally:
            if client is not None:
                client.join(5)
            if server is not None:
                server.stop(None)
            loop.stop(timeout=60)
            model.stop()
            remote.proc.kill()
    runs = []
    for options, pods in sizes:
        mine = [c for c in calls if c[:2] == (options, pods)]
        seconds = [c[3] for c in mine]
        judging = [judged[i] for i, c in enumerate(calls) if c[:2] == (options, pods)]
        target = 1.0 if (options, pods) == (50, 200) else 3.0
        runs.append(
            {
                "options": options,
                "podsPerOption": pods,
                "requestMiB": mine[0][2],
                "seconds": [round(t, 3) for t in seconds],
                # Of which judging (the rest: the wire, decoding, applying the changes of
                # the audits since the last call).
                "judgingSeconds": [round(t, 3) for t, _ in judging],
                # The judging thread's own CPU time: what the machine's load leaves out.
                "judgingCpuSeconds": [round(c, 3) for _, c in judging],
                # Before judging, the wait for the audited state.
                "waitSeconds": [
                    round(waited[i], 3) for i, c in enumerate(calls) if c[:2] == (options, pods)
                ],
                "targetSeconds": target,
                "withinTarget": max(seconds) <= target,
                "best": mine[0][4],
            }
        )
    out["bestOptions"] = runs
    out["auditSecondsP50"] = round(sorted(a.seconds for a in published)[len(published) // 2], 3)
    out["peakRSSMiB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    out["loadAverage"] = round(os.getloadavg()[0], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="50x200,100x500", help="OPTIONSxPODS,...")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--live", type=int, default=0, metavar="NODES")
    args = parser.parse_args(argv)
    sizes = []
    for size in args.sizes.split(","):
        options, _, pods = size.partition("x")
        sizes.append((int(options), int(pods)))
    if args.live:
        print(json.dumps(live(args.live, sizes, args.repeat)))
        return 0
    runs = [bench(options, pods, args.repeat) for options, pods in sizes]
    print(json.dumps({"bestOptions": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
