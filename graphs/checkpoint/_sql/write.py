"""Writing, as transactions on one cursor: `put` and `put_writes`.

Values are serialized before the transaction begins (`_put_args`, `_writes_args`): a value that
cannot be stored changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._types import RunConfig
from ...errors import CheckpointConflictError
from .. import _delta, serde
from ..base import (
    ERROR,
    INTERRUPT,
    ONCE,
    RESUME,
    Checkpoint,
    CheckpointMetadata,
    checkpoint_record,
    config_checkpoint_id,
)
from .engine import _Tx
from .statements import _Dialect
from .values import _now
from .wire import Statement

_SPECIAL = frozenset((INTERRUPT, RESUME, ERROR))
_BEGIN: Statement = ("BEGIN", None)
_COMMIT: Statement = ("COMMIT", None)


def _is_broken_chain(error: BaseException) -> bool:
    """PostgreSQL refused an append row: its previous version is not the list it extends."""
    diag = getattr(error, "diag", None)
    return (
        getattr(error, "sqlstate", None) == "23502"
        and getattr(diag, "column_name", None) == "full_version"
    )


def _is_outcome(writes: Sequence[tuple[str, Any]]) -> bool:
    """The writes are the record of a `once()` effect's outcome ("done", "failed"): written
    whether or not the run still holds its thread's lock, since the effect did run."""
    if len(writes) != 1 or writes[0][0] != ONCE:
        return False
    value = writes[0][1]
    return isinstance(value, (list, tuple)) and len(value) == 3 and value[1] != "started"


def _put_args(
    key: tuple[str, str],
    config: RunConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: dict[str, int],
    heads: _delta.Heads,
) -> tuple[Any, ...]:
    # Serialize before touching the database: a value that cannot be stored changes nothing.
    thread_id, ns = key
    parent_id = config_checkpoint_id(config)
    values = checkpoint["channel_values"]
    appended = checkpoint.get("appended") or {}
    full: list[dict[str, Any]] = []
    deltas: list[tuple[dict[str, Any], list[Any]]] = []
    for channel, version in new_versions.items():
        row: dict[str, Any] = {"t": thread_id, "ns": ns, "c": channel, "v": version}
        if channel not in values:
            full.append({**row, "total": None, "value": None})
            continue
        value = values[channel]
        total = len(value) if type(value) is list else None
        n = appended.get(channel, 0)
        if parent_id and total is not None and 0 < n < total:
            delta = {**row, "total": total, "prev_total": total - n}
            delta["value"] = serde.dumps(value[-n:]).encode()
            deltas.append((delta, list(value)))
        elif total and (edit := heads.edit(key, parent_id, channel, value)) is not None:
            # An update by id (or a removal): the changes alone, chained like an append.
            delta = {**row, "total": total, "prev_total": edit[0]}
            delta["value"] = serde.dumps(_delta.edit_json(edit[1])).encode()
            deltas.append((delta, list(value)))
        else:
            full.append({**row, "total": total, "value": serde.dumps(value).encode()})
    record = serde.dumps_record(checkpoint_record(checkpoint, compact=True)).encode()
    paused = list(checkpoint["paused"])
    if paused:
        status = "paused"
    elif not checkpoint["next_tasks"]:
        status = "done"
    else:
        status = "running"
    return (
        thread_id,
        ns,
        checkpoint["id"],
        parent_id,
        status,
        serde.dumps(paused).encode() if paused else None,
        record,
        serde.dumps(dict(metadata)).encode(),
        full,
        deltas,
    )


def _stored_lists(
    heads: _delta.Heads,
    key: tuple[str, str],
    config: RunConfig,
    checkpoint: Checkpoint,
    new_versions: dict[str, int],
) -> None:
    """After a `put` committed: remember its list channels, to store the next versions as edits."""
    values = checkpoint["channel_values"]
    lists = {
        channel: (version, list(values[channel]))
        for channel, version in new_versions.items()
        if type(values.get(channel)) is list
    }
    finished = not checkpoint["next_tasks"] and not checkpoint["paused"]
    heads.stored(key, config_checkpoint_id(config), checkpoint["id"], lists, finished)


