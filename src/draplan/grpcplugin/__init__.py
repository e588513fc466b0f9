"""Cluster Autoscaler's gRPC expander served by draplan (`draplan expander`, `serve`).

The server (`draplan.grpcplugin.server`: `start_expander_server`, `add_expander`) is imported
on its own, so that what only judges options (the simulator) does not load gRPC."""

from draplan.grpcplugin.judge import Answer, Candidate, Judge, Verdict, ca_chooser

__all__ = ["Answer", "Candidate", "Judge", "Verdict", "ca_chooser"]
