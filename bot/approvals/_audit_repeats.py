"""Refusals that repeat, as the audit log keeps them (`AuditLog.refusal`): the first of a kind
from a source is an entry at once; the ones that follow it within the window are counted in
`audit_repeats` and become one entry, with their count and the first and last time, once the
window is over (`AuditLog.link`). Anyone can be refused as often as they like; the log grows
by two entries per kind, source and window, not one per request.

A refused request's body is never kept: `body_digest` gives its size and SHA-256, and
`bounded` cuts what a refusal's details echo of it (a reason, the problems' field names).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from ._audit_kinds import AuditKind
from ._locks import hold
from .tables import audit_repeats

__all__ = [
    "REPEAT_WINDOW",
    "Repeats",
    "body_digest",
    "bounded",
    "closed_windows",
    "closing",
    "count_repeat",
]

REPEAT_WINDOW = 60.0
"""Seconds after a refusal during which the same refusal from the same source is counted, not
logged one by one (`SIGNOFF_REFUSAL_WINDOW`)."""

TEXT_MAX = 300
"""Characters of a refusal's reason, or of a problem's message, kept on the log."""
FIELD_MAX = 100
"""Characters of a problem's field name kept on the log."""
PROBLEMS_MAX = 20
"""Problems of one refusal kept on the log (with how many there were)."""


@dataclass(frozen=True, slots=True)
class Repeats:
    """A closed window's repeats: what `link` writes as one entry."""

    kind: AuditKind
    actor: str | None
    data: dict[str, Any]
    at: float


def body_digest(body: bytes | str) -> dict[str, Any]:
    """What the log keeps of a refused body: its size in bytes and its SHA-256."""
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    return {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else f"{text[:most]}… ({len(text)} characters)"


def bounded(data: Mapping[str, Any]) -> dict[str, Any]:
    """A refusal's details with what a caller sent cut to size: `reason` and each problem's
    message to `TEXT_MAX` characters, each field name to `FIELD_MAX`, at most `PROBLEMS_MAX`
    problems (`problems_total` says how many there were)."""
    out = dict(data)
    if isinstance(out.get("reason"), str):
        out["reason"] = _cut(out["reason"], TEXT_MAX)
    problems = out.get("problems")
    if isinstance(problems, Mapping):
        kept = {
            _cut(str(field), FIELD_MAX): _cut(str(message), TEXT_MAX)
            for field, message in list(problems.items())[:PROBLEMS_MAX]
        }
        out["problems"] = kept
        if len(problems) > len(kept):
            out["problems_total"] = len(problems)
    return out


def _key(kind: str, source: str, refusal: str) -> str:
    return hashlib.sha256(f"{kind}\0{source}\0{refusal}".encode()).hexdigest()


async def count_repeat(
    conn: AsyncConnection,
    *,
    kind: AuditKind,
    actor: str | None,
    source: str,
    refusal: str,
    data: Mapping[str, Any],
    now: float,
    window: float,
) -> tuple[bool, list[Repeats]]:
    """Count a refusal of `kind` from `source` in its open window, or open one.

    Returns (counted, closed): counted is True when the refusal was a repeat (counted; the
    caller logs nothing); False when it opened a window (the caller logs it). `closed` holds
    the repeats of the window that was over for this key, to log first.
    """
    key = _key(kind, source, refusal)
    r = audit_repeats.c
    await hold(conn, kind, source, refusal)  # one refusal of a key at a time
    counted = await conn.execute(
        sa.update(audit_repeats)
        .where(r.key == key, r.until > now)
        .values(count=r.count + 1, first_at=sa.func.coalesce(r.first_at, now), last_at=now)
    )
    if counted.rowcount:
        return True, []
    gone = (
        (
            await conn.execute(
                sa.delete(audit_repeats)
                .where(r.key == key, r.until <= now)  # over; an open one is another writer's
                .returning(*audit_repeats.c)
            )
        )
        .mappings()
        .all()
    )
    closed = [_repeats(row) for row in gone if row["count"]]
    row = {
        "key": key, "kind": kind, "actor": actor, "count": 0, "until": now + window,
        "data": json.dumps(dict(data), sort_keys=True, separators=(",", ":")),
    }  # fmt: skip
    insert = (postgresql if conn.dialect.name == "postgresql" else sqlite).insert(audit_repeats)
    opened = await conn.execute(insert.values(row).on_conflict_do_nothing())
    if not opened.rowcount:  # another writer opened it at the same moment: a repeat of its
        await conn.execute(
            sa.update(audit_repeats)
            .where(r.key == key)
            .values(count=r.count + 1, first_at=sa.func.coalesce(r.first_at, now), last_at=now)
        )
        return True, closed
    return False, closed


async def closing(conn: AsyncConnection, now: float) -> int:
    """How many windows are over (at `now`) with repeats to write."""
    r = audit_repeats.c
    found = await conn.scalar(sa.select(sa.func.count()).where(r.until <= now, r.count > 0))
    return int(found or 0)


async def closed_windows(conn: AsyncConnection, now: float) -> list[Repeats]:
    """Take the windows that are over and had repeats (the rest are dropped): for `link`."""
    r = audit_repeats.c
    gone = (
        (
            await conn.execute(
                sa.delete(audit_repeats).where(r.until <= now).returning(*audit_repeats.c)
            )
        )
        .mappings()
        .all()
    )
    return sorted((_repeats(row) for row in gone if row["count"]), key=lambda e: e.at)


def _repeats(row: Any) -> Repeats:
    try:
        first = json.loads(row["data"])
    except ValueError:
        first = {}
    # What the repeats had in common with the first (their kind and source); the rest of
    # each (a reason naming what the caller sent, the route) may have differed.
    same = {k: first[k] for k in ("service", "refusal", "from") if k in first}
    if first.get("refusal") == "unauthenticated":
        same["reason"] = first.get("reason")  # one of two fixed texts: part of the kind
    return Repeats(
        kind=row["kind"],
        actor=row["actor"],
        data={
            **same,
            "count": int(row["count"]),
            "first_at": float(row["first_at"]),
            "last_at": float(row["last_at"]),
        },
        at=float(row["last_at"]),
    )
