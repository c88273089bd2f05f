"""Deleting, as transactions on one cursor: a thread, its old checkpoints, finished threads."""

from __future__ import annotations

from datetime import timedelta

from ...errors import CheckpointFormatError
from .. import serde
from .engine import _Tx
from .statements import _Dialect
from .values import _bytes, _format_error, _now


def _delete_tx(tx: _Tx, dialect: _Dialect, thread_id: str) -> None:
    sql = dialect.sql
    for name in ("delete_threads", "delete_checkpoints", "delete_blobs", "delete_writes"):
        tx.run(sql[name], {"t": thread_id})


def _thread_keys_tx(tx: _Tx, dialect: _Dialect, thread_id: str | None) -> list[tuple[str, str]]:
    if thread_id is None:
        rows = tx.all(dialect.sql["all_thread_keys"])
    else:
        rows = tx.all(dialect.sql["thread_keys"], {"t": thread_id})
    return [(t, ns) for t, ns in rows]


def _prune_tx(tx: _Tx, dialect: _Dialect, thread_id: str, ns: str, keep_last: int) -> int:
    sql = dialect.sql
    key = {"t": thread_id, "ns": ns}
    tx.all(sql["lock_thread_row"], key)  # waits for a put under way (PG)
    rows = tx.all(sql["prune_list"], key)
    if len(rows) <= keep_last:
        return 0
    kept = rows[:keep_last]
    needed: set[tuple[str, int]] = set()
    for checkpoint_id, record in kept:
        try:
            versions = serde.loads_record(_bytes(record))["channel_versions"]
        except (CheckpointFormatError, KeyError, TypeError) as e:
            raise _format_error(thread_id, None, f"checkpoint {checkpoint_id!r}: {e}") from e
        needed.update(versions.items())
    prev_of = {(c, v): prev for c, v, prev in tx.all(sql["blob_keys"], key)}
    keep: set[tuple[str, int]] = set()
    for c, v in needed:
        at: int | None = v
        while at is not None and (c, at) in prev_of and (c, at) not in keep:
            keep.add((c, at))
            at = prev_of[(c, at)]
    oldest = {**key, "oldest": kept[-1][0]}
    tx.run(sql["prune_checkpoints"], oldest)
    tx.run(sql["prune_writes"], oldest)
    doomed = [{**key, "c": c, "v": v} for (c, v) in prev_of if (c, v) not in keep]
    if doomed:
        tx.many(sql["delete_blob"], doomed)
    return len(rows) - keep_last


def _prune_finished_tx(tx: _Tx, dialect: _Dialect, older_than: timedelta) -> int:
    sql = dialect.sql
    cutoff = _now() - older_than.total_seconds()
    keys = tx.all(sql["finished"], {"cutoff": cutoff})
    if not keys:
        return 0
    # The rows are locked (PostgreSQL) or the file is (SQLite): they are still done and old.
    plain = [{"t": t, "ns": ns} for t, ns in keys]
    for name in (
        "delete_key_threads",
        "delete_key_checkpoints",
        "delete_key_blobs",
        "delete_key_writes",
    ):
        tx.many(sql[name], plain)
    return len(keys)
