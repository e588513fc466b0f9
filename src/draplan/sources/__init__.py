"""Where objects come from: files, directories, stdin, a live cluster."""

from collections.abc import Sequence

from draplan.api.meta import KubeStruct
from draplan.sources.files import (
    Document,
    Notify,
    gc_paused,
    load_files,
    read_documents,
    stderr_notice,
)
from draplan.sources.nodepools import expand_node_pools


def load_objects(
    paths: Sequence[str], notify: Notify | None = stderr_notice
) -> list[tuple[KubeStruct, str]]:
    """Typed, validated objects with the file each came from; NodePools kept in ConfigMaps
    are unpacked; kinds draplan does not read are skipped with a notice to `notify`."""
    return expand_node_pools(load_files(paths, notify))


__all__ = [
    "Document",
    "Notify",
    "gc_paused",
    "load_files",
    "load_objects",
    "read_documents",
    "stderr_notice",
]
