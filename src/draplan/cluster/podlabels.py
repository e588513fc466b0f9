"""Which nodes may hold pods of a namespace with a label: a superset, for the first pass of a
per-domain count (cluster.nodesums) to skip the nodes that cannot hold a matching pod.

Every pod the state has ever held is filed under its namespace and under each of its label
pairs, whatever a fork later reverts and whatever is deleted since: a superset is all a first
pass needs (it counts each node it visits exactly). The files are rebuilt from the pods table
once they hold many times more entries than it, outside any fork (a fork's revert could bring
back a pod the rebuild would have dropped).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from draplan.api.core_v1 import Pod

ObjectKey = tuple[str, str]
Posting = tuple[str, str, str]  # (namespace, label key, label value); key "" files the namespace


class PodLabels:
    """Pod keys by (namespace, label key, label value), and by namespace alone."""

    __slots__ = ("_base", "_filed", "_files")

    def __init__(self) -> None:
        self._files: dict[Posting, set[ObjectKey]] = {}
        self._filed = 0
        self._base = 0  # entries just after the last rebuild

    def add(self, key: ObjectKey, pod: Pod) -> None:
        ns = key[0]
        files = self._files
        for posting in ((ns, "", ""), *((ns, k, v) for k, v in pod.metadata.labels.items())):
            keys = files.get(posting)
            if keys is None:
                keys = files[posting] = set()
            if key not in keys:
                keys.add(key)
                self._filed += 1

    def candidates(self, namespace: str, labels: Mapping[str, Iterable[str]]) -> set[ObjectKey]:
        """The pods filed in `namespace` under one of the values of each key of `labels` (the
        fewest of the keys' unions); every pod of the namespace when `labels` is empty."""
        files = self._files
        best: set[ObjectKey] | None = None
        for key, values in labels.items():
            union: set[ObjectKey] = set()
            for value in values:
                union |= files.get((namespace, key, value), set())
            if best is None or len(union) < len(best):
                best = union
        if best is None:
            return set(files.get((namespace, "", ""), ()))
        return best

    @property
    def crowded(self) -> bool:
        """Whether the files grew to four times what the last rebuild left (pods come and go,
        their entries stay)."""
        return self._filed > 4 * max(self._base, 1 << 14)

    def rebuild(self, pods: Iterator[tuple[ObjectKey, Pod]]) -> None:
        self._files.clear()
        self._filed = 0
        for key, pod in pods:
            self.add(key, pod)
        self._base = self._filed
