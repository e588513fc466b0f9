"""Why a pod did not fit: kube-scheduler's "0/N nodes are available: ..." plus the structured
reasons underneath (plugin, allocator code and evidence)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from draplan.allocator import Reason
from draplan.scheduler.framework import Status


@dataclass(frozen=True)
class FitReason:
    """Aggregated over nodes: the printed message, counts per reason code, and evidence."""

    message: str
    nodes: dict[str, int] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    post_filter: str = ""  # the PostFilter plugins' message, already at the end of `message`

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message, "nodes": self.nodes}
        if self.evidence:
            out["evidence"] = self.evidence
        if self.post_filter:
            out["postFilter"] = self.post_filter
        return out

    @property
    def filtered(self) -> str:
        """The message as PreFilter and Filter left it, without the PostFilter plugins'."""
        if not self.post_filter:
            return self.message
        return self.message.removesuffix(" " + self.post_filter)


def reason_code(status: Status) -> str:
    """Allocator failures count by their code; other plugins by their printed reason."""
    if isinstance(status.detail, Reason):
        return status.detail.code
    return status.reasons[0] if status.reasons else status.code.value


def fit_error(
    total: int, statuses: dict[str, Status], sample: int = 3, absent: Status | None = None
) -> FitReason:
    """Aggregate per-node statuses the way kube-scheduler's FitError prints them; `absent`:
    the status of the nodes not in `statuses` (those a PreFilter left out)."""
    printed: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    allocator: dict[str, Any] = {}
    if absent is not None and total > len(statuses):
        tally(printed, codes, absent, total - len(statuses))
    for node, status in sorted(statuses.items()):
        tally(printed, codes, status, 1)
        if isinstance(status.detail, Reason) and len(allocator) < sample:
            allocator[node] = status.detail.to_dict()
    return aggregate(total, printed, codes, allocator)


def tally(printed: Counter[str], codes: Counter[str], status: Status, sign: int) -> None:
    """Count one node's status into (or, with sign -1, out of) a FitError's histograms."""
    for text in set(status.reasons):
        printed[text] += sign
        if not printed[text]:
            del printed[text]
    code = reason_code(status)
    codes[code] += sign
    if not codes[code]:
        del codes[code]


def aggregate(
    total: int, printed: Counter[str], codes: Counter[str], allocator: dict[str, Any]
) -> FitReason:
    """The FitReason of histograms kept by `tally` and the allocator evidence of the first
    nodes (by name) that have some: what `fit_error` computes, for callers that keep the
    histograms up to date as nodes change."""
    # kube-scheduler sorts the whole "<count> <reason>" strings.
    parts = ", ".join(sorted(f"{n} {text}" for text, n in printed.items()))
    message = (
        f"0/{total} nodes are available: {parts}." if parts else f"0/{total} nodes are available."
    )
    evidence = {"allocator": allocator} if allocator else {}
    return FitReason(message, dict(sorted(codes.items())), evidence)


# ErrNoNodesAvailable (schedule_one.go): the whole message when the cluster has no node.
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def pod_level(message: str, code: str, total: int) -> FitReason:
    """A PreFilter or gang failure: the message replaces the per-node histogram."""
    return FitReason(f"0/{total} nodes are available: {message}.", {code: total})


def with_post_filter(reason: FitReason, messages: list[str]) -> FitReason:
    """FitError.Error(): the reasons of the PostFilter plugins that failed, joined by ", ",
    after one space and nothing more (preemption's own message ends with its period)."""
    if not messages:
        return reason
    post = ", ".join(messages)
    return FitReason(f"{reason.message} {post}", reason.nodes, reason.evidence, post)
