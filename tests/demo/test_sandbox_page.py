"""The sandbox page's server side, without a browser or a bot: its files, its config, the
routes it adds to the fake Slack, and the demo people agreeing with the demo policy."""

from __future__ import annotations

import re
import tomllib
from collections.abc import AsyncIterator

import pytest
from aiohttp import ClientSession, web

from bot.approvals.policy import load_policy
from bot.demo import demo_workflows
from bot.sandbox import FakeSlack
from bot.sandbox.page import STATIC, DemoPage
from bot.sandbox.people import DEMO_POLICY, PEOPLE, demo_workspace


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeSlack, DemoPage, str]]:
    slack = FakeSlack(demo_workspace)
    page = DemoPage(slack, workflows=demo_workflows(DEMO_POLICY))
    page.add_routes(slack.app)
    runner = web.AppRunner(slack.app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield slack, page, url
    finally:
        await slack.stop()
        await runner.cleanup()


def test_the_demo_people_are_the_ones_the_demo_policy_names() -> None:
    policy = load_policy(DEMO_POLICY)
    with open(DEMO_POLICY, "rb") as f:
        raw = tomllib.load(f)
    ids = {p.id for p in PEOPLE}
    named = {m for members in raw["groups"].values() for m in members}
    named |= {
        a
        for action in raw["actions"].values()
        for a in action.get("approvers", [])
        if not a.startswith("@")
    }
    assert named <= ids, f"the policy names people the sandbox lacks: {named - ids}"
    assert ids <= named, f"the sandbox has people the policy never names: {ids - named}"
    ws = demo_workspace()
    assert {g.handle: g.users for g in ws.usergroups.values()} == raw["groups"]
    assert set(policy.groups) == set(raw["groups"])
    for person in PEOPLE:
        assert re.fullmatch(r"U[A-Z0-9_]+", person.id)  # what messages.mention() turns into <@id>
        assert ws.user(person.name).id == person.id


async def test_the_page_and_its_files_are_served_uncached(
    served: tuple[FakeSlack, DemoPage, str],
) -> None:
    _, _, url = served
    async with ClientSession() as http:
        async with http.get(url + "/") as res:
            html = await res.text()
            assert res.status == 200 and res.headers["Cache-Control"] == "no-store"
        for src in re.findall(r'(?:src|href)="(/static/[^"]+)"', html):
            async with http.get(url + src) as res:
                assert res.status == 200, src
    assert not re.search(r"https?://", html), "the page must load nothing from elsewhere"
    for path in STATIC.iterdir():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"""(?:src|href|url)\s*[=(]\s*["']?https?://""", text), path.name
        assert 'fetch("http' not in text and "import(" not in text, path.name


async def test_config_lists_the_people_and_the_bundled_workflows(
    served: tuple[FakeSlack, DemoPage, str],
) -> None:
    _, _, url = served
    async with ClientSession() as http, http.get(url + "/_demo/config") as res:
        config = await res.json()
    assert [p["id"] for p in config["people"]] == [p.id for p in PEOPLE]
    flows = {w["name"]: w for w in config["workflows"]}
    assert set(flows) == {"refund", "delete_row", "vendor_payment", "support_agent"}
    assert [i["name"] for i in flows["refund"]["inputs"]] == [
        "customer_id",
        "order_id",
        "amount",
        "reason",
    ]
    assert {i["name"]: i["type"] for i in flows["refund"]["inputs"]}["amount"] == "number"
    assert flows["refund"]["starters"] == ["@support", "@finance", "billing-service"]
    agent = {i["name"]: i["example"] for i in flows["support_agent"]["inputs"]}
    assert agent == {
        "ticket": "My kettle from order o-1001 arrived broken.",
        "customer_id": "cust_9",
    }
    assert config["channel"] == "C_APPROVALS"


async def test_starting_a_run_needs_the_bot_and_a_known_person(
    served: tuple[FakeSlack, DemoPage, str],
) -> None:
    _, page, url = served
    async with ClientSession() as http:
        run = {"user": "U_CAROL", "workflow": "refund", "input": {}}
        async with http.post(url + "/_demo/runs", json=run) as res:
            assert res.status == 503 and "not running" in (await res.json())["error"]
        async with http.post(url + "/_demo/runs", json={**run, "user": "U_NOBODY"}) as res:
            assert res.status == 400 and (await res.json())["error"] == "user_not_found"
        page.bot_url, page.api_token = "http://127.0.0.1:9", "t"
        async with http.post(url + "/_demo/runs", json=run) as res:
            assert res.status == 502 and "the bot did not answer" in (await res.json())["error"]


async def test_a_person_writes_a_message_and_closes_a_modal(
    served: tuple[FakeSlack, DemoPage, str],
) -> None:
    slack, _, url = served
    async with ClientSession() as http:
        said = {"user": "carol", "channel": "general", "text": "hi <@U_BOB> & co"}
        async with http.post(url + "/_sandbox/act/message", json=said) as res:
            ts = (await res.json())["ts"]
        async with http.post(url + "/_sandbox/act/message", json={**said, "text": "  "}) as res:
            assert res.status == 400 and (await res.json())["error"] == "no_text"
        msg = slack.workspace.channel("general").messages[ts]
        assert (msg.user, msg.text) == (
            "U_CAROL",
            "hi &lt;@U_BOB&gt; &amp; co",
        )  # typed, not a mention

        view = slack.workspace.new_view(
            "U_BOB", {"type": "modal", "title": {"type": "plain_text", "text": "x"}, "blocks": []}
        )
        view.errors = {"b": "wrong"}
        slack.workspace.views["U_BOB"] = [view]
        async with http.get(url + "/_sandbox/state") as res:
            assert (await res.json())["views"]["U_BOB"][0]["errors"] == {"b": "wrong"}
        async with http.post(url + "/_sandbox/act/close", json={"user": "U_BOB"}) as res:
            assert res.status == 200
        assert slack.workspace.views["U_BOB"] == []
        async with http.post(url + "/_sandbox/act/close", json={"user": "U_BOB"}) as res:
            assert res.status == 400 and (await res.json())["error"] == "not_found"


async def test_usergroups_list_names_the_policy_groups(
    served: tuple[FakeSlack, DemoPage, str],
) -> None:
    slack, _, url = served
    token = slack.bot_token
    async with (
        ClientSession() as http,
        http.post(
            url + "/api/usergroups.list", headers={"Authorization": f"Bearer {token}"}
        ) as res,
    ):
        body = await res.json()
    assert body["ok"] and {g["handle"]: g["id"] for g in body["usergroups"]} == {
        "finance": "S_FINANCE", "ops": "S_OPS", "support": "S_SUPPORT",
    }  # fmt: skip