def _put_tx(
    tx: _Tx,
    dialect: _Dialect,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    parent_id: str | None,
    status: str,
    nodes: bytes | None,
    record: bytes,
    meta: bytes,
    full: list[dict[str, Any]],
    deltas: list[tuple[dict[str, Any], list[Any]]],
) -> None:
    sql = dialect.sql
    now = _now()
    head = {"t": thread_id, "ns": ns, "id": checkpoint_id, "status": status, "now": now}
    head["finished"] = now if status == "done" else None
    if parent_id is None:
        head.update(paused_since=now if status == "paused" else None, nodes=nodes)
        moved = tx.count(sql["insert_thread"], head)
    elif status == "paused":
        head.update(parent=parent_id, nodes=nodes)
        moved = tx.count(sql["advance_thread_paused"], head)
    else:
        head["parent"] = parent_id
        moved = tx.count(sql["advance_thread"], head)
    if moved != 1:
        row = tx.one(sql["head"], {"t": thread_id, "ns": ns})
        current = row[0] if row else None
        if current == checkpoint_id:
            return  # stored already: a retry after the connection dropped during COMMIT
        raise CheckpointConflictError(
            f"thread {thread_id!r} moved on: its head is {current!r}, not {parent_id!r}; "
            "another run wrote to it",
            thread_id,
        )
    tx.run(
        sql["insert_checkpoint"],
        {
            "t": thread_id,
            "ns": ns,
            "id": checkpoint_id,
            "parent": parent_id,
            "record": record,
            "meta": meta,
        },
    )
    for delta, whole in deltas:
        if tx.count(sql["append_blob"], delta) != 1:
            # The stored previous version is not the list this one extends (it was written
            # before a delete, or `appended` disagrees with it): store the value whole.
            full.append({**delta, "value": serde.dumps(whole).encode()})
    if full:
        tx.many(sql["insert_blob"], full)


def _put_pg_statement(
    dialect: _Dialect,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    parent_id: str | None,
    status: str,
    nodes: bytes | None,
    record: bytes,
    meta: bytes,
    full: list[dict[str, Any]],
    deltas: list[tuple[dict[str, Any], list[Any]]],
    *,
    strict: bool = False,
) -> tuple[str, dict[str, Any]]:
    """`_put_tx` as one PostgreSQL statement (a data-modifying WITH) and its parameters; it
    returns 1 if the head moved, else 0, or with `strict` fails (`_NOT_MOVED`)."""
    now = _now()
    params: dict[str, Any] = {
        "t": thread_id,
        "ns": ns,
        "id": checkpoint_id,
        "parent": parent_id,
        "status": status,
        "now": now,
        "nodes": nodes,
        "record": record,
        "meta": meta,
        "paused_since": now if status == "paused" else None,
        "finished": now if status == "done" else None,
    }
    for i, row in enumerate(full):
        params[f"c{i}"], params[f"v{i}"] = row["c"], row["v"]
        params[f"total{i}"], params[f"value{i}"] = row["total"], row["value"]
    for i, (d, _) in enumerate(deltas):
        params[f"dc{i}"], params[f"dv{i}"], params[f"dtotal{i}"] = d["c"], d["v"], d["total"]
        params[f"dprev{i}"], params[f"dvalue{i}"] = d["prev_total"], d["value"]
    head = "insert" if parent_id is None else "paused" if status == "paused" else "advance"
    return dialect.put_statement(head, len(full), len(deltas), strict), params


def _check_moved(
    tx: _Tx, dialect: _Dialect, thread_id: str, ns: str, checkpoint_id: str, parent_id: Any
) -> None:
    """The head did not move to `checkpoint_id`: stored already (a retry after the connection
    dropped during COMMIT), or another run wrote to the thread (`CheckpointConflictError`)."""
    row = tx.one(dialect.sql["head"], {"t": thread_id, "ns": ns})
    current = row[0] if row else None
    if current == checkpoint_id:
        return
    raise CheckpointConflictError(
        f"thread {thread_id!r} moved on: its head is {current!r}, not {parent_id!r}; "
        "another run wrote to it",
        thread_id,
    )


def _put_pg(
    tx: _Tx,
    dialect: _Dialect,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    parent_id: str | None,
    status: str,
    nodes: bytes | None,
    record: bytes,
    meta: bytes,
    full: list[dict[str, Any]],
    deltas: list[tuple[dict[str, Any], list[Any]]],
) -> None:
    """`_put_tx` as one statement (PostgreSQL's data-modifying WITH): one round trip."""
    args = (thread_id, ns, checkpoint_id, parent_id, status, nodes, record, meta)
    try:
        moved = tx.value(*_put_pg_statement(dialect, *args, full, deltas))
    except Exception as e:
        if not (deltas and _is_broken_chain(e)):
            raise
        # An appended list whose stored previous version is not what it extends: the
        # statement failed whole; store every value whole instead.
        wholes = [{**d, "value": serde.dumps(whole).encode()} for d, whole in deltas]
        return _put_pg(tx, dialect, *args, full + wholes, [])
    if moved != 1:
        _check_moved(tx, dialect, thread_id, ns, checkpoint_id, parent_id)
    return None


