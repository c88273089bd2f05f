"""The SQL of `SQLSaver`: each statement written once, rendered for SQLite and PostgreSQL.

Statements are written once with :name parameters (sqlite3's named style) and rewritten to
psycopg's %(name)s for PostgreSQL. They run on raw DBAPI cursors: the statements are fixed,
so SQLAlchemy's compilation would only add time to the hot path (a durable step is a few of
them); psycopg prepares them server-side after five uses. A sync run's on PostgreSQL skip the
cursor and go on libpq itself (`wire.py`), prepared at their first use.
"""

from __future__ import annotations

import functools
import re

_FOR_UPDATE = "{for_update}"

_SQL = {
    "insert_thread": """
        INSERT INTO checkpoint_threads (thread_id, checkpoint_ns, head_id, status, created_at,
            updated_at, paused_since, paused_nodes, error, finished_at)
        VALUES (:t, :ns, :id, :status, :now, :now, :paused_since, :nodes, NULL, :finished)
        ON CONFLICT (thread_id, checkpoint_ns) DO NOTHING""",
    "advance_thread": """
        UPDATE checkpoint_threads SET head_id = :id, status = :status, updated_at = :now,
            paused_since = NULL, paused_nodes = NULL, error = NULL, finished_at = :finished
        WHERE thread_id = :t AND checkpoint_ns = :ns AND head_id = :parent""",
    "advance_thread_paused": """
        UPDATE checkpoint_threads SET head_id = :id, status = 'paused', updated_at = :now,
            paused_since = CASE WHEN status = 'paused' THEN paused_since ELSE :now END,
            paused_nodes = :nodes, error = NULL, finished_at = NULL
        WHERE thread_id = :t AND checkpoint_ns = :ns AND head_id = :parent""",
    "head": """
        SELECT head_id FROM checkpoint_threads WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "insert_checkpoint": """
        INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_id, record,
            metadata)
        VALUES (:t, :ns, :id, :parent, :record, :meta)""",
    "insert_blob": """
        INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, prev_version,
            full_version, total, value)
        VALUES (:t, :ns, :c, :v, NULL, :v, :total, :value)
        ON CONFLICT DO NOTHING""",
    # An append row extends the channel's previous version, if that is a list of the right
    # length (so a broken chain can never be written: rowcount 0 -> store the full value).
    "append_blob": """
        INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, prev_version,
            full_version, total, value)
        SELECT :t, :ns, :c, :v, p.version, p.full_version, :total, :value
        FROM checkpoint_blobs p
        WHERE p.thread_id = :t AND p.checkpoint_ns = :ns AND p.channel = :c
          AND p.total = :prev_total AND p.value IS NOT NULL
          AND p.version = (SELECT MAX(q.version) FROM checkpoint_blobs q
                           WHERE q.thread_id = :t AND q.checkpoint_ns = :ns AND q.channel = :c
                             AND q.version < :v)
        ON CONFLICT DO NOTHING""",
    "insert_write": """
        INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, channel,
            value, interrupt_id)
        VALUES (:t, :ns, :id, :task, :c, :value, :iid)""",
    # Status after writes to the head: an error fails the thread; otherwise it is paused while
    # a static pause lasts or an interrupt has no answer, else running. (A pending interrupt:
    # an `__interrupt__` write with no `__resume__` of its id; {answered} lets PostgreSQL's
    # one-statement form exclude the ids answered by writes of the same statement.) Writes to
    # one thread come from the one run that holds it (`lock_thread`), one call at a time for
    # answers, so the count below never races another writer's.
    "thread_failed": """
        UPDATE checkpoint_threads SET status = 'failed', error = :error, paused_since = NULL,
            finished_at = NULL, updated_at = :now
        WHERE thread_id = :t AND checkpoint_ns = :ns AND head_id = :id""",
    "thread_after_writes": """
        UPDATE checkpoint_threads SET
            status = CASE WHEN status = 'failed' THEN 'failed'
                          WHEN {paused} THEN 'paused' ELSE 'running' END,
            paused_since = CASE WHEN status = 'failed' THEN NULL
                                WHEN {paused} THEN COALESCE(
                                    CASE WHEN status = 'paused' THEN paused_since END, :now)
                                ELSE NULL END,
            finished_at = NULL, updated_at = :now
        WHERE thread_id = :t AND checkpoint_ns = :ns AND head_id = :id""",
    "checkpoint": """
        SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, record, metadata
        FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns AND checkpoint_id = :id""",
    "head_checkpoint": """
        SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, record, metadata
        FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns
        ORDER BY checkpoint_id DESC LIMIT 1""",
    "list_thread": """
        SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, record, metadata
        FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns {before}
        ORDER BY checkpoint_id DESC LIMIT :limit""",
    "list_thread_all_ns": """
        SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, record, metadata
        FROM checkpoints WHERE thread_id = :t {before}
        ORDER BY checkpoint_ns, checkpoint_id DESC LIMIT :limit""",
    "list_all": """
        SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_id, c.record, c.metadata
        FROM checkpoints c JOIN checkpoint_threads t
          ON t.thread_id = c.thread_id AND t.checkpoint_ns = c.checkpoint_ns
        WHERE 1 = 1 {before}
        ORDER BY t.created_at, t.thread_id, t.checkpoint_ns, c.checkpoint_id DESC
        LIMIT :limit""",
    # The paused threads (on the status index), with the interrupt and resume writes of their
    # heads (on the writes index), in one query. A subgraph's namespace (`node:task_id`, the
    # only kind with a ':') is left out: its pause is its parent's, listed with the parent.
    "list_paused": """
        SELECT t.thread_id, t.checkpoint_ns, t.head_id, t.paused_since, t.paused_nodes,
            w.channel, w.interrupt_id, w.value
        FROM (SELECT thread_id, checkpoint_ns, head_id, paused_since, paused_nodes
              FROM checkpoint_threads WHERE status = 'paused' AND paused_since < :before
                AND checkpoint_ns NOT LIKE :subgraph
              ORDER BY paused_since, thread_id, checkpoint_ns LIMIT :limit) t
        LEFT JOIN checkpoint_writes w
          ON w.thread_id = t.thread_id AND w.checkpoint_ns = t.checkpoint_ns
             AND w.checkpoint_id = t.head_id AND w.channel IN ('__interrupt__', '__resume__')
        ORDER BY t.paused_since, t.thread_id, t.checkpoint_ns, w.seq""",
    "thread_status": """
        SELECT status FROM checkpoint_threads WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_threads": "DELETE FROM checkpoint_threads WHERE thread_id = :t",
    "delete_checkpoints": "DELETE FROM checkpoints WHERE thread_id = :t",
    "delete_blobs": "DELETE FROM checkpoint_blobs WHERE thread_id = :t",
    "delete_writes": "DELETE FROM checkpoint_writes WHERE thread_id = :t",
    "thread_keys": """
        SELECT thread_id, checkpoint_ns FROM checkpoint_threads WHERE thread_id = :t
        ORDER BY checkpoint_ns""",
    "all_thread_keys": """
        SELECT thread_id, checkpoint_ns FROM checkpoint_threads
        ORDER BY thread_id, checkpoint_ns""",
    "lock_thread_row": """
        SELECT status FROM checkpoint_threads WHERE thread_id = :t AND checkpoint_ns = :ns
        {for_update}""",
    "prune_list": """
        SELECT checkpoint_id, record FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns
        ORDER BY checkpoint_id DESC""",
    "prune_checkpoints": """
        DELETE FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns
          AND checkpoint_id < :oldest""",
    "prune_writes": """
        DELETE FROM checkpoint_writes WHERE thread_id = :t AND checkpoint_ns = :ns
          AND checkpoint_id < :oldest""",
    "blob_keys": """
        SELECT channel, version, prev_version FROM checkpoint_blobs
        WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_blob": """
        DELETE FROM checkpoint_blobs
        WHERE thread_id = :t AND checkpoint_ns = :ns AND channel = :c AND version = :v""",
    "finished": """
        SELECT thread_id, checkpoint_ns FROM checkpoint_threads
        WHERE status = 'done' AND finished_at < :cutoff {for_update_skip}""",
    "delete_key_threads": """
        DELETE FROM checkpoint_threads WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_key_checkpoints": """
        DELETE FROM checkpoints WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_key_blobs": """
        DELETE FROM checkpoint_blobs WHERE thread_id = :t AND checkpoint_ns = :ns""",
    "delete_key_writes": """
        DELETE FROM checkpoint_writes WHERE thread_id = :t AND checkpoint_ns = :ns""",
}

_NO_LIMIT = 2**62

_PAUSED = """(paused_nodes IS NOT NULL OR EXISTS (
    SELECT 1 FROM checkpoint_writes i
    WHERE i.thread_id = :t AND i.checkpoint_ns = :ns AND i.checkpoint_id = :id
      AND i.channel = '__interrupt__' {answered}
      AND NOT EXISTS (
        SELECT 1 FROM checkpoint_writes r
        WHERE r.thread_id = :t AND r.checkpoint_ns = :ns AND r.checkpoint_id = :id
          AND r.channel = '__resume__' AND r.interrupt_id = i.interrupt_id)))"""


class _Dialect:
    """The statements, rendered for one database."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pg = name == "postgresql"
        self.sql = {}
        for key, text in _SQL.items():
            if "{before}" in text:
                self.sql[key + "_before"] = self.render(
                    text.replace("{before}", "AND checkpoint_id < :before")
                )
                text = text.replace("{before}", "")
            self.sql[key] = self.render(text)

    def render(self, text: str) -> str:
        text = " ".join(text.split())
        text = text.replace(_FOR_UPDATE, "FOR UPDATE" if self.pg else "")
        text = text.replace("{paused}", _PAUSED.replace("{answered}", ""))
        text = text.replace("{for_update_skip}", "FOR UPDATE SKIP LOCKED" if self.pg else "")
        if self.pg:
            text = re.sub(r"(?<!:):(\w+)", r"%(\1)s", text)
        return text

    @functools.lru_cache(maxsize=256)  # noqa: B019 (two instances per process)
    def blobs(self, n: int) -> str:
        """Rows of `n` channels, each from the start of its append chain up to a version."""
        branch = """
            SELECT channel, version, prev_version, total, value FROM checkpoint_blobs
            WHERE thread_id = :t AND checkpoint_ns = :ns AND channel = :c{i}
              AND version <= :hi{i}
              AND version >= (SELECT MIN(full_version) FROM checkpoint_blobs
                              WHERE thread_id = :t AND checkpoint_ns = :ns AND channel = :c{i}
                                AND version >= :lo{i} AND version <= :hi{i})"""
        return self.render(" UNION ALL ".join(branch.format(i=i) for i in range(n)))

    @functools.lru_cache(maxsize=128)  # noqa: B019
    def put_statement(self, head: str, n_full: int, n_deltas: int, strict: bool = False) -> str:
        """PostgreSQL: the whole of a `put` in one statement; returns 1 if the head moved, else
        0, or with `strict` fails with division by zero (so a transaction it is part of, sent
        ahead in one pipeline with its COMMIT, stops before the COMMIT).

        Rows are bound as scalars (`:c0, :v0, ...`): psycopg adapts those much faster than
        arrays, and one prepared statement per shape is cached on the server.
        """
        move = {
            "insert": _SQL["insert_thread"],
            "advance": _SQL["advance_thread"],
            "paused": _SQL["advance_thread_paused"],
        }[head]
        text = f"""
            WITH moved AS ({move} RETURNING 1),
            cp AS (
                INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_id,
                    record, metadata)
                SELECT :t, :ns, :id, :parent, :record, :meta FROM moved)"""
        if n_full:
            rows = ", ".join(
                f"(CAST(:c{i} AS text), CAST(:v{i} AS bigint), CAST(:total{i} AS integer), "
                f"CAST(:value{i} AS bytea))"
                for i in range(n_full)
            )
            text += f""",
            full_rows AS (
                INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version,
                    prev_version, full_version, total, value)
                SELECT :t, :ns, u.c, u.v, NULL, u.v, u.total, u.value
                FROM moved CROSS JOIN (VALUES {rows}) AS u(c, v, total, value)
                ON CONFLICT DO NOTHING)"""
        if n_deltas:
            rows = ", ".join(
                f"(CAST(:dc{i} AS text), CAST(:dv{i} AS bigint), CAST(:dtotal{i} AS integer), "
                f"CAST(:dprev{i} AS integer), CAST(:dvalue{i} AS bytea))"
                for i in range(n_deltas)
            )
            # full_version is NOT NULL: a delta whose previous version is not the list it
            # extends makes the whole statement fail, and nothing is written.
            text += f""",
            delta_rows AS (
                INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version,
                    prev_version, full_version, total, value)
                SELECT :t, :ns, u.c, u.v, p.version,
                    CASE WHEN p.total = u.prev_total AND p.has_value THEN p.full_version END,
                    u.total, u.value
                FROM moved CROSS JOIN (VALUES {rows}) AS u(c, v, total, prev_total, value)
                LEFT JOIN LATERAL (
                    SELECT q.version, q.full_version, q.total, q.value IS NOT NULL AS has_value
                    FROM checkpoint_blobs q
                    WHERE q.thread_id = :t AND q.checkpoint_ns = :ns AND q.channel = u.c
                      AND q.version < u.v
                    ORDER BY q.version DESC LIMIT 1) p ON true
                ON CONFLICT DO NOTHING)"""
        moved = "1 / count(*)" if strict else "count(*)"
        return self.render(text + f" SELECT {moved} FROM moved")

    @functools.lru_cache(maxsize=4)  # noqa: B019
    def get_statement(self, by_id: bool) -> str:
        """PostgreSQL: a checkpoint, its writes and its values, as rows of one statement.

        Columns: kind (0 checkpoint, 1 write, 2 value), then per kind
        (checkpoint_id, parent_id, -, -, -, record, metadata),
        (task_id, channel, seq, -, -, value, -), (-, channel, version, prev, total, value, -).
        """
        where = "AND checkpoint_id = :id" if by_id else ""
        return self.render(f"""
            WITH cp AS (
                SELECT checkpoint_id, parent_id, record, metadata FROM checkpoints
                WHERE thread_id = :t AND checkpoint_ns = :ns {where}
                ORDER BY checkpoint_id DESC LIMIT 1),
            cv AS (
                SELECT e.key AS channel, CAST(e.value AS bigint) AS version
                FROM cp CROSS JOIN LATERAL jsonb_each_text(
                    CAST(convert_from(cp.record, 'UTF8') AS jsonb) -> 'd' -> 'channel_versions'
                ) AS e)
            SELECT 0, cp.checkpoint_id, cp.parent_id, CAST(NULL AS bigint), CAST(NULL AS bigint),
                CAST(NULL AS integer), cp.record, cp.metadata
            FROM cp
            UNION ALL
            SELECT 1, w.task_id, w.channel, w.seq, NULL, NULL, w.value, NULL
            FROM cp JOIN checkpoint_writes w
              ON w.thread_id = :t AND w.checkpoint_ns = :ns AND w.checkpoint_id = cp.checkpoint_id
            UNION ALL
            SELECT 2, NULL, b.channel, b.version, b.prev_version, b.total, b.value, NULL
            FROM cv
            JOIN checkpoint_blobs h
              ON h.thread_id = :t AND h.checkpoint_ns = :ns AND h.channel = cv.channel
                 AND h.version = cv.version
            JOIN checkpoint_blobs b
              ON b.thread_id = :t AND b.checkpoint_ns = :ns AND b.channel = cv.channel
                 AND b.version >= h.full_version AND b.version <= cv.version""")

    @functools.lru_cache(maxsize=128)  # noqa: B019
    def writes_statement(self, n: int, status: str | None, n_answered: int) -> str:
        """PostgreSQL: `put_writes` in one statement (the rows, then the thread's status)."""
        rows = ", ".join(
            f"(CAST(:c{i} AS text), CAST(:value{i} AS bytea), CAST(:iid{i} AS text), {i})"
            for i in range(n)
        )
        insert = f"""
            INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id,
                channel, value, interrupt_id)
            SELECT :t, :ns, :id, :task, u.c, u.value, u.iid
            FROM (VALUES {rows}) AS u(c, value, iid, n) ORDER BY u.n"""
        if status is None:
            return self.render(insert)
        if status == "failed":
            update = _SQL["thread_failed"]
        else:
            # The statement's own rows are invisible to its subqueries: the new interrupts
            # come in as :new_pending, and ids answered here are left out of the old ones.
            answered = ""
            if n_answered:
                ids = ", ".join(f":a{i}" for i in range(n_answered))
                answered = f"AND (i.interrupt_id IS NULL OR i.interrupt_id NOT IN ({ids}))"
            paused = f"(CAST(:new_pending AS boolean) OR {_PAUSED.replace('{answered}', answered)})"
            update = _SQL["thread_after_writes"].replace("{paused}", paused)
        return self.render(f"WITH ins AS ({insert} RETURNING 1), upd AS ({update}) SELECT 1")

    @functools.lru_cache(maxsize=256)  # noqa: B019
    def writes(self, n: int) -> str:
        ids = ", ".join(f":id{i}" for i in range(n))
        return self.render(
            "SELECT checkpoint_id, task_id, channel, value FROM checkpoint_writes "
            f"WHERE thread_id = :t AND checkpoint_ns = :ns AND checkpoint_id IN ({ids}) "
            "ORDER BY seq"
        )


_DIALECTS = {"sqlite": _Dialect("sqlite"), "postgresql": _Dialect("postgresql")}
