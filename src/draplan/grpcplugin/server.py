"""Cluster Autoscaler's gRPC expander (`--expander=grpc --grpc-expander-url=ADDR
--grpc-expander-cert=CA.pem`), answered by draplan: `grpcplugin.Expander/BestOptions`.

What CA does with the answer (`expander/grpcplugin/grpc_client.go`, `BestOptions`, and
`expander/factory/chain.go`): an error makes it go on with all its options (the next expander
of `--expander=grpc,…`, else its random fallback); an empty answer makes the filter return
none, so CA scales nothing that loop; otherwise it keeps the options whose ids the answer
names (their order and every other field are ignored) and, if more than one, hands them to the
next expander. So draplan answers:
- UNAVAILABLE until the first answers on the listed objects are published (`serve`), so CA
  goes on with its own choice instead of one made on a cluster not yet read;
- FAILED_PRECONDITION when it cannot judge: no option is kept and some option's group has no
  view of its devices (CA sends no ResourceSlices) or the option carries no pods;
- no option only when it is sure no option's group hosts any of its pods;
- else the single best option, or the few the ranking cannot tell apart, each with a `debug`
  line saying what draplan judged the group with.
CA's client accepts answers up to 128 MiB and sends options that repeat every pod's bytes
(`gRPCMaxRecvMsgSize`), so the server accepts requests of that size too. Requests are judged
one at a time against the state `state_provider` returns, in a fork that is reverted."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent import futures
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import grpc

from draplan.api.core_v1 import Node, Pod
from draplan.cluster.state import ClusterState
from draplan.grpcplugin.decode import (
    MalformedObject,
    node_from_bytes,
    node_from_message,
    pod_from_bytes,
    pod_from_message,
)
from draplan.grpcplugin.judge import Answer, Candidate, Judge, Verdict
from draplan.grpcplugin.protos import expander_pb2, expander_pb2_grpc
from draplan.scheduler import Scheduler, build_profile

log = logging.getLogger("draplan.grpcplugin")

# None until the answers a request may be judged against exist.
StateProvider = Callable[[], ClusterState | None]
MAX_MESSAGE = 128 << 20  # CA's client: gRPCMaxRecvMsgSize (grpc_client.go)
NOT_READY = (
    "draplan has not published its first answers on the cluster's objects yet; "
    "Cluster Autoscaler goes on with its own options"
)


class TLSRequired(ValueError):
    """The expander was asked to listen without a certificate and key, and not --insecure."""


def _template(request: expander_pb2.BestOptionsRequest, group: str) -> Node | None:
    """The group's template node: CA 1.35+ writes only nodeBytesMap, 1.34 only nodeMap."""
    if group in request.nodeBytesMap:
        return node_from_bytes(request.nodeBytesMap[group])
    if group in request.nodeMap:
        return node_from_message(request.nodeMap[group])
    return None


def candidates(request: expander_pb2.BestOptionsRequest) -> list[Candidate]:
    """The request's options as draplan values; MalformedObject on bytes that are not a v1.Pod
    or v1.Node. Upstream's byte fields win over its deprecated message fields. CA sends every
    group's template; only the offered groups' are read."""
    out = []
    decoded: dict[bytes, Pod] = {}  # CA offers the same pods to many groups
    for option in request.options:
        if option.podBytes:
            pods = tuple(
                decoded[raw] if raw in decoded else decoded.setdefault(raw, pod_from_bytes(raw))
                for raw in option.podBytes
            )
        else:
            pods = tuple(
                decoded[raw] if raw in decoded else decoded.setdefault(raw, pod_from_message(p))
                for p in option.pod
                for raw in (p.SerializeToString(deterministic=True),)
            )
        group = option.nodeGroupId
        out.append(Candidate(group, option.nodeCount, pods, _template(request, group)))
    return out


def _log(answer: Answer, best: list[Verdict]) -> None:
    for v in answer.dropped:
        log.info("option %s dropped: %s", v.candidate.group_id, v.reason)
    for v in answer.unjudged:
        log.info("option %s not judged: %s", v.candidate.group_id, v.reason)
    for v in best:
        log.info("option %s chosen: %s", v.candidate.group_id, v.debug())
    if not best and not answer.unjudged:
        log.warning(
            "no option's node group hosts any of its pods (%d offered): Cluster Autoscaler "
            "scales nothing this loop",
            len(answer.dropped),
        )


