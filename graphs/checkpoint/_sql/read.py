"""Reading, as transactions on one cursor: `get_tuple`, `list` and `list_paused`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..._types import Interrupt, RunConfig
from ..base import INTERRUPT, RESUME, CheckpointTuple, config_checkpoint_id
from .engine import _Tx
from .statements import _NO_LIMIT, _Dialect
from .values import _assemble, _BlobRows, _decode, _record, _ts

_BATCH = 100  # checkpoints per round of blob/write loading in `list`


def _get_tx(
    tx: _Tx, dialect: _Dialect, thread_id: str, ns: str, checkpoint_id: str | None
) -> CheckpointTuple | None:
    sql = dialect.sql
    params = {"t": thread_id, "ns": ns}
    if checkpoint_id:
        row = tx.one(sql["checkpoint"], {**params, "id": checkpoint_id})
    else:
        row = tx.one(sql["head_checkpoint"], params)
    if row is None:
        return None
    return _load(tx, dialect, [tuple(row)])[0]


def _list_tx(
    tx: _Tx,
    dialect: _Dialect,
    key: tuple[str, str | None] | None,
    before: RunConfig | None,
    limit: int | None,
) -> list[CheckpointTuple]:
    if dialect.pg:  # one snapshot for every statement below
        tx.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    params: dict[str, Any] = {"limit": _NO_LIMIT if limit is None else max(limit, 0)}
    suffix = ""
    before_id = config_checkpoint_id(before) if before else None
    if before_id is not None:
        params["before"], suffix = before_id, "_before"
    if key is None:
        rows = tx.all(dialect.sql["list_all" + suffix], params)
    elif key[1] is None:  # every namespace of the thread
        params.update(t=key[0])
        rows = tx.all(dialect.sql["list_thread_all_ns" + suffix], params)
    else:
        params.update(t=key[0], ns=key[1])
        rows = tx.all(dialect.sql["list_thread" + suffix], params)
    out: list[CheckpointTuple] = []
    start = 0
    while start < len(rows):
        # a batch: consecutive rows of one thread, at most _BATCH of them
        end = start + 1
        while end < len(rows) and end - start < _BATCH and rows[end][:2] == rows[start][:2]:
            end += 1
        out.extend(_load(tx, dialect, [tuple(r) for r in rows[start:end]]))
        start = end
    return out


def _load(tx: _Tx, dialect: _Dialect, rows: list[tuple[Any, ...]]) -> list[CheckpointTuple]:
    """Tuples for checkpoint rows of one thread: two more statements for all of them."""
    thread_id, ns = rows[0][0], rows[0][1]
    records = [_record(thread_id, row) for row in rows]
    ranges: dict[str, list[int]] = {}
    for record in records:
        for channel, version in record["channel_versions"].items():
            span = ranges.get(channel)
            if span is None:
                ranges[channel] = [version, version]
            else:
                span[0] = min(span[0], version)
                span[1] = max(span[1], version)
    blob_rows: _BlobRows = {}
    channels = list(ranges)
    for chunk in range(0, len(channels), 200):
        part = channels[chunk : chunk + 200]
        params: dict[str, Any] = {"t": thread_id, "ns": ns}
        for i, channel in enumerate(part):
            params[f"c{i}"] = channel
            params[f"lo{i}"], params[f"hi{i}"] = ranges[channel]
        for c, v, prev, total, value in tx.all(dialect.blobs(len(part)), params):
            blob_rows[(c, v)] = (prev, total, value)
    ids = [row[2] for row in rows]
    params = {"t": thread_id, "ns": ns, **{f"id{i}": cid for i, cid in enumerate(ids)}}
    writes: dict[str, list[tuple[str, str, Any]]] = {cid: [] for cid in ids}
    for cid, task_id, channel, value in tx.all(dialect.writes(len(ids)), params):
        writes[cid].append((task_id, channel, value))
    return [
        _assemble(thread_id, ns, row, record, blob_rows, writes[row[2]])
        for row, record in zip(rows, records)
    ]


def _get_pg(
    tx: _Tx, dialect: _Dialect, thread_id: str, ns: str, checkpoint_id: str | None
) -> CheckpointTuple | None:
    """PostgreSQL: `get_tuple` in one statement (the checkpoint, its writes, its values)."""
    params = {"t": thread_id, "ns": ns, "id": checkpoint_id}
    try:
        result = tx.rows(dialect.get_statement(bool(checkpoint_id)), params)
    except Exception as e:
        if str(getattr(e, "sqlstate", "") or "").startswith("22"):
            # the record is not JSON the server can read: let the general path say why
            return _get_tx(tx, dialect, thread_id, ns, checkpoint_id)
        raise
    return _get_rows(tx, dialect, thread_id, ns, checkpoint_id, result)


def _get_rows(
    tx: _Tx,
    dialect: _Dialect,
    thread_id: str,
    ns: str,
    checkpoint_id: str | None,
    result: list[Any],
) -> CheckpointTuple | None:
    """`_get_pg`'s tuple from its statement's rows (read already, as in the round trip that
    takes a thread's lock); `tx` reads what they lack."""
    row = None
    writes: list[tuple[int, str, str, Any]] = []
    blob_rows: _BlobRows = {}
    for kind, a, b, n, prev, total, value, meta in result:
        if kind == 0:
            row = (thread_id, ns, a, b, value, meta)
        elif kind == 1:
            writes.append((n, a, b, value))
        else:
            blob_rows[(b, n)] = (prev, total, value)
    if row is None:
        return None
    record = _record(thread_id, row)
    if any((c, v) not in blob_rows for c, v in record["channel_versions"].items()):
        return _get_tx(tx, dialect, thread_id, ns, checkpoint_id)  # a value missing: look closer
    writes.sort(key=lambda w: w[0])
    return _assemble(thread_id, ns, row, record, blob_rows, [w[1:] for w in writes])


_get_pg._single_statement = True  # type: ignore[attr-defined]
_get_rows._single_statement = True  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class PausedThread:
    """A thread waiting on someone, as `SQLSaver.list_paused` reports it."""

    thread_id: str
    checkpoint_ns: str
    """The namespace within the thread (`""` by default)."""
    checkpoint_id: str
    """The head checkpoint: where the thread resumes from."""
    paused_since: datetime
    """When the pause began (UTC); unchanged by later writes while it stays paused."""
    interrupts: tuple[Interrupt, ...]
    """The `interrupt()` payloads that have no answer yet (empty for a static pause)."""
    paused_nodes: tuple[str, ...]
    """The nodes of a static pause (`interrupt_before`/`interrupt_after`); empty otherwise."""

    @property
    def config(self) -> RunConfig:
        """The config that names this thread, for `invoke`/`get_state`."""
        return {"configurable": {"thread_id": self.thread_id, "checkpoint_ns": self.checkpoint_ns}}


def _with_interrupts(paused: PausedThread, pending: dict[str, Any]) -> PausedThread:
    return dataclasses.replace(paused, interrupts=tuple(pending.values()))


def _paused_tx(
    tx: _Tx, dialect: _Dialect, paused_before: datetime | None, limit: int | None
) -> list[PausedThread]:
    params = {
        "before": paused_before.timestamp() if paused_before else 1e300,
        "limit": _NO_LIMIT if limit is None else max(limit, 0),
        "subgraph": "%:%",
    }
    out: list[PausedThread] = []
    pending: dict[str, Any] = {}
    for thread_id, ns, head, since, nodes, channel, iid, value in tx.all(
        dialect.sql["list_paused"], params
    ):
        if not out or (out[-1].thread_id, out[-1].checkpoint_ns) != (thread_id, ns):
            if out:
                out[-1] = _with_interrupts(out[-1], pending)
            pending = {}
            out.append(
                PausedThread(
                    thread_id=thread_id,
                    checkpoint_ns=ns,
                    checkpoint_id=head,
                    paused_since=_ts(since),
                    interrupts=(),
                    paused_nodes=tuple(_decode(thread_id, None, nodes)) if nodes else (),
                )
            )
        if channel == INTERRUPT:
            pending.pop(iid, None)  # asked again: it moves to the end
            pending[iid if iid is not None else f"#{len(pending)}"] = _decode(
                thread_id, INTERRUPT, value
            )
        elif channel == RESUME:
            pending.pop(iid, None)
    if out:
        out[-1] = _with_interrupts(out[-1], pending)
    return out


_paused_tx._single_statement = True  # type: ignore[attr-defined]
