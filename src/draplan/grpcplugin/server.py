"""Cluster Autoscaler's gRPC expander (`--expander=grpc --grpc-expander-url=ADDR
--grpc-expander-cert=CA.pem`), answered by draplan: `grpcplugin.Expander/BestOptions`.

CA sends its scale-up options (node group id, node count, the pods) and each group's template
node; draplan answers with the options that really host their pods, best first, or none (CA
then falls back to its next expander). Requests are judged one at a time against the state
`state_provider` returns, in a fork that is reverted."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent import futures
from pathlib import Path

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
from draplan.grpcplugin.judge import Answer, Candidate, Judge
from draplan.grpcplugin.protos import expander_pb2, expander_pb2_grpc
from draplan.scheduler import Scheduler, build_profile

log = logging.getLogger("draplan.grpcplugin")

StateProvider = Callable[[], ClusterState]


class TLSRequired(ValueError):
    """The expander was asked to listen without a certificate and key, and not --insecure."""


def candidates(request: expander_pb2.BestOptionsRequest) -> list[Candidate]:
    """The request's options as draplan values; MalformedObject on bytes that are not a v1.Pod
    or v1.Node. Upstream's byte fields win over its deprecated message fields."""
    templates: dict[str, Node] = {}
    for group, raw in sorted(request.nodeBytesMap.items()):
        templates[group] = node_from_bytes(raw)
    for group, message in sorted(request.nodeMap.items()):
        if group not in templates:
            templates[group] = node_from_message(message)
    out = []
    decoded: dict[bytes, Pod] = {}  # CA offers the same pods to many groups
    for option in request.options:
        if option.podBytes:
            pods = tuple(
                decoded[raw] if raw in decoded else decoded.setdefault(raw, pod_from_bytes(raw))
                for raw in option.podBytes
            )
        else:
            pods = tuple(pod_from_message(p) for p in option.pod)
        out.append(
            Candidate(option.nodeGroupId, option.nodeCount, pods, templates.get(option.nodeGroupId))
        )
    return out


def _log(answer: Answer) -> None:
    for v in answer.dropped:
        log.info("option %s dropped: %s", v.candidate.group_id, v.reason)
    if not answer.kept:
        log.warning(
            "no option fits (%d offered); Cluster Autoscaler falls back to its next expander",
            len(answer.dropped),
        )


class ExpanderServicer(expander_pb2_grpc.ExpanderServicer):
    """BestOptions over the state of `state_provider`, one request at a time."""

    def __init__(
        self,
        state_provider: StateProvider,
        judge: Judge | None = None,
        lock: threading.Lock | None = None,
    ) -> None:
        self.state_provider = state_provider
        self.judge = judge or Judge(Scheduler(build_profile()))
        # The state is forked and reverted per request: whoever else changes it (serve's
        # watch) shares this lock.
        self.lock = lock or threading.Lock()

    def BestOptions(
        self, request: expander_pb2.BestOptionsRequest, context: grpc.ServicerContext
    ) -> expander_pb2.BestOptionsResponse:
        try:
            offered = candidates(request)
        except MalformedObject as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        with self.lock:
            answer = self.judge.answer(self.state_provider(), offered)
        _log(answer)
        by_group = {o.nodeGroupId: o for o in request.options}
        return expander_pb2.BestOptionsResponse(
            options=[by_group[v.candidate.group_id] for v in answer.kept]
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
    lock: threading.Lock | None = None,
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
    lock: threading.Lock | None = None,
) -> grpc.Server:
    """A started gRPC server answering CA's expander calls at `addr`; stop it with `.stop()`.
    `state_provider` is called under `lock` for every request."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
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
