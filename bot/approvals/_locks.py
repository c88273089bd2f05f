"""Named advisory locks on PostgreSQL, held until the caller's transaction ends: what keeps two
writers that would each read "none yet" and both write (two approvals for one dedupe key, two
auto-approvals past one budget, two linkers) one after the other. SQLite needs none: its write
transactions run one at a time.

A lock is named by text parts; its key is the first 8 bytes of the SHA-256 of the parts joined
by NUL. The keys must not change between versions: during a rolling upgrade, old and new
replicas must take the same lock for the same thing.
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["hold", "lock_key"]


def lock_key(*parts: str) -> int:
    """The advisory lock key (a signed 64-bit integer) of the name `parts`."""
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def hold(conn: AsyncConnection, *parts: str) -> None:
    """On PostgreSQL, wait for the lock named `parts` and hold it until `conn`'s transaction
    ends; on SQLite, nothing."""
    if conn.dialect.name == "postgresql":
        await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(lock_key(*parts))))
