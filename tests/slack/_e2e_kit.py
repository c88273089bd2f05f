"""End-to-end kit: the fake Slack and the bot as real processes, talking signed HTTP.

- `FakeSlackProcess`: `python -m bot.sandbox.slack_api` with the demo workspace (alice, bob,
  carol, dave; #approvals; the user group `@approvers` = alice and bob); one per session.
- `BotProcess`: `signoff run --port P` on a database, its Web API pointed at the fake
  (`SIGNOFF_SLACK_API_URL`), ready once `/healthz` answers. Test modules start one per module
  and give each test a fresh run (a new thread and approval) instead of restarting it.
- `E2E`: one test's hands: it starts runs over the HTTP API, waits on the fake's workspace
  (long polls, no fixed sleeps), clicks as a person (through the fake, which signs the request),
  sends hand-made signed requests, and reads the bot's database (effects, jobs) directly.

PostgreSQL is `postgresql://postgres@127.0.0.1:5432/test` unless `SIGNOFF_TEST_PG_URL` says
otherwise; each bot gets a schema of its own, selected with `search_path` in the URL. When the
server cannot be reached those tests are skipped, except under `CI=true`, where they fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from bot.approvals import tables as t
from bot.approvals.db import Database
from bot.sandbox.client import READY_PREFIX, SandboxClient
from bot.sandbox.interactions import find_element
from bot.sandbox.signing import AppResponse, SlackRequest, SlackSigner, block_actions

SECRET = "e2e-signing-secret"
"""The signing secret the bot and the fake share."""
API_TOKEN = "e2e-api-token"
"""The bearer token of the bot's `POST /api/runs`."""
CHANNEL = "C0APPROVALS"
ALICE, BOB, CAROL, DAVE = "U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"
WAIT = 20.0
"""Seconds to wait for anything to happen (generous: CI machines are slow and shared)."""

PG_URL = os.environ.get("SIGNOFF_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")

JSON = dict[str, Any]


# ---- processes --------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeSlackProcess:
    """`python -m bot.sandbox.slack_api --port 0`, with its pid at hand (to pause it) and its
    output in `directory/fake-slack.log`."""

    def __init__(self, directory: Path, timeout: float = 30.0) -> None:
        self.log = directory / "fake-slack.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-u", "-m", "bot.sandbox.slack_api", "--port", "0"],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while not (
            ready := re.search(
                f"^{re.escape(READY_PREFIX)}(.+)$", self.log.read_text(), re.MULTILINE
            )
        ):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"fake Slack did not start (exit status {self.proc.returncode}):\n{self.log.read_text()}"
                )
            time.sleep(0.02)
        self.url = ready.group(1).strip()
        """The Web API base URL, what `SIGNOFF_SLACK_API_URL` takes."""
        self.app_url: str | None = None
        """Where the fake sends the person's requests (see `connect`)."""

    async def connect(self, slack: SandboxClient, app_url: str) -> None:
        """Point the fake at the bot listening at `app_url` (once: it keeps the connection)."""
        if self.app_url != app_url:
            await slack.connect_app(app_url, SECRET)
            self.app_url = app_url

    def pause(self) -> None:
        """Stop the process (SIGSTOP): calls to it hang until `resume()`."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.resume()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def write_policy(directory: Path, text: str) -> Path:
    path = directory / "policy.toml"
    path.write_text(text)
    return path


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{quote(str(directory / 'signoff.db'))}"


class BotProcess:
    """`signoff run` in HTTP mode on 127.0.0.1, its output in a log file beside the database.

    Args:
        directory: where the log goes.
        db_url: `SIGNOFF_DATABASE_URL`.
        slack_url: the fake's Web API base URL.
        policy: the policy file.
        env: more environment (e.g. `SIGNOFF_SWEEP_INTERVAL`).
    """

    def __init__(
        self, directory: Path, db_url: str, slack_url: str, policy: Path, **env: str
    ) -> None:
        self.db_url = db_url
        self.read_url = db_url
        """Where the tests read the bot's database (set it when the bot's URL goes through a relay)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.events_url = f"{self.url}/slack/events"
        self.log = directory / f"bot-{self.port}.log"
        self.env = {
            **os.environ,
            "SLACK_BOT_TOKEN": "xoxb-e2e",
            "SLACK_SIGNING_SECRET": SECRET,
            "SIGNOFF_SLACK_API_URL": slack_url,
            "SIGNOFF_DATABASE_URL": db_url,
            "SIGNOFF_POLICY": str(policy),
            "SIGNOFF_API_TOKEN": API_TOKEN,
            "SIGNOFF_DEFAULT_CHANNEL": CHANNEL,
            **env,
        }
        self.env.pop("SLACK_APP_TOKEN", None)  # HTTP mode, whatever the developer's shell says
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "bot.cli", "run", "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=directory,
            )  # fmt: skip
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"signoff run exited with {self.proc.returncode}:\n{self.output()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as res:
                    if res.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(
            f"signoff run did not answer /healthz within {timeout:g}s:\n{self.output()}"
        )

    def output(self) -> str:
        """What the process printed so far (the tail)."""
        return self.log.read_text(errors="replace")[-6000:]

    def kill(self) -> None:
        """SIGKILL: no cleanup, as when the machine dies."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        """SIGTERM and wait (SIGKILL after ten seconds)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


