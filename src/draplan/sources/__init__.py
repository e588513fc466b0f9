"""Where objects come from: files, directories, stdin (and, later, a live cluster)."""

from draplan.sources.files import Document, load_objects, read_documents

__all__ = ["Document", "load_objects", "read_documents"]
