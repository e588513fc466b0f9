"""Cluster Autoscaler's gRPC expander served by draplan (`draplan expander`, `serve`)."""

from draplan.grpcplugin.judge import Answer, Candidate, Judge, Verdict
from draplan.grpcplugin.server import (
    ExpanderServicer,
    TLSRequired,
    add_expander,
    start_expander_server,
)

__all__ = [
    "Answer",
    "Candidate",
    "ExpanderServicer",
    "Judge",
    "TLSRequired",
    "Verdict",
    "add_expander",
    "start_expander_server",
]
