"""The approvals API's bench: the governance core on a fresh database (SQLite, then PostgreSQL)
with two services in its policy, and the bot's real aiohttp application in front of it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from aiohttp.test_utils import TestClient, TestServer

from bot.approvals import tables as t
from bot.approvals.db import Database
from bot.config import Settings
from bot.http import Metrics, build_web_app
from tests.kit.e2e_fixtures import fake_slack, http  # noqa: F401  (the end-to-end tests)
from tests.kit.flows import POLICY
from tests.kit.signoff import Kit

BILLING_TOKEN = "billing-token-0123456789abcdef"
OPS_TOKEN = "ops-token-0123456789abcdef-xyz"

SERVICES = """
[services.billing]
token_env = "TEST_BILLING_TOKEN"
actions = ["send_refund", "charge_card"]
callback_urls = ["https://billing.example", "http://127.0.0.1:*"]
callback_private = true
may_act_for = ["U_CAROL"]

[services.ops-bot]
token_env = "TEST_OPS_TOKEN"
webhook_secret_env = "TEST_OPS_WEBHOOK_SECRET"
actions = ["delete_row"]
callback_urls = ["https://ops.example"]
owners = ["U_DAVE"]
"""

API_POLICY = POLICY + SERVICES
TOKENS = {
    "TEST_BILLING_TOKEN": BILLING_TOKEN,
    "TEST_OPS_TOKEN": OPS_TOKEN,
    "TEST_OPS_WEBHOOK_SECRET": "ops-webhook-secret",
}

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Api:
    kit: Kit
    client: TestClient  # type: ignore[type-arg]
    kicks: list[None]

    @contextlib.asynccontextmanager
    async def crowd(self) -> AsyncIterator[int]:
        """Hold every connection the bot's pool may open (yields how many), as a burst of
        other requests would: until it ends, a request that needs one waits `POOL_TIMEOUT`."""
        pool: Any = self.kit.db.engine.sync_engine.pool
        every = pool.size() + pool._max_overflow
        async with contextlib.AsyncExitStack() as held:
            for _ in range(every):
                await held.enter_async_context(self.kit.db.engine.connect())
            yield every

    async def counts(self) -> dict[str, int]:
        """Runs, approvals and audit entries (by kind) recorded so far."""
        out = {
            "runs": len(await self.kit.rows(sa.select(t.runs))),
            "approvals": len(await self.kit.rows(sa.select(t.approvals))),
            "jobs": len(await self.kit.rows(sa.select(t.jobs))),
        }
        for entry in await self.kit.audit():
            out[entry["kind"]] = out.get(entry["kind"], 0) + 1
        return out

    async def post(
        self, body: Any, *, token: str = BILLING_TOKEN, key: str | None = None
    ) -> tuple[int, Any]:
        headers = bearer(token)
        if key is not None:
            headers["Idempotency-Key"] = key
        resp = await self.client.post("/api/approvals", json=body, headers=headers)
        return resp.status, await resp.json()

    async def get(self, path: str, *, token: str = BILLING_TOKEN) -> tuple[int, Any]:
        resp = await self.client.get(path, headers=bearer(token))
        return resp.status, await resp.json()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{quote(str(tmp_path / 'signoff.db'))}"
    return str(request.getfixturevalue("pg_url"))


POOL_TIMEOUT = 0.5
"""Seconds a request waits for a pooled connection, in `crowded_api`."""


@pytest.fixture
async def api(db_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    async for found in serve_api(Kit(db_url, tmp_path)):
        yield found


@pytest.fixture
async def crowded_api(db_url: str, tmp_path: Path) -> AsyncIterator[Api]:
    """`api` on a pool `Api.crowd` can use up: on PostgreSQL two connections, on SQLite
    SQLAlchemy's fifteen, each request waiting `POOL_TIMEOUT` for one."""
    kit = Kit(db_url, tmp_path)
    await kit.db.aclose()
    kit._dbs.remove(kit.db)
    pool = {"pool_size": 2, "max_overflow": 0} if db_url.startswith("postgresql") else {}
    kit.db = Database(db_url, pool_timeout=POOL_TIMEOUT, **pool)
    kit._dbs.append(kit.db)
    async for found in serve_api(kit):
        yield found


CHANNEL = "C0APPROVALS"
"""`SIGNOFF_DEFAULT_CHANNEL` of `serve_api`'s bot: where the cards go."""


async def serve_api(
    kit: Kit, *, policy: str = API_POLICY, default_channel: str | None = CHANNEL
) -> AsyncIterator[Api]:
    """The bot's aiohttp application on `kit`'s database, with the API's policy (or `policy`)
    and tokens, and `default_channel` as its `SIGNOFF_DEFAULT_CHANNEL`."""
    db_url = kit.db_url
    kit.policy_path.write_text(policy, encoding="utf-8")
    kit.app = kit.new_app(sink=kit.sink, share_db=True)
    kit.app.external.load_tokens(TOKENS)
    await kit.db.upgrade()
    settings = Settings(
        database_url=db_url,
        policy_path=kit.policy_path,
        api_token="runs-token",
        default_channel=default_channel,
    )
    kicks: list[None] = []

    class Runner:
        def kick(self) -> None:
            kicks.append(None)

    app = build_web_app(kit.app, settings, bolt_app=None, runner=Runner(), metrics=Metrics())  # type: ignore[arg-type]
    async with TestClient(TestServer(app)) as client:
        yield Api(kit, client, kicks)
    await kit.aclose()
