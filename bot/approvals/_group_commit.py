"""Group commit on SQLite: urgent writers that queue while one of them holds the file's write gate
join its transaction instead of waiting for their own.

Under a burst of clicks every vote waits for SQLite's one writer. A vote on its own pays, besides
its statements, for a pooled connection, its deadline's busy timeout set (and set back),
`BEGIN IMMEDIATE`, the commit with its fsync (`synchronous=FULL`), and the gate handed on to a
task the event loop must schedule. Grouped, the writer in charge (the
*leader*, `Database.transaction`) runs its own work, then lets the votes queued behind it run
theirs, one after another on its connection, each inside a `SAVEPOINT` of its own, and commits
them all at once. Each is answered only after that commit:

- a writer whose work fails or is refused rolls back its own savepoint only and gets its own
  error at once (nothing of it was kept);
- a writer whose deadline passes before the commit is rolled back before it and answered
  `DatabaseBusy`: never committed late. Savepoints nest, so rolling it back rolls back the
  writers after it too (and their audit entries chain on its own): the group ends at the late
  writer. Those before it commit; those after it that were on time and can be run again
  (`Database.transact`: their work is a function) go back to the head of the queue, the first
  of them leading the next group, and are answered when that one commits. A writer that cannot
  be run again (a `Database.transaction` block) is answered `DatabaseBusy` with the late one;
- a writer that can be run again and whose work was refused hears its refusal only once the
  group's fate is known: a refusal made on the writes of a writer rolled back before it (the
  approval another vote of the group decided) is run again too;
- when the commit fails, every writer kept in it gets the error: nothing was recorded.

The leader takes writers until the group is full or the earliest deadline among them draws near,
then commits and hands the gate, with whoever still waits, to the first of them: the next leader.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["MAX_GROUP", "Batch", "Member", "RunAgain", "answer", "finished"]

MAX_GROUP = 32
"""The most writers one commit takes (the leader included)."""

_MARGIN = 0.05
"""Seconds before the earliest deadline in a group at which the leader commits, at least (it
also allows twice the time a writer of this group has taken on average)."""

_names = itertools.count(1)

Role = Literal["run", "lead"]
"""What a queued writer is told when its turn comes: run inside the leader's transaction, or
lead the next one (the gate is then its own)."""


@dataclass(eq=False)
class Member:
    """One writer in a group: its deadline, its turn, and what happened to it."""

    loop: asyncio.AbstractEventLoop
    deadline: float | None
    again: bool = False
    """Whether its work can be run again (a function given to `Database.transact`): when a
    late writer before it in the group is rolled back, it is queued again instead of refused."""
    turn: asyncio.Future[Role] = field(init=False)
    """Set by the leader: `run` now, or `lead` the next group."""
    finished: asyncio.Future[bool] = field(init=False)
    """Set by the writer when its work is over: True when it is kept for the commit."""
    committed: asyncio.Future[None] = field(init=False)
    """Set by the leader once the group's transaction is over: None, or the error."""
    savepoint: str = field(init=False)

    def __post_init__(self) -> None:
        self.turn = self.loop.create_future()
        self.finished = self.loop.create_future()
        self.committed = self.loop.create_future()
        # Nobody may be left to hear an error (a writer cancelled while it waited).
        self.committed.add_done_callback(_retrieve)
        self.finished.add_done_callback(_retrieve)
        self.savepoint = f"signoff_w{next(_names)}"

    def late(self, now: float) -> bool:
        """Whether its deadline has passed at `now`."""
        return self.deadline is not None and now >= self.deadline

    def run_again(self) -> asyncio.Future[None]:
        """Make it a writer waiting for its turn again (fresh futures, a fresh savepoint);
        return the `committed` future its work is waiting on, for the leader to answer."""
        waiting = self.committed
        self.__post_init__()
        return waiting


class RunAgain(Exception):
    """Told to a writer (`Member.again`) whose work was rolled back with a late writer before
    it: it is queued again at the head of `batch`, and runs its work once more."""

    def __init__(self, member: Member, batch: Batch) -> None:
        super().__init__("rolled back with a late writer before it: run again")
        self.member = member
        self.batch = batch


@dataclass(eq=False)
class Batch:
    """The urgent writers of one event loop, while one of them holds the gate: the queue that
    joins the transaction in progress, and its connection once it has one."""

    loop: asyncio.AbstractEventLoop
    queue: collections.deque[Member] = field(default_factory=collections.deque)
    conn: AsyncConnection | None = None
    """The leader's connection, while its transaction takes writers (None otherwise)."""

    def take_more(self, kept: list[Member], started: float) -> bool:
        """Whether the leader should run another queued writer before committing."""
        if not self.queue or len(kept) >= MAX_GROUP:
            return False
        deadlines = [m.deadline for m in kept if m.deadline is not None]
        if not deadlines:
            return True
        per_writer = (time.monotonic() - started) / max(len(kept), 1)
        return min(deadlines) - time.monotonic() > max(_MARGIN, 2 * per_writer)

    def next_up(self) -> Member | None:
        """The first writer still waiting for its turn, out of the queue."""
        while self.queue:
            member = self.queue.popleft()
            if not member.turn.done():
                return member
        return None


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def finished(member: Member) -> bool:
    """Wait for a member's work to end (even when the leader is cancelled meanwhile: the member
    is using the leader's connection); True when it is kept for the commit."""
    try:
        return await asyncio.shield(member.finished)
    except asyncio.CancelledError:
        await asyncio.wait([member.finished])
        raise


def answer(member: Member, error: BaseException | None) -> None:
    """Tell a member how its group's transaction ended (`error` None: committed)."""
    if member.committed.done():
        return
    if error is None:
        member.committed.set_result(None)
    else:
        member.committed.set_exception(error)
