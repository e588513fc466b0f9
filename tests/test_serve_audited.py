"""serve.audited: the gRPC expander's own state of the newest audited generation. Whatever the
changes between audits, whenever the audited state is attached and however many audits pass
between two reads, a read equals a fresh load of the objects of the generation last audited;
an expander call never waits for an audit in progress, and an audit step waits for a call."""

from __future__ import annotations

import random
import socket
import threading
import time

import grpc
from hypothesis import given, settings
from hypothesis import strategies as st

from ca_requests import best_options_request
from draplan.api.codec import decode
from draplan.cli.cmd_serve import start_expander
from draplan.cluster.incremental import IncrementalState, state_objects
from draplan.cluster.state import ClusterState, origin_key
from draplan.grpcplugin.judge import Judge
from draplan.grpcplugin.protos import expander_pb2_grpc
from draplan.grpcplugin.server import candidates
from draplan.scheduler import Scheduler, build_profile
from draplan.serve.answers import Auditor
from draplan.serve.audited import AuditedState
from rules_clusters import cluster
from state_projection import projection, schedule_outcome
from test_serve import ScriptedModel, serving


def _fresh(state: ClusterState) -> ClusterState:
    return ClusterState.from_objects([(o, state.source_of(o)) for o in state_objects(state)])


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 40),
    steps=st.lists(st.tuples(st.integers(0, 2**16), st.booleans()), min_size=1, max_size=5),
    attach=st.integers(0, 4),
)
def test_a_read_equals_a_fresh_load_of_the_generation_last_audited(
    seed: int, steps: list[tuple[int, bool]], attach: int
) -> None:
    """Mixed vendors (H100, Gaudi3, TPU), control-plane and system nodes, DaemonSet pods:
    each generation takes some objects out and puts back some taken before; the audited state
    is attached before generation `attach` (late: it is offered every object first) and read
    after the audits that `steps` say. What the reader keeps of the state is brought up to
    date (`prepare`) with the state as the reader then gets it."""
    objects = [decode(doc) for doc in cluster(seed)]
    live = IncrementalState([(o, "src") for o in objects])
    auditor = Auditor()
    prepared: list[tuple[ClusterState, object]] = []
    audited = AuditedState(lambda state: prepared.append((state, projection(state))))
    out: list[object] = []
    try:
        for generation, (pick, read) in enumerate(steps, start=1):
            rng = random.Random(pick)
            for obj in rng.sample(objects, min(3, len(objects))):
                live.delete(obj)
                out.append(obj)
            for obj in rng.sample(out, min(2, len(out))):
                live.put(obj, "src")  # type: ignore[arg-type]
            if generation - 1 == attach:
                auditor.audited = audited
            state = live.flush()
            auditor.audit(state, generation)
            if read and auditor.audited is not None:
                with audited.reader:
                    got = audited.state()
                assert got is not None and audited.generation == generation
                fresh = _fresh(state)
                assert projection(got) == projection(fresh)
                assert prepared[-1] == (got, projection(got))
                assert schedule_outcome(got) == schedule_outcome(fresh)
                # The reader's state is its own: the live one moves on without it.
                assert got is not state
    finally:
        auditor.close()


def test_an_expander_call_answers_while_an_audit_step_holds_the_loop() -> None:
    """`serve --expander-listen`: a call made while the audit loop holds its state (an audit
    step in progress) is answered from the audited state, equal to a fresh judge's answer.
    Gaudi3 and H100 node groups (NodePools copying a node) for the cluster's pending pods."""
    pools = [
        {
            "apiVersion": "draplan.io/v1alpha1",
            "kind": "NodePool",
            "metadata": {"name": name},
            "spec": {"maxNodes": 4, "pricePerHour": price, "fromNode": node},
        }
        for name, price, node in (("gaudi3", "30", "gaudi3-0"), ("h100", "98", "h100-0"))
    ]
    state = ClusterState.from_objects([(decode(d), "src") for d in [*cluster(7), *pools]])
    pending = [p for _, p in sorted(state.pods.items()) if not p.spec.node_name]
    groups = {"gaudi3": state.nodes["gaudi3-0"], "h100": state.nodes["h100-0"]}
    req = best_options_request(groups, [(g, 2, pending) for g in sorted(groups)])
    model = ScriptedModel(state)
    model.ready = False  # as `serve` starts the expander: before the first audit
    with serving(model) as served:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        expander = start_expander(
            f"127.0.0.1:{port}", None, None, True, served.loop, build_profile()
        )
        model.ready = True
        assert served.loop.first_answers.wait(60)
        try:
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = expander_pb2_grpc.ExpanderStub(channel)
                stub.BestOptions(req, timeout=60)  # the audited state is built and kept
                with served.loop.state_lock:
                    answer = stub.BestOptions(req, timeout=60)
        finally:
            expander.stop(None)
    fresh = Judge(Scheduler(build_profile())).answer(_fresh(state), candidates(req))
    assert [o.nodeGroupId for o in answer.options] == [v.candidate.group_id for v in fresh.best()]
    assert [o.debug for o in answer.options] == [v.debug() for v in fresh.best()]


def test_an_audit_step_waits_for_a_reader() -> None:
    objects = [decode(doc) for doc in cluster(3)]
    state = ClusterState.from_objects([(o, "src") for o in objects])
    audited = AuditedState()
    auditor = Auditor(audited=audited)
    try:
        auditor.audit(state, 1)
        done = threading.Event()
        with audited.reader:
            got = audited.state()
            assert got is not None and {origin_key(o) for o in state_objects(got)} == {
                origin_key(o) for o in state_objects(state)
            }
            thread = threading.Thread(target=lambda: (auditor.audit(state, 2), done.set()))
            thread.start()
            time.sleep(0.3)
            assert not done.is_set()
        thread.join(60)
        assert done.is_set()
    finally:
        auditor.close()
