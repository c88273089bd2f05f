"""End-to-end kit: the fake Slack and the bot as real processes, talking signed HTTP.

- `FakeSlackProcess`, `BotProcess` (from `bot.sandbox.processes`): the fake with the demo
  workspace (alice, bob, carol, dave; #approvals; the user group `@approvers` = alice and bob),
  one per session, and `signoff run --port P` on a database, its Web API pointed at the fake.
  Test modules start one bot per module and give each test a fresh run (a new thread and
  approval) instead of restarting it.
- `E2E`: one test's hands: it starts runs over the HTTP API, waits on the fake's workspace
  (long polls, no fixed sleeps), clicks as a person (through the fake, which signs the request),
  sends hand-made signed requests, and reads the bot's database (effects, jobs) directly.

PostgreSQL is `tests.kit.pg`'s server; each bot gets a schema of its own, selected with
`search_path` in the URL (`pg_schema`, `pg_url`). When the server cannot be reached those tests
are skipped, except under `CI=true`, where they fail (`pg_server`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.db import Database
from bot.sandbox.client import SandboxClient
from bot.sandbox.processes import (
    API_TOKEN,
    CHANNEL,
    BotProcess,
    FakeSlackProcess,
    free_port,
    sqlite_url,
    write_policy,
)
from bot.sandbox.processes import SIGNING_SECRET as SECRET
from bot.sandbox.signing import AppResponse, SlackRequest, SlackSigner
from graphs.checkpoint.base import ONCE
from tests.kit import pg
from tests.kit.pg import address as pg_address
from tests.kit.pg import admin_conninfo as pg_admin
from tests.kit.pg import require_server as pg_server
from tests.kit.pg import url_on as pg_url

__all__ = [
    "ALICE", "API_TOKEN", "BOB", "CAROL", "CHANNEL", "DAVE", "E2E", "JSON", "SECRET", "WAIT",
    "BotDatabase", "BotProcess", "FakeSlackProcess", "Run", "TcpProxy", "action_ids", "card_of",
    "cards_of", "ephemerals_of", "free_port", "in_channel", "messages_of", "pg_address", "pg_admin", "pg_schema",
    "pg_server", "pg_url", "replies_of", "sqlite_url", "text_of", "write_policy",
]  # fmt: skip

ALICE, BOB, CAROL, DAVE = "U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"
WAIT = 20.0
"""Seconds to wait for anything to happen (generous: CI machines are slow and shared)."""

JSON = dict[str, Any]


# ---- the bot's database ---------------------------------------------------------------------


class BotDatabase:
    """Reads of the bot's tables, from the test process (a pool of its own)."""

    def __init__(self, url: str) -> None:
        self._db = Database(url)

    def close(self) -> None:
        self._db.close()

    def rows(self, query: sa.Select[Any]) -> list[JSON]:
        (found,) = self.rows_at_once(query)
        return found

    def rows_at_once(self, *queries: sa.Select[Any]) -> list[list[JSON]]:
        """Each query's rows, all read in one transaction: one moment of the database, for
        counts across tables the bot moves rows between (the audit's inbox, chain, repeats)."""
        with self._db.sync_engine.connect() as conn:
            return [[dict(r) for r in conn.execute(q).mappings()] for q in queries]

    def effects(self, thread_id: str, kind: str | None = None) -> list[JSON]:
        """What the run did (refunds, emails), oldest first, each with its data decoded."""
        query = (
            sa.select(t.effects).where(t.effects.c.thread_id == thread_id).order_by(t.effects.c.id)
        )
        if kind is not None:
            query = query.where(t.effects.c.kind == kind)
        return [{**r, "data": json.loads(r["data"])} for r in self.rows(query)]

    def once_records(self, thread_id: str) -> dict[str, str]:
        """The `once()` effects in flight on the run's head checkpoint, by key: the last record
        of each ("started", "done" or "failed"), as the next process to resume it reads them.
        Empty once the step that ran them is saved (its results move into the checkpoint)."""
        head = self._db.saver.get_tuple({"configurable": {"thread_id": thread_id}})
        found: dict[str, str] = {}
        for _task, channel, value in head.pending_writes if head is not None else ():
            if channel == ONCE:
                found[value[0]] = value[1]
        return found

    def run(self, thread_id: str) -> JSON | None:
        found = self.rows(sa.select(t.runs).where(t.runs.c.thread_id == thread_id))
        return found[0] if found else None

    def approval(self, approval_id: str) -> JSON:
        (row,) = self.rows(sa.select(t.approvals).where(t.approvals.c.id == approval_id))
        return row

    def approvals_of(self, thread_id: str) -> list[str]:
        """The ids of the thread's approvals, oldest first."""
        a = t.approvals.c
        query = sa.select(a.id).where(a.thread_id == thread_id).order_by(a.created_at, a.id)
        return [r["id"] for r in self.rows(query)]

    def runs_count(self) -> int:
        return len(self.rows(sa.select(t.runs.c.thread_id)))

    def approval_counts(self) -> dict[str, int]:
        query = sa.select(t.approvals.c.status, sa.func.count()).group_by(t.approvals.c.status)
        with self._db.sync_engine.connect() as conn:
            return {status: int(n) for status, n in conn.execute(query)}

    def jobs(self, *, thread_id: str | None = None, undone: bool = False) -> list[JSON]:
        query = sa.select(t.jobs).order_by(t.jobs.c.id)
        if thread_id is not None:
            query = query.where(t.jobs.c.thread_id == thread_id)
        if undone:
            query = query.where(t.jobs.c.done_at.is_(None))
        return self.rows(query)

    def unlinked_audit(self) -> int:
        """Audit entries committed but not linked into the chain yet (the bot's linker's work)."""
        with self._db.sync_engine.connect() as conn:
            return int(conn.scalar(sa.select(sa.func.count()).select_from(t.audit_inbox)) or 0)


