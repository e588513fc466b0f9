"""Where objects come from: files, directories, stdin, a live cluster."""

from collections.abc import Sequence

from draplan.api.meta import KubeStruct
from draplan.sources.files import Document, load_files, read_documents
from draplan.sources.nodepools import expand_node_pools


def load_objects(paths: Sequence[str]) -> list[tuple[KubeStruct, str]]:
    """Typed, validated objects with the file each came from; NodePools kept in ConfigMaps
    are unpacked."""
    return expand_node_pools(load_files(paths))


__all__ = ["Document", "load_files", "load_objects", "read_documents"]
