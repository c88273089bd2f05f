"""`SharedSlots`: the Slack rate limits every replica of the bot shares, kept in PostgreSQL.

Slack counts its limits per workspace (per app token), and every replica on one database calls
it with the same token. A `Pace` of each process's own would think it had the whole budget: two
replicas paced for a channel would post two messages a second where Slack takes one, and half
their posts would be 429s. So on PostgreSQL each process's `Pace` draws on this budget too, in
the table `slack_pace` (a row per limit key):

- a 429 (`limited`) pushes the key's next free slot past `Retry-After` and marks it paced for
  every replica;
- a call to a paced key reserves the next free slot (`reserve`), one statement that moves the
  slot on by one call's share of the window (`seconds / calls`), so the replicas' calls together
  keep inside it; a slot further off than the caller can wait is not taken;
- whether a key is paced by another replica is read from the table at most every `refresh`
  seconds (`paced_for`): a key no replica was refused stays free of any round trip but that
  one look.

Times are the database's clock (`now()`), the one clock every replica sees. The process's own
`Pace` stays in front: its callers take turns for a key before one of them asks for a slot, so
a replica asks once per paced call, never per waiting caller. If the database cannot be asked,
the process paces on its own (and the log says so once).
"""

from __future__ import annotations

import asyncio
import logging
import time

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert

from ..approvals import tables
from ..approvals.db import Database
from ..approvals.events import RetryLater

__all__ = ["SharedSlots"]

log = logging.getLogger("signoff")

_NOW = sa.cast(sa.extract("epoch", sa.func.now()), sa.Double)
"""The database's clock, in epoch seconds."""


class SharedSlots:
    """The slots of Slack's limits, shared by every process on `db` (PostgreSQL).

    Args:
        db: the bot's database (the table is the governance schema's `slack_pace`).
        refresh: seconds a look at which keys are paced is trusted (`paced_for`).
    """

    def __init__(self, db: Database, *, refresh: float = 0.1) -> None:
        if db.dialect != "postgresql":
            raise ValueError(
                f"shared Slack rate limits need PostgreSQL, not {db.dialect}: on SQLite one "
                "process paces its own calls (`Pace` without `shared`)"
            )
        self.db = db
        self.refresh = refresh
        self._paced: dict[str, float] = {}
        """Key -> until when (`time.monotonic()`) it is paced, as last read."""
        self._read_at: float | None = None
        self._reading = asyncio.Lock()
        self._failing = False

    async def paced_for(self, key: str) -> float | None:
        """Seconds `key` stays paced for every replica (None: it is not), as the table said at
        most `refresh` seconds ago."""
        if self._read_at is None or time.monotonic() - self._read_at > self.refresh:
            async with self._reading:  # one look for every caller that needs it
                if self._read_at is None or time.monotonic() - self._read_at > self.refresh:
                    await self._read()
        until = self._paced.get(key)
        left = None if until is None else until - time.monotonic()
        return left if left is not None and left > 0 else None

    async def _read(self) -> None:
        t = tables.slack_pace
        query = sa.select(t.c.key, t.c.paced_until - _NOW).where(t.c.paced_until > _NOW)
        try:
            async with self.db.read() as conn:
                rows = (await conn.execute(query)).all()
        except Exception as e:  # noqa: BLE001 - pace alone rather than not call Slack
            self._fell_back(e)
            rows = []
        else:
            self._back()
        now = time.monotonic()
        self._paced = {key: now + float(left) for key, left in rows}
        self._read_at = now

    async def reserve(self, key: str, spacing: float, memory: float, longest_wait: float) -> float:
        """Take the next free slot of `key`: the seconds until it (0 at once). The slot after
        it is `spacing` seconds later, for whichever replica asks next; the key stays paced for
        everyone `memory` seconds longer.

        Raises:
            RetryLater: the next free slot is more than `longest_wait` seconds away (it is not
                taken: a caller that will not wait leaves no gap).
        """
        t = tables.slack_pace
        start = sa.func.greatest(t.c.next_free, _NOW)
        fits = start - _NOW <= longest_wait
        statement = (
            insert(t)
            .values(key=key, next_free=_NOW + spacing, paced_until=_NOW + memory, taken=True)
            .on_conflict_do_update(
                index_elements=[t.c.key],
                # every expression here reads the row as it was: `taken` says whether it fit
                set_={
                    "taken": fits,
                    "next_free": sa.case((fits, start + spacing), else_=t.c.next_free),
                    "paced_until": sa.func.greatest(t.c.paced_until, _NOW + memory),
                },
            )
            .returning(t.c.taken, t.c.next_free - _NOW)
        )
        try:
            async with self.db.transaction() as conn:
                taken, left = (await conn.execute(statement)).one()
        except Exception as e:  # noqa: BLE001 - pace alone rather than not call Slack
            self._fell_back(e)
            return 0.0
        self._back()
        if not taken:
            raise RetryLater(
                float(left), f"Slack rate limit on {key}: waiting for a turn shared by replicas"
            )
        return max(float(left) - spacing, 0.0)

    async def limited(self, key: str, retry_after: float, memory: float) -> None:
        """Slack answered 429 for `key`: no replica calls it for `retry_after` seconds, and
        every one paces it for `memory` seconds after that."""
        t = tables.slack_pace
        after = _NOW + retry_after
        statement = (
            insert(t)
            .values(key=key, next_free=after, paced_until=after + memory, taken=False)
            .on_conflict_do_update(
                index_elements=[t.c.key],
                set_={
                    "next_free": sa.func.greatest(t.c.next_free, after),
                    "paced_until": sa.func.greatest(t.c.paced_until, after + memory),
                },
            )
        )
        try:
            async with self.db.transaction() as conn:
                await conn.execute(statement)
        except Exception as e:  # noqa: BLE001 - pace alone rather than not call Slack
            self._fell_back(e)
            return
        self._back()
        self._paced[key] = max(self._paced.get(key, 0.0), time.monotonic() + retry_after + memory)

    def _fell_back(self, error: BaseException) -> None:
        if not self._failing:
            self._failing = True
            log.warning(
                "Slack rate limits: could not reach the budget replicas share in %s (%s); "
                "this process paces its own calls until it can",
                self.db.display_url,
                error,
            )

    def _back(self) -> None:
        if self._failing:
            self._failing = False
            log.info("Slack rate limits: the budget replicas share is reachable again")
