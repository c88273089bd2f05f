"""A `put` that branches from a past checkpoint (`branch_head`), as one transaction.

LangGraph's time travel inside a thread (`invoke(None, config)` or `update_state` given a past
checkpoint) writes a checkpoint whose parent is not the thread's head. Every other `put` is a
compare-and-set of the head on the parent; this one first moves the head back to the parent,
a compare-and-set on the head the runtime read (and only if the parent is a checkpoint of the
thread), then runs the ordinary `put` from there, in the same transaction: a run that wrote the
thread meanwhile makes it fail whole, and nothing of it is written.
"""

from __future__ import annotations

from typing import Any

from ...errors import CheckpointConflictError
from .engine import _Tx
from .statements import _Dialect
from .write import _put_pg, _put_tx

_REWIND = """
    UPDATE checkpoint_threads SET head_id = :parent
    WHERE thread_id = :t AND checkpoint_ns = :ns AND head_id = :head
      AND EXISTS (SELECT 1 FROM checkpoints
                  WHERE thread_id = :t AND checkpoint_ns = :ns AND checkpoint_id = :parent)"""

_HEAD = """
    SELECT head_id FROM checkpoint_threads WHERE thread_id = :t AND checkpoint_ns = :ns"""


def _branch_tx(
    tx: _Tx,
    dialect: _Dialect,
    head_id: str,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    parent_id: str | None,
    *rest: Any,
) -> None:
    """`_put_tx` (`_put_pg`) of a checkpoint whose parent is the past checkpoint `parent_id`,
    written over the head `head_id`. `rest`: the other arguments `_put_args` made."""
    keys = {"t": thread_id, "ns": ns}
    moved = tx.count(dialect.render(_REWIND), {**keys, "head": head_id, "parent": parent_id})
    if moved != 1:
        row = tx.one(dialect.render(_HEAD), keys)
        current = row[0] if row else None
        if current == checkpoint_id:
            return  # stored already: a retry after the connection dropped during COMMIT
        if current == head_id:
            raise CheckpointConflictError(
                f"thread {thread_id!r} has no checkpoint {parent_id!r} to branch from",
                thread_id,
            )
        raise CheckpointConflictError(
            f"thread {thread_id!r} moved on: its head is {current!r}, not {head_id!r}; "
            "another run wrote to it",
            thread_id,
        )
    put = _put_pg if dialect.pg else _put_tx
    put(tx, dialect, thread_id, ns, checkpoint_id, parent_id, *rest)
