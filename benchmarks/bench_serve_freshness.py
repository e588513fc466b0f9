"""Freshness of `draplan serve`: from a change arriving to answers (and so `/metrics`) that
include it, with pod and claim churn at 500 changes a second. The API-server double runs in a
process of its own (as in bench_serve_intake); here the watch-fed model and the audit loop run
as `serve` runs them, with `--audit-interval 0`.

An event that arrives after the audit loop's sync k-1 began is in the answers of sync k at the
latest, so each audit bounds the wait of the events it took by its publication minus the start of
the sync before it; the figures are those bounds (p50, p99, max), an upper estimate of freshness.
A scrape adds the formatting of the health series only (bench_serve: ~5 ms at 10,000 nodes).
The scale plan (/v1/plan) comes from the planner process, as in `serve`; its freshness, bounded
the same way, is reported beside.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from bench_serve_intake import _Remote
from draplan.cluster.state import ClusterState
from draplan.serve.answers import Answers, Auditor
from draplan.serve.loop import AuditLoop
from watch_support import model_of, wait_for

RATE = 500


@dataclass(frozen=True)
class _Seen:
    """What the figures read of published answers (holding every Answers would hold every
    body, and count them in the peak RSS)."""

    generation: int
    published: float
    seconds: float
    plan_generation: int
    plan_published: float

    @classmethod
    def of(cls, answers: Answers) -> _Seen:
        plan = answers.plan
        return cls(
            answers.generation, answers.published, answers.seconds, plan.generation, plan.published
        )


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(nodes: int, seconds: float, fill: float) -> dict[str, Any]:
    fill = min(fill, 20_000 / (nodes * 8))
    remote = _Remote(nodes, 8, fill, seed=16)
    out: dict[str, Any] = {
        "nodes": nodes,
        "fill": fill,
        "ratePerSecond": RATE,
        "seconds": seconds,
    }
    with tempfile.TemporaryDirectory() as tmp:
        model = model_of(remote, remote.kubeconfig(str(Path(tmp) / "kubeconfig")))  # type: ignore[arg-type]
        syncs: list[tuple[float, int]] = []
        sync = model.sync

        def timed_sync() -> tuple[ClusterState, int]:
            start = time.monotonic()
            state, generation = sync()
            syncs.append((start, generation))
            return state, generation

        model.sync = timed_sync  # type: ignore[method-assign]
        published: list[_Seen] = []
        loop = AuditLoop(
            model,
            Auditor(plan_process=True),
            0.0,
            CollectorRegistry(),
            (lambda answers: published.append(_Seen.of(answers)),),
        )
        try:
            model.start()
            wait_for(lambda: model.health().ready, timeout=600)
            loop.start()
            wait_for(lambda: published, timeout=600, what="the first audit")
            out["firstAuditSeconds"] = round(published[0].seconds, 2)
            remote.conn.send(("churn", RATE, int(RATE * seconds)))
            remote.recv()
            churn_start = time.monotonic()
            remote.conn.send(("go",))
            remote.recv()  # the churn is over
            time.sleep(2 * published[-1].seconds + 1)  # the last changes' audit
        finally:
            loop.stop(timeout=60)
            model.stop()
            remote.stop()
    # The events an audit takes in arrived after the start of the last sync before it.
    start_of = dict((generation, start) for start, generation in syncs)
    # A replan republishes the answers of a generation with its plan: /metrics is unchanged.
    audits = [
        b for a, b in pairwise([None, *published]) if a is None or a.generation != b.generation
    ]
    plans = [
        b
        for a, b in pairwise([None, *published])
        if a is None or a.plan_generation != b.plan_generation
    ]
    bounds = [
        a.published - start_of[b.generation]
        for b, a in pairwise(audits)
        if a.published >= churn_start
    ]
    plan_bounds = [
        a.plan_published - start_of[b.plan_generation]
        for b, a in pairwise(plans)
        if a.plan_published >= churn_start
    ]
    out["audits"] = len(bounds)
    out["auditSecondsP50"] = round(
        _quantile([a.seconds for a in audits if a.published >= churn_start], 0.5), 3
    )
    out["freshnessP50"] = round(_quantile(bounds, 0.5), 3)
    out["freshnessP99"] = round(_quantile(bounds, 0.99), 3)
    out["freshnessMax"] = round(max(bounds), 3)
    out["withinTarget"] = out["freshnessP99"] <= 1.0
    out["plans"] = len(plans)
    if plan_bounds:
        out["planFreshnessP50"] = round(_quantile(plan_bounds, 0.5), 3)
        out["planFreshnessP99"] = round(_quantile(plan_bounds, 0.99), 3)
        out["planFreshnessMax"] = round(max(plan_bounds), 3)
        out["planWithinTarget"] = out["planFreshnessP99"] <= 3.0
    # Issue 29: <= 1.5 GiB for the serving process and for the planner it spawns (children's
    # peak is the largest child's: the planner or the API-server double, whichever is larger).
    out["peakRSSMiB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    out["childrenPeakRSSMiB"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    out["loadAverage"] = round(os.getloadavg()[0], 1)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    # The share of GPUs running pods at the start (at most 20,000 pods). At 0.5 every node sits
    # at the scale-down threshold: each is a candidate whose pods the plan tries elsewhere.
    parser.add_argument("--fill", type=float, default=0.5)
    args = parser.parse_args()
    print(json.dumps(run(args.nodes, args.seconds, args.fill)))