_put_pg._single_statement = True  # type: ignore[attr-defined]


def _and_unlock(tx: _Tx, lock_key: int, statement: tuple[str, dict[str, Any]]) -> bool:
    """`statement` as a transaction on the connection that holds the thread's lock (psycopg's),
    and the lock let go of right after its COMMIT: BEGIN, the statement, COMMIT and the unlock
    in one pipeline, one round trip. Whoever takes the lock next sees the write
    committed; a statement that fails stops the pipeline before its COMMIT and the unlock.
    Returns whether the lock was let go of."""
    unlock = ("SELECT pg_advisory_unlock(%(k)s)", {"k": lock_key})
    if tx.pipelines:
        return bool(tx.send([_BEGIN, statement, _COMMIT, unlock])[0][0])
    conn = tx.cur.connection
    cur = tx.cur
    with conn.pipeline():
        cur.execute("BEGIN")
        cur.execute(*statement)
        cur.execute("COMMIT")
        cur.execute(*unlock)
    return bool(cur.fetchone()[0])


def _put_last_pg(tx: _Tx, dialect: _Dialect, lock_key: int, *args: Any) -> bool:
    """`_put_pg` of a checkpoint that ends the run, with the thread's lock let go of after it
    (`_and_unlock`). Returns whether it was (not when the put was stored already, or its
    lists were stored whole after a broken append chain)."""
    try:
        return _and_unlock(tx, lock_key, _put_pg_statement(dialect, *args, strict=True))
    except Exception as e:
        stored = getattr(e, "sqlstate", None) == _NOT_MOVED
        if not (stored or _is_broken_chain(e)):
            raise
        tx.rollback()
        if stored:
            _check_moved(tx, dialect, *args[:4])  # returns if it was stored already
        else:
            _put_pg(tx, dialect, *args)
        return False


def _writes_last_pg(tx: _Tx, dialect: _Dialect, lock_key: int, *args: Any) -> bool:
    """`_writes_pg` of writes that end the run (a pause), with the thread's lock let go of
    after them (`_and_unlock`)."""
    return _and_unlock(tx, lock_key, _writes_pg_statement(dialect, *args))


_writes_last_pg._single_statement = True  # type: ignore[attr-defined]
_put_last_pg._single_statement = True  # type: ignore[attr-defined]


def _writes_args(
    key: tuple[str, str], config: RunConfig, writes: Sequence[tuple[str, Any]], task_id: str
) -> tuple[Any, ...] | None:
    thread_id, ns = key
    checkpoint_id = config_checkpoint_id(config) or ""
    rows = []
    error = None
    special = False
    for channel, value in writes:
        iid = None
        if channel in _SPECIAL:
            special = True
            if channel == INTERRUPT:
                iid = getattr(value, "id", None)
            elif channel == RESUME:
                if isinstance(value, (list, tuple)) and len(value) == 2:
                    iid = str(value[0])
            else:
                error = str(value)
        rows.append(
            {
                "t": thread_id,
                "ns": ns,
                "id": checkpoint_id,
                "task": task_id,
                "c": channel,
                "value": serde.dumps(value).encode(),
                "iid": iid,
            }
        )
    if not rows:
        return None
    status = "failed" if error is not None else "check" if special else None
    return thread_id, ns, checkpoint_id, rows, status, error


def _writes_tx(
    tx: _Tx,
    dialect: _Dialect,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    rows: list[dict[str, Any]],
    status: str | None,
    error: str | None,
) -> None:
    if dialect.pg:
        _writes_pg(tx, dialect, thread_id, ns, checkpoint_id, rows, status, error)
        return
    sql = dialect.sql
    tx.many(sql["insert_write"], rows)
    head = {"t": thread_id, "ns": ns, "id": checkpoint_id, "now": _now()}
    if status == "failed":
        tx.run(sql["thread_failed"], {**head, "error": error})
    elif status == "check":
        tx.run(sql["thread_after_writes"], head)