# ---- the bot's database ---------------------------------------------------------------------


class BotDatabase:
    """Reads of the bot's tables, from the test process (a pool of its own)."""

    def __init__(self, url: str) -> None:
        self._db = Database(url)

    def close(self) -> None:
        self._db.close()

    def rows(self, query: sa.Select[Any]) -> list[JSON]:
        with self._db.sync_engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

    def effects(self, thread_id: str, kind: str | None = None) -> list[JSON]:
        """What the run did (refunds, emails), oldest first, each with its data decoded."""
        query = (
            sa.select(t.effects).where(t.effects.c.thread_id == thread_id).order_by(t.effects.c.id)
        )
        if kind is not None:
            query = query.where(t.effects.c.kind == kind)
        return [{**r, "data": json.loads(r["data"])} for r in self.rows(query)]

    def run(self, thread_id: str) -> JSON | None:
        found = self.rows(sa.select(t.runs).where(t.runs.c.thread_id == thread_id))
        return found[0] if found else None

    def approval(self, approval_id: str) -> JSON:
        (row,) = self.rows(sa.select(t.approvals).where(t.approvals.c.id == approval_id))
        return row

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


def card_of(state: JSON, approval_id: str, channel: str = CHANNEL) -> JSON | None:
    """The top-level message whose blocks mention the approval (its card), if posted."""
    needle = f"`{approval_id}`"
    for m in messages_of(state, channel):
        if m.get("thread_ts") not in (None, m["ts"]):
            continue
        if needle in text_of(m.get("blocks") or []):
            return m
    return None


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
        block_id, element = find_element(card["blocks"], action_id)
        message = {k: v for k, v in card.items() if k not in ("channel", "replies", "edits")}
        return block_actions(
            action_id=action_id, value=element.get("value"), block_id=block_id,
            user_id=user, channel_id=card["channel"], message=message,
            trigger_id=await self.slack.trigger_id(user),
            response_url=await self.slack.response_url(card["channel"], user, card["ts"]),
        )  # fmt: skip

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


def pg_admin() -> str:
    return make_url(PG_URL).set(drivername="postgresql").render_as_string(hide_password=False)


def pg_server() -> str:
    """The PostgreSQL URL once it answered; skip (fail under CI) when it does not."""
    try:
        with psycopg.connect(pg_admin(), connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as e:
        message = f"PostgreSQL at {make_url(PG_URL).render_as_string()} is unreachable: {e}"
        if IN_CI:
            pytest.fail(f"{message} (CI=true: PostgreSQL tests must run, not skip)")
        pytest.skip(f"{message}; set SIGNOFF_TEST_PG_URL to run these tests")
    return PG_URL


def pg_schema(name: str) -> tuple[str, Callable[[], None]]:
    """A new, empty schema; call the second item to drop it."""
    schema = f"signoff_e2e_{re.sub(r'[^a-z0-9_]', '_', name.lower())}_{os.getpid()}_{secrets.token_hex(3)}"
    with psycopg.connect(pg_admin(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')

    def drop() -> None:
        with psycopg.connect(pg_admin(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    return schema, drop


def pg_url(schema: str, *, port: int | None = None) -> str:
    """The test server's URL on `schema` (`search_path`), through a local `port` if given."""
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    if port is not None:
        url = url.set(host="127.0.0.1", port=port)
    return url.render_as_string(hide_password=False)


def pg_address() -> tuple[str, int]:
    url = make_url(PG_URL)
    return url.host or "127.0.0.1", url.port or 5432
