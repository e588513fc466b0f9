"""`/metrics`: the last published answers' series and the model's health, formatted by
prometheus_client. The answers' part (tens of thousands of series on a large cluster) is
formatted once per audit and format, in the audit thread; a scrape formats only the health part
and joins the two."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from draplan.serve.answers import Answers
from draplan.serve.loop import AuditLoop
from draplan.serve.model import ClusterModel


class AnswersCollector(Collector):
    """The series of one published `Answers`."""

    def __init__(self, answers: Answers) -> None:
        self.answers = answers

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for family in self.answers.series:
            gauge = GaugeMetricFamily(family.name, family.help, labels=family.labels)
            for labels, value in family.samples:
                gauge.add_metric(labels, value)
            yield gauge


class HealthCollector(Collector):
    """The model's health and the loop's state, read on every scrape."""

    def __init__(self, loop: AuditLoop, model: ClusterModel) -> None:
        self.loop = loop
        self.model = model

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        answers = self.loop.answers
        health = self.model.health()
        now = time.monotonic()
        yield GaugeMetricFamily(
            "draplan_model_ready", "1 once every initial list is in.", value=health.ready
        )
        yield GaugeMetricFamily(
            "draplan_model_connected",
            "1 while the last list, watch or bookmark reached the API server.",
            value=health.connected,
        )
        yield GaugeMetricFamily(
            "draplan_model_stale_seconds",
            "Seconds since the model last heard from the API server.",
            value=max(0.0, now - health.last_contact),
        )
        yield GaugeMetricFamily(
            "draplan_watch_lag_seconds",
            "From the arrival of the newest event to the publication of answers including it.",
            value=self.loop.lag,
        )
        yield GaugeMetricFamily(
            "draplan_answers_age_seconds",
            "Seconds since the current answers were published.",
            value=now - answers.published if answers is not None else 0.0,
        )
        yield GaugeMetricFamily(
            "draplan_plan_age_seconds",
            "Seconds since the scale plan /v1/plan serves was made (by the planner process, "
            "the newest generation it holds, one plan after another).",
            value=now - answers.plan.published if answers is not None else 0.0,
        )
        yield GaugeMetricFamily(
            "draplan_plan_seconds",
            "How long making that plan took.",
            value=answers.plan.seconds if answers is not None else 0.0,
        )
        yield GaugeMetricFamily(
            "draplan_plan_generations_behind",
            "Model generations the scale plan is older than the other answers.",
            value=answers.generation - answers.plan.generation if answers is not None else 0,
        )
        for name, help, value in (
            ("draplan_events_applied", "Watch events applied to the model.", health.events_applied),
            ("draplan_relists", "Full relists (after 410 Gone or a lost watch).", health.relists),
            (
                "draplan_bad_objects",
                "Objects skipped: failed to decode or validate.",
                health.bad_objects,
            ),
            (
                "draplan_audit_errors",
                "Audits that failed (the last answers stayed up).",
                self.loop.errors,
            ),
            (
                "draplan_plan_errors",
                "Scale plans that failed and planner processes that died (the last plan stayed).",
                self.loop.auditor.plan_errors,
            ),
        ):
            yield CounterMetricFamily(name, help, value=value)


class Exposition:
    """`/metrics` in the format a scraper asks for (Accept header)."""

    def __init__(self, loop: AuditLoop, model: ClusterModel, registry: CollectorRegistry) -> None:
        """`registry` holds the loop's histogram; the health and the process's own metrics are
        added to it."""
        self.loop = loop
        self.live = registry
        registry.register(HealthCollector(loop, model))
        ProcessCollector(registry=registry)
        self._lock = threading.Lock()
        self._answers: Answers | None = None
        self._rendered: dict[str, bytes] = {}
        loop.listeners.append(self.prerender)

    def render(self, accept: str = "") -> tuple[str, bytes]:
        """The content type and the body."""
        encoder, content_type = choose_encoder(accept)
        cluster = self._cluster(encoder, content_type)
        return content_type, cluster + encoder(self.live)

    def prerender(self, answers: Answers) -> None:
        """Format the new answers' series in the default format now (an audit loop listener),
        so that no scrape pays for it."""
        self._cluster(*choose_encoder(""))

    def _cluster(self, encoder: Callable[[CollectorRegistry], bytes], content_type: str) -> bytes:
        answers = self.loop.answers
        if answers is None:
            return b""
        with self._lock:
            if answers is not self._answers:
                self._answers, self._rendered = answers, {}
            body = self._rendered.get(content_type)
            if body is None:
                registry = CollectorRegistry(auto_describe=False)
                registry.register(AnswersCollector(answers))
                # OpenMetrics ends a body with one "# EOF": the live part brings it.
                body = encoder(registry).removesuffix(b"# EOF\n")
                self._rendered[content_type] = body
            return body
