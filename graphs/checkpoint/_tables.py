"""Moved to `_sql/tables.py`: this name stays for code that imports it from here.

Private, like the module it points at; import `graphs.checkpoint._sql.tables` instead.
"""

from ._sql.tables import (
    SCHEMA_REVISION,
    VERSION_TABLE,
    Id,
    blobs,
    checkpoints,
    metadata,
    threads,
    writes,
)

__all__ = [
    "SCHEMA_REVISION",
    "VERSION_TABLE",
    "Id",
    "blobs",
    "checkpoints",
    "metadata",
    "threads",
    "writes",
]