# ---- one test's hands -----------------------------------------------------------------------


def messages_of(state: JSON, channel: str = CHANNEL) -> list[JSON]:
    for ch in state["channels"]:
        if ch["id"] == channel:
            return list(ch["messages"])
    return []


def in_channel(state: JSON, channel: str = CHANNEL) -> list[JSON]:
    """What the channel itself shows: its top-level messages and the replies broadcast to it
    (`reply_broadcast`, subtype `thread_broadcast`), not the rest of its threads."""
    return [
        m
        for m in messages_of(state, channel)
        if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"
    ]


def card_of(state: JSON, approval_id: str, channel: str = CHANNEL) -> JSON | None:
    """The top-level message whose blocks mention the approval (its card), if posted."""
    found = cards_of(state, approval_id, channel)
    return found[0] if found else None


def cards_of(state: JSON, approval_id: str, channel: str = CHANNEL) -> list[JSON]:
    """Every top-level message whose blocks mention the approval, oldest first: one, once its
    card is posted (a second would be the card posted twice)."""
    needle = f"`{approval_id}`"
    return [
        m
        for m in messages_of(state, channel)
        if m.get("thread_ts") in (None, m["ts"]) and needle in text_of(m.get("blocks") or [])
    ]


def replies_of(state: JSON, card: JSON) -> list[str]:
    """The texts of the replies in a card's thread, oldest first."""
    return [
        m["text"]
        for m in messages_of(state, card["channel"])
        if m.get("thread_ts") == card["ts"] and m["ts"] != card["ts"]
    ]


def action_ids(message: JSON) -> list[str]:
    return [
        e["action_id"]
        for b in message.get("blocks") or []
        if b.get("type") == "actions"
        for e in b.get("elements") or []
    ]


