"""What workflow node code can use, reached through the run's config: `services(config)`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, func, insert, select
from sqlalchemy.exc import IntegrityError

from . import tables as t
from ._canonical import stored_json

if TYPE_CHECKING:
    from .policy import Policy

__all__ = ["DuplicateEffect", "Effects", "NodeServices", "services"]


class DuplicateEffect(RuntimeError):
    """The provider refused a second effect with the same idempotency key (as real ones do)."""


class Effects:
    """A stand-in for the outside world: each effect (a refund, a deleted row, an email) is a
    row in the `effects` table. Like a payment provider with idempotency keys, a second effect
    of the same kind with the same key is refused loudly, never done twice."""

    def __init__(self, engine: Engine, clock: Callable[[], float]) -> None:
        self.engine = engine
        self.clock = clock

    def record(
        self, kind: str, key: str, data: Mapping[str, Any], *, thread_id: str | None = None
    ) -> dict[str, Any]:
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(t.effects).values(
                        kind=kind,
                        key=key,
                        thread_id=thread_id,
                        data=stored_json(dict(data)),
                        at=self.clock(),
                    )
                )
        except IntegrityError as e:
            raise DuplicateEffect(
                f"{kind} with key {key!r} was done already; refusing to do it twice"
            ) from e
        return {"kind": kind, "key": key, **dict(data)}

    def count(self, kind: str | None = None, thread_id: str | None = None) -> int:
        query = select(func.count()).select_from(t.effects)
        if kind is not None:
            query = query.where(t.effects.c.kind == kind)
        if thread_id is not None:
            query = query.where(t.effects.c.thread_id == thread_id)
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def list(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        query = select(t.effects).order_by(t.effects.c.id)
        if thread_id is not None:
            query = query.where(t.effects.c.thread_id == thread_id)
        with self.engine.connect() as conn:
            return [
                {"kind": r.kind, "key": r.key, "thread_id": r.thread_id, **json.loads(r.data)}
                for r in conn.execute(query)
            ]


@dataclass(frozen=True, slots=True)
class NodeServices:
    effects: Effects
    """The outside world's stand-in: record each side effect once, by its key."""
    thread_id: str
    """The run's thread."""
    policy: Policy | None = None
    """The policy the run is governed by (what `approval_gate` reads its tools from)."""
    service_facts: Callable[[str, Mapping[str, Any]], dict[str, Any]] | None = None
    """Reads a service's `check_url` (`_service_checks`), from a node's thread; None where
    the process cannot (a service's check then fails: never a pass)."""


def services(config: Mapping[str, Any]) -> NodeServices:
    """The services of the run a node belongs to (`def node(state, config)`)."""
    found = (config.get("configurable") or {}).get("signoff")
    if not isinstance(found, NodeServices):
        raise RuntimeError(  # noqa: TRY004 -- not a bad argument: the node runs outside signoff
            "this node needs signoff's services: run the workflow through signoff "
            "(`signoff start`, Slack or the API), not by invoking the graph directly"
        )
    return found
