"""The HTTP API as a function of a request: (method, path, query) → (status, type, body). It
reads only published answers and the model's health, so it never waits for an audit; the
transport (`draplan.serve.http`) only moves bytes."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs

import msgspec

from draplan.api.codec import encode, json_text
from draplan.audit.documents import why_document
from draplan.serve.answers import Answers
from draplan.serve.exposition import Exposition
from draplan.serve.loop import AuditLoop
from draplan.serve.model import ClusterModel
from draplan.sources.kuberedact import snapshot_document

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"
# The model generation a document was made on: the plan's may be older than the others'.
GENERATION = "Draplan-Generation"


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


# metav1.StatusReason for each code the API answers with.
REASONS = {
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    500: "InternalError",
    503: "ServiceUnavailable",
}


def error(status: int, message: str, *headers: tuple[str, str]) -> Response:
    """A failure as the API server reports one: a metav1.Status."""
    doc = {
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "message": message,
        "reason": REASONS[status],
        "code": status,
    }
    return Response(status, JSON, json_text(doc).encode(), headers)


@dataclass(frozen=True)
class Request:
    query: dict[str, list[str]]
    accept: str = ""
    """The Accept header: Prometheus asks for OpenMetrics or the text format with it."""


@dataclass
class Api:
    loop: AuditLoop
    model: ClusterModel
    exposition: Exposition
    allow_unredacted: bool = False
    redact_key: str = ""

    def handle(self, method: str, path: str, query: str, accept: str = "") -> Response:
        route = ROUTES.get(path)
        if route is None:
            return error(404, f"no such path: {path}")
        if method not in ("GET", "HEAD"):
            return error(405, f"{method} is not allowed on {path}", ("Allow", "GET, HEAD"))
        return route(self, Request(parse_qs(query), accept))

    def metrics(self, request: Request) -> Response:
        content_type, body = self.exposition.render(request.accept)
        return Response(200, content_type, body)

    def healthz(self, request: Request) -> Response:
        if not self.loop.alive:
            return error(500, "the audit loop stopped")
        return Response(200, TEXT, b"ok\n")

    def readyz(self, request: Request) -> Response:
        health = self.model.health()
        if not health.ready:
            return error(503, "the initial lists are not all in")
        if not health.connected:
            stale = time.monotonic() - health.last_contact
            return error(503, f"disconnected from the API server for {stale:.0f}s")
        if not self.loop.first_answers.is_set():
            return error(503, "the first audit is running")
        return Response(200, TEXT, b"ok\n")

    def _answers(self) -> Answers | Response:
        answers = self.loop.answers
        return error(503, "the first audit is running") if answers is None else answers

    def document(self, name: str) -> Response:
        answers = self._answers()
        if isinstance(answers, Response):
            return answers
        return Response(200, JSON, answers.bodies[name], _generation(answers, name))

    def why(self, request: Request) -> Response:
        namespace = request.query.get("namespace", [""])[-1]
        pod = request.query.get("pod", [""])[-1]
        if not namespace and not pod:
            return self.document("why")
        answers = self._answers()
        if isinstance(answers, Response):
            return answers

        def shown(key: tuple[str, str]) -> bool:
            return (not namespace or key[0] == namespace) and (not pod or key[1] == pod)

        doc = why_document(answers.diagnoses, shown)
        if pod and not doc["pods"]:
            return error(404, f"no pending pod {namespace or '*'}/{pod}")
        return Response(200, JSON, json_text(doc).encode(), _generation(answers, "why"))

    def snapshot(self, request: Request) -> Response:
        redact = request.query.get("redact", ["true"])[-1].lower() not in ("false", "0", "no")
        if not redact and not self.allow_unredacted:
            return error(403, "unredacted snapshots need --allow-unredacted-snapshot")
        answers = self._answers()
        if isinstance(answers, Response):
            return answers
        items = [encode(obj) for obj in answers.objects]
        doc = snapshot_document(items, redact=redact, key=self.redact_key)
        # As `draplan snapshot -o json` writes it.
        body = msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n"
        return Response(200, JSON, body, _generation(answers, "snapshot"))


def _generation(answers: Answers, document: str) -> tuple[tuple[str, str]]:
    generation = answers.plan.generation if document == "plan" else answers.generation
    return ((GENERATION, str(generation)),)


Route = Callable[[Api, Request], Response]
ROUTES: dict[str, Route] = {
    "/metrics": Api.metrics,
    "/healthz": Api.healthz,
    "/readyz": Api.readyz,
    "/v1/why": Api.why,
    "/v1/metrics": lambda api, _: api.document("metrics"),
    "/v1/plan": lambda api, _: api.document("plan"),
    "/v1/snapshot": Api.snapshot,
}