def text_of(blocks_or_message: Any) -> str:
    """Every text in a message (not its earlier versions) or view, joined, for `in` checks."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "edits":
                    continue
                if key == "text" and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(blocks_or_message)
    return "\n".join(found)


def ephemerals_of(state: JSON, user: str) -> list[JSON]:
    return list(state["ephemerals"].get(user, []))


@dataclass
class Run:
    """A run started for a test, paused on its approval."""

    thread_id: str
    approval_id: str
    card: JSON = field(default_factory=dict)
    """The card as first posted (with its buttons)."""


class E2E:
    """What a test uses: the fake Slack's control API, the bot's HTTP API and database."""

    def __init__(
        self, slack: SandboxClient, bot: BotProcess, db: BotDatabase, http: aiohttp.ClientSession
    ) -> None:
        self.slack = slack
        self.bot = bot
        self.db = db
        self.http = http
        self.signer = SlackSigner(SECRET)

    # the bot's HTTP API ---------------------------------------------------------------------

    async def api(
        self, verb: str, path: str, *, token: str | None = API_TOKEN, body: Any = None
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        async with self.http.request(verb, self.bot.url + path, json=body, headers=headers) as res:
            text = await res.text()
            try:
                return res.status, json.loads(text)
            except ValueError:
                return res.status, text

    async def start(
        self, workflow: str, input: JSON, requester: str = CAROL, *, card: bool = True
    ) -> Run:
        """Start a run over `POST /api/runs`; with `card`, wait for its card to be posted."""
        status, body = await self.api(
            "POST", "/api/runs", body={"workflow": workflow, "input": input, "requester": requester}
        )
        assert status == 201, body
        assert body["status"] == "paused", body
        (approval_id,) = body["approvals"]
        run = Run(body["thread_id"], approval_id)
        if card:
            run.card = await self.card(approval_id)
        return run

    async def refund(self, customer: str, amount: float = 42.5, requester: str = CAROL) -> Run:
        """A refund run for `customer` (make it unique per test: the card's title names it)."""
        return await self.start(
            "refund",
            {
                "customer_id": customer,
                "order_id": f"order-{secrets.token_hex(4)}",
                "amount": amount,
                "reason": "damaged in transit",
            },
            requester,
        )

    # waiting on the fake ------------------------------------------------------------------------

    async def wait(
        self, predicate: Callable[[JSON], Any], what: str, timeout: float = WAIT
    ) -> JSON:
        try:
            return await self.slack.wait_for(predicate, timeout=timeout)
        except TimeoutError:
            raise AssertionError(
                f"fake Slack: {what} did not happen within {timeout:g}s; the bot said:\n{self.bot.output()}"
            ) from None

    async def card(
        self,
        approval_id: str,
        predicate: Callable[[JSON], Any] = lambda card: True,
        what: str = "the card",
    ) -> JSON:
        """The approval's card once `predicate(card)` holds."""
        state = await self.wait(
            lambda s: (c := card_of(s, approval_id)) is not None and predicate(c),
            f"{what} of {approval_id}",
        )
        found = card_of(state, approval_id)
        assert found is not None
        return found

    async def decided_card(self, approval_id: str) -> JSON:
        """The card once it has been updated in place and has no buttons left."""
        return await self.card(
            approval_id, lambda c: c.get("edited") and not action_ids(c), "the decided card"
        )

    async def replies(
        self, card: JSON, predicate: Callable[[list[str]], Any], what: str
    ) -> list[str]:
        state = await self.wait(lambda s: predicate(replies_of(s, card)), what)
        return replies_of(state, card)

    async def ephemerals(self, user: str) -> list[JSON]:
        return ephemerals_of(await self.slack.state(), user)

    async def new_ephemerals(self, user: str, before: int, count: int = 1) -> list[JSON]:
        """The ephemerals `user` got after the first `before` ones, once there are `count`."""
        state = await self.wait(
            lambda s: len(ephemerals_of(s, user)) >= before + count,
            f"{count} ephemeral(s) for {user}",
        )
        return ephemerals_of(state, user)[before:]

    async def idle(self, timeout: float = WAIT) -> None:
        """Wait until the bot has no job left to do and its audit entries are linked (a quiet
        moment to inject a fault, or to compare the database)."""
        deadline = time.monotonic() + timeout
        while self.db.jobs(undone=True) or self.db.unlinked_audit():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the bot still has jobs after {timeout:g}s: {self.db.jobs(undone=True)}"
                )
            await asyncio.sleep(0.05)

    # signed requests made by hand -------------------------------------------------------------

    async def click_request(self, user: str, card: JSON, action_id: str) -> SlackRequest:
        """The request Slack sends when `user` clicks `action_id` on `card` as it is there (maybe
        an old copy: what a client that has not refreshed yet shows), not yet signed."""
        return await self.slack.click_request(user, card, action_id)

    async def send(
        self, request: SlackRequest, *, timestamp: int | None = None, signature: str | None = None
    ) -> AppResponse:
        """Send the bot a request over HTTP, signed now with the shared secret unless told otherwise."""
        return await self.signer.send(
            self.bot.events_url,
            request,
            timestamp=timestamp,
            signature=signature,
            session=self.http,
        )

    async def signed_click(
        self,
        user: str,
        card: JSON,
        action_id: str,
        *,
        timestamp: int | None = None,
        signature: str | None = None,
    ) -> AppResponse:
        """`click_request` sent by hand (`send`)."""
        return await self.send(
            await self.click_request(user, card, action_id),
            timestamp=timestamp,
            signature=signature,
        )


class TcpProxy:
    """A TCP relay from a local port to `target`: the database "goes away" with `cut()` (every
    connection dropped, new ones closed at once) and comes back with `restore()`."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        threading.Thread(target=self._accept, name="e2e-proxy", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            if not self._open.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets |= {client, upstream}
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):  # wakes the other direction's pump, which closes its own source
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._sockets.discard(src)
            src.close()

    def cut(self) -> None:
        self._open.clear()
        with self._lock:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def restore(self) -> None:
        self._open.set()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self.cut()


def pg_schema(name: str) -> tuple[str, Callable[[], None]]:
    """A new, empty schema named after `name`; call the second item to drop it."""
    return pg.schema_with_drop(f"signoff_e2e_{name}")
