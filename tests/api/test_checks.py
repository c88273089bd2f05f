"""A service's check (`check_url` in `[services.NAME]`), over real HTTP: the approvals API in
front of the governance core, and the service as a local aiohttp receiver that answers the
facts and takes the webhooks. The facts it answered are on the approval; once people approve,
the service reads `pending` (`rechecking`) until the facts are read again and found unchanged,
and never `approved` when they changed or the check failed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.approvals.errors import PolicyError
from bot.approvals.external import verify_webhook
from bot.approvals.policy import parse_policy
from bot.http.webhooks import WebhookClient
from tests.api.conftest import BILLING_TOKEN, REFUND, Api, serve_api
from tests.kit.flows import POLICY
from tests.kit.signoff import Kit

SERVICE = """
[services.billing]
token_env = "TEST_BILLING_TOKEN"
actions = ["send_refund"]
callback_urls = ["http://127.0.0.1:*"]
callback_private = true
check_url = "{url}/facts"
"""


class Service:
    """The billing service: answers its check with `facts` (or `status`, or after `delay`
    seconds), and keeps the webhooks it is sent."""

    def __init__(self) -> None:
        self.facts: dict[str, Any] = {"balance": "120.00"}
        self.status = 200
        self.delay = 0.0
        self.asked: list[dict[str, Any]] = []
        self.hooks: list[dict[str, Any]] = []
        self.url = ""

    async def check(self, request: web.Request) -> web.Response:
        body = await request.read()
        assert verify_webhook(BILLING_TOKEN, request.headers["Signoff-Signature"], body)
        self.asked.append(json.loads(body))
        await asyncio.sleep(self.delay)
        return web.json_response(self.facts, status=self.status)

    async def hook(self, request: web.Request) -> web.Response:
        self.hooks.append(json.loads(await request.read())["approval"])
        return web.Response(status=204)


@pytest.fixture
async def service() -> AsyncIterator[Service]:
    found = Service()
    app = web.Application()
    app.router.add_post("/facts", found.check)
    app.router.add_post("/hook", found.hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    found.url = f"http://{host}:{port}"
    yield found
    await runner.cleanup()


@pytest.fixture
async def api(db_url: str, tmp_path: Path, service: Service) -> AsyncIterator[Api]:
    policy = POLICY + SERVICE.format(url=service.url)
    async for found in serve_api(Kit(db_url, tmp_path), policy=policy):
        client = WebhookClient(timeout=5.0)  # as `signoff run` wires it
        found.kit.app.external.send = client.send
        found.kit.app.external.checks.post = client.ask_facts
        yield found
        await client.close()


async def ask(api: Api, service: Service) -> dict[str, Any]:
    status, body = await api.post(
        {
            "action": "send_refund",
            "args": REFUND,
            "requester": "U_CAROL",
            "callback_url": f"{service.url}/hook",
        }
    )
    assert status == 202, body
    return dict(body)


async def read(api: Api, approval_id: str) -> dict[str, Any]:
    status, body = await api.get(f"/api/approvals/{approval_id}")
    assert status == 200, body
    return dict(body)


async def approve_latest(api: Api) -> str:
    """Approve, as Alice, the approval that is pending now (the kit's clock stands still: the
    rows' times are the same)."""
    (row,) = [r for r in await api.kit.approvals() if r["status"] == "pending"]
    await api.kit.app.decide(row["id"], "U_ALICE", True)
    return str(row["id"])


async def test_unchanged_facts_read_approved_only_after_they_are_read_again(
    api: Api, service: Service
) -> None:
    asked = await ask(api, service)
    assert asked["checked"]["facts"] == {"balance": "120.00"}
    assert service.asked[0]["action"] == "send_refund"
    assert service.asked[0]["approval_id"] == asked["approval_id"]

    await approve_latest(api)
    assert len(service.asked) == 1
    between = await read(api, asked["approval_id"])
    assert between["status"] == "pending" and between["rechecking"] is True
    assert between["approved"] is False and between["decision"] is None
    await api.kit.app.run_jobs(("webhook",))  # its webhook, before the facts are read again
    assert service.hooks == []  # waits: it is not "go" yet

    await api.kit.app.run_jobs()
    api.kit.clock.advance(2)  # the webhook's next try
    await api.kit.app.run_jobs()

    after = await read(api, asked["approval_id"])
    assert after["status"] == "approved" and after["approved"] is True
    assert after["rechecking"] is False
    assert len(service.asked) > 1  # read again after the approval, before "go"
    assert [h["status"] for h in service.hooks] == ["approved"]


async def test_changed_facts_never_read_approved_and_ask_again_showing_old_and_new(
    api: Api, service: Service
) -> None:
    asked = await ask(api, service)
    service.facts = {"balance": "80.00"}
    first = await approve_latest(api)

    await api.kit.app.run_jobs()

    again = await read(api, asked["approval_id"])
    assert again["status"] == "pending" and again["approved"] is False
    assert again["checked"]["changed"] == {"balance": ["120.00", "80.00"]}
    assert again["checked"]["after"] == first
    assert service.hooks == []  # the approval that was not used sends nothing
    refused = [e for e in await api.kit.audit("recheck_refused") if e["approval_id"] == first]
    assert refused and refused[0]["data"]["changed"] == {"balance": ["120.00", "80.00"]}

    await approve_latest(api)
    await api.kit.app.run_jobs()

    done = await read(api, asked["approval_id"])
    assert done["status"] == "approved" and done["approved"] is True
    assert [h["status"] for h in service.hooks] == ["approved"]
    assert [h["checked"]["facts"] for h in service.hooks] == [{"balance": "80.00"}]


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        ("HTTP 500", "the check_url answered HTTP 500"),
        ("not facts", "the check's answer was refused: it answered list"),
        ("too slow", "the check_url did not answer within 0.5s"),
    ],
)
async def test_a_check_that_fails_after_the_approval_is_a_refusal(
    api: Api, service: Service, failure: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bot.approvals._service_checks.CHECK_TIMEOUT", 0.5)
    asked = await ask(api, service)
    if failure == "HTTP 500":
        service.status = 500
    elif failure == "not facts":
        service.facts = ["balance", "120.00"]  # type: ignore[assignment]
    else:
        service.delay = 2.0
    await approve_latest(api)

    await api.kit.app.run_jobs()

    seen = await read(api, asked["approval_id"])
    assert seen["status"] == "rejected" and seen["approved"] is False
    assert said in seen["decision"]["note"]
    assert "the action does not run" in seen["decision"]["note"]
    assert [h["status"] for h in service.hooks] == ["rejected"]
    assert await api.kit.audit("check_failed")


@pytest.mark.parametrize(
    ("check_url", "said"),
    [
        (
            '"https://facts.example/x"',
            (
                "signoff.toml:6: services.billing.check_url: https://facts.example:443 is not "
                "allowed for service billing (allowed: none); add its origin to callback_urls"
            ),
        ),
        ("5", "signoff.toml:6: services.billing.check_url: must be an http(s) URL, got 5"),
    ],
)
def test_a_check_url_is_held_to_the_callback_rules(check_url: str, said: str) -> None:
    text = (
        '[actions.a]\napprovers = ["U1"]\n[services.billing]\ntoken_env = "T"\n'
        f'actions = ["a"]\ncheck_url = {check_url}\n'
    )
    with pytest.raises(PolicyError) as raised:
        parse_policy(text)
    assert str(raised.value).startswith(said)