def _cannot_judge(answer: Answer) -> str:
    if not answer.unjudged:
        return "the request offers no option; Cluster Autoscaler goes on with its own"
    parts = [f"{v.candidate.group_id}: {v.reason}" for v in answer.unjudged[:5]]
    more = f"; {len(answer.unjudged) - 5} more" if len(answer.unjudged) > 5 else ""
    return (
        f"draplan cannot judge {len(answer.unjudged)} option(s) and keeps none of the others "
        f"({'; '.join(parts)}{more}); Cluster Autoscaler goes on with all its options"
    )


class ExpanderServicer(expander_pb2_grpc.ExpanderServicer):
    """BestOptions over the state of `state_provider`, one request at a time."""

    def __init__(
        self,
        state_provider: StateProvider,
        judge: Judge | None = None,
        lock: AbstractContextManager[Any] | None = None,
    ) -> None:
        self.state_provider = state_provider
        self.judge = judge or Judge(Scheduler(build_profile()))
        # The state is forked and reverted per request: whoever else changes it (serve's
        # audited state) shares this lock.
        self.lock: AbstractContextManager[Any] = lock or threading.Lock()

    def BestOptions(
        self, request: expander_pb2.BestOptionsRequest, context: grpc.ServicerContext
    ) -> expander_pb2.BestOptionsResponse:
        answer = None
        # Decoded under the lock too: a caller that shares the interpreter with others
        # (`serve`'s audit) gives way to the request from its start.
        with self.lock:
            try:
                offered = candidates(request)
            except MalformedObject as err:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
            state = self.state_provider()
            if state is not None:
                answer = self.judge.answer(state, offered)
        if answer is None:
            context.abort(grpc.StatusCode.UNAVAILABLE, NOT_READY)
        best = answer.best(self.judge.chain)
        _log(answer, best)
        if not best and (answer.unjudged or not offered):
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, _cannot_judge(answer))
        return expander_pb2.BestOptionsResponse(
            options=[
                expander_pb2.Option(
                    nodeGroupId=v.candidate.group_id,
                    nodeCount=v.candidate.node_count,
                    debug=v.debug(),
                )
                for v in best
            ]
        )


def new_server(workers: int = 4) -> grpc.Server:
    """A gRPC server that takes messages as large as Cluster Autoscaler sends."""
    return grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
        ],
    )


def add_expander(
    server: grpc.Server,
    addr: str,
    tls_cert: str | None,
    tls_key: str | None,
    state_provider: StateProvider,
    *,
    insecure: bool = False,
    judge: Judge | None = None,
    lock: AbstractContextManager[Any] | None = None,
) -> int:
    """Serve the expander on `server` at `addr` (TLS from the PEM files unless `insecure`);
    the port bound."""
    if not insecure and not (tls_cert and tls_key):
        raise TLSRequired("the expander needs --tls-cert and --tls-key (or --insecure)")
    expander_pb2_grpc.add_ExpanderServicer_to_server(
        ExpanderServicer(state_provider, judge, lock), server
    )
    if insecure:
        return server.add_insecure_port(addr)
    assert tls_cert is not None and tls_key is not None
    creds = grpc.ssl_server_credentials([(Path(tls_key).read_bytes(), Path(tls_cert).read_bytes())])
    return server.add_secure_port(addr, creds)


def start_expander_server(
    addr: str,
    tls_cert: str | None,
    tls_key: str | None,
    state_provider: StateProvider,
    *,
    insecure: bool = False,
    judge: Judge | None = None,
    lock: AbstractContextManager[Any] | None = None,
) -> grpc.Server:
    """A started gRPC server answering CA's expander calls at `addr`; stop it with `.stop()`.
    `state_provider` is called under `lock` for every request."""
    server = new_server()
    add_expander(
        server,
        addr,
        tls_cert,
        tls_key,
        state_provider,
        insecure=insecure,
        judge=judge,
        lock=lock,
    )
    server.start()
    return server
