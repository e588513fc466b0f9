"""Cluster state: objects, slice indexes, device ledgers, fork / commit / revert."""