def _writes_pg_statement(
    dialect: _Dialect,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    rows: list[dict[str, Any]],
    status: str | None,
    error: str | None,
) -> tuple[str, dict[str, Any]]:
    """PostgreSQL: the writes and the thread's new status as one statement, its parameters."""
    params: dict[str, Any] = {
        "t": thread_id,
        "ns": ns,
        "id": checkpoint_id,
        "now": _now(),
        "error": error,
        "task": rows[0]["task"],
    }
    for i, row in enumerate(rows):
        params[f"c{i}"], params[f"value{i}"], params[f"iid{i}"] = (
            row["c"],
            row["value"],
            row["iid"],
        )
    new_ids = {r["iid"] for r in rows if r["c"] == INTERRUPT}
    answered = {r["iid"] for r in rows if r["c"] == RESUME and r["iid"] is not None}
    params["new_pending"] = bool(new_ids - answered) or (None in new_ids)
    for i, iid in enumerate(sorted(answered)):
        params[f"a{i}"] = iid
    return dialect.writes_statement(len(rows), status, len(answered)), params


def _writes_pg(
    tx: _Tx,
    dialect: _Dialect,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    rows: list[dict[str, Any]],
    status: str | None,
    error: str | None,
) -> None:
    """PostgreSQL: the writes and the thread's new status in one statement."""
    tx.value(*_writes_pg_statement(dialect, thread_id, ns, checkpoint_id, rows, status, error))


_writes_pg._single_statement = True  # type: ignore[attr-defined]
_writes_tx._single_statement = True  # type: ignore[attr-defined]


def _head_tx(tx: _Tx, dialect: _Dialect, thread_id: str, ns: str) -> Any:
    """The thread's head row (its checkpoint id first), or None."""
    return tx.one(dialect.sql["head"], {"t": thread_id, "ns": ns})


def _batch_tx(tx: _Tx, dialect: _Dialect, ops: list[tuple[bool, tuple[Any, ...]]]) -> None:
    """Puts and put_writes of one thread, in order, as one transaction (one commit): each
    `(True, _put_args(...))` or `(False, _writes_args(...))`. Each put is the compare-and-set
    on the head it is alone; the transaction stores all of them or none. On PostgreSQL it runs
    in autocommit mode and sends its own BEGIN and COMMIT, in one pipeline with the statements
    on psycopg (one round trip, `_batch_pg`); a broken append chain raises
    (`_is_broken_chain`) for the caller to store the values whole."""
    if not dialect.pg:
        for is_put, args in ops:
            if is_put:
                _put_tx(tx, dialect, *args)
            else:
                _writes_tx(tx, dialect, *args)
        return
    if tx.pipelines:  # psycopg's (the sync engine's wire, or the async engine's pipeline)
        _batch_pg(tx, dialect, ops)
        return
    tx.run("BEGIN")  # (another driver's cursor: one statement at a time)
    for is_put, args in ops:
        if not is_put:
            _writes_tx(tx, dialect, *args)
            continue
        moved = tx.one(*_put_pg_statement(dialect, *args))[0]
        if moved != 1:
            _check_moved(tx, dialect, *args[:4])
    tx.run("COMMIT")


_batch_tx._single_statement = True  # type: ignore[attr-defined]  # (autocommit, its own BEGIN)


def _batch_pg(tx: _Tx, dialect: _Dialect, ops: list[tuple[bool, tuple[Any, ...]]]) -> None:
    """`_batch_tx` on psycopg: BEGIN, the statements and COMMIT in one pipeline (`_Tx.send`). A put
    whose head did not move fails its statement (`strict`), so the transaction never reaches
    its COMMIT; then the head tells a batch stored already (a retry after the connection
    dropped during COMMIT) from a thread another run moved on."""
    statements = [
        _put_pg_statement(dialect, *args, strict=True)
        if is_put
        else _writes_pg_statement(dialect, *args)
        for is_put, args in ops
    ]
    try:
        tx.send([_BEGIN, *statements, _COMMIT])
    except Exception as e:
        if getattr(e, "sqlstate", None) != _NOT_MOVED:
            raise
        tx.rollback()
        puts = [args for is_put, args in ops if is_put]
        row = _head_tx(tx, dialect, *puts[0][:2])
        if row is not None and row[0] == puts[-1][2]:
            return
        _check_moved(tx, dialect, *puts[0][:4])
        raise  # (the head is the first put's own: not a state the batch can leave)


_NOT_MOVED = "22012"  # division_by_zero: a strict put's `1 / count(*)` with no head moved
