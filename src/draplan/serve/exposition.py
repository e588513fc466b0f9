"""`/metrics`: the last published answers' series and the model's health, formatted by
prometheus_client at scrape time (O(series); nothing is computed)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from draplan.serve.loop import AuditLoop
from draplan.serve.model import ClusterModel


class AnswersCollector(Collector):
    """Reads the loop's current answers and the model's health on every scrape."""

    def __init__(self, loop: AuditLoop, model: ClusterModel) -> None:
        self.loop = loop
        self.model = model

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        answers = self.loop.answers
        if answers is not None:
            for family in answers.series:
                gauge = GaugeMetricFamily(family.name, family.help, labels=family.labels)
                for labels, value in family.samples:
                    gauge.add_metric(labels, value)
                yield gauge
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
        ):
            yield CounterMetricFamily(name, help, value=value)


def registry_for(
    loop: AuditLoop, model: ClusterModel, registry: CollectorRegistry
) -> CollectorRegistry:
    """`registry` (holding the loop's histogram) with the answers and the process's own metrics."""
    registry.register(AnswersCollector(loop, model))
    ProcessCollector(registry=registry)
    return registry
