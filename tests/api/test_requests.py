"""The approvals API in process: a service asks, a person decides, the service reads the
decision; deny by default, every refusal audited and nothing else recorded. SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from aiohttp.test_utils import TestClient, TestServer

from bot.approvals import store
from bot.approvals import tables as t
from bot.approvals.db import Database, DatabaseBusy
from bot.config import Settings
from bot.http import Metrics, build_web_app
from tests.api.conftest import API_POLICY, BILLING_TOKEN, OPS_TOKEN, REFUND, Api
from tests.kit import flows
from tests.kit.signoff import Kit


async def test_a_service_asks_a_person_approves_and_the_service_reads_the_decision(
    api: Api,
) -> None:
    status, body = await api.post(
        {"action": "send_refund", "args": REFUND, "requester": "U_CAROL", "title": "Refund o-1"},
        key="refund-o-1",
    )
    assert status == 202, body
    assert body["status"] == "pending" and body["approved"] is False
    assert body["service"] == "billing" and body["requester"] == "U_CAROL"
    assert body["args"] == REFUND and body["title"] == "Send a refund"
    assert body["note"] == "Refund o-1"  # the service's words: its note, never the title
    assert body["decision"] is None
    approval_id = body["approval_id"]
    (row,) = await api.kit.approvals()
    assert row["status"] == "pending" and row["requester"] == "U_CAROL"
    assert api.kicks  # the card goes out at once

    status, listed = await api.get("/api/approvals?status=pending")
    assert status == 200 and [a["approval_id"] for a in listed["approvals"]] == [approval_id]

    waiting = asyncio.ensure_future(api.get(f"/api/approvals/{approval_id}?wait=30"))
    await api.kit.app.decide(row["id"], "U_ALICE", True, edits={"amount": 40})
    status, seen = await waiting
    assert status == 200
    assert seen["status"] == "approved" and seen["approved"] is True
    assert seen["decision"]["by"] == ["U_ALICE"]
    assert seen["decision"]["edits"] == {"amount": 40}
    assert seen["decision"]["args"] == {**REFUND, "amount": 40}
    assert seen["args"] == REFUND  # as requested

    await api.kit.app.run_jobs()
    assert (await api.kit.run(approval_id))["status"] == "completed"
    status, listed = await api.get("/api/approvals")
    assert listed == {"approvals": []}
    # The service's name is on every audit entry of the run: start, request, vote, decision.
    entries = [e for e in await api.kit.audit() if e["thread_id"] == approval_id]
    kinds = [e["kind"] for e in entries]
    assert kinds[:2] == ["run_started", "requested"] and "approved" in kinds, kinds
    assert all(e["data"]["service"] == "billing" for e in entries)


async def test_the_same_idempotency_key_is_one_approval_and_a_different_request_is_refused(
    api: Api,
) -> None:
    request = {"action": "send_refund", "args": REFUND, "requester": "U_CAROL"}
    first, second = await asyncio.gather(api.post(request, key="k-1"), api.post(request, key="k-1"))
    assert {first[0], second[0]} <= {200, 202} and 202 in {first[0], second[0]}
    assert first[1]["approval_id"] == second[1]["approval_id"]
    status, again = await api.post(request, key="k-1")
    assert status == 200 and again["approval_id"] == first[1]["approval_id"]
    assert len(await api.kit.approvals()) == 1
    before = await api.counts()
    status, body = await api.post({**request, "args": {**REFUND, "amount": 99}}, key="k-1")
    assert status == 422
    assert body["problems"] == [
        {"field": "Idempotency-Key", "message": "was used for a different request"}
    ]
    after = await api.counts()
    assert after == {**before, "api_refused": before.get("api_refused", 0) + 1}
    # Another service's identical key is another approval of its own.
    status, other = await api.post(
        {"action": "delete_row", "args": {"table": "t", "row_id": "1"}, "requester": "U_CAROL"},
        token=OPS_TOKEN,
        key="k-1",
    )
    assert status == 202 and other["approval_id"] != first[1]["approval_id"]


async def test_refusals_say_what_is_wrong_and_record_only_the_refusal(api: Api) -> None:
    good = {"action": "send_refund", "args": REFUND, "requester": "U_CAROL"}
    cases = [
        ("no token", None, good, 401, "no bearer token"),
        ("wrong token", "nope-" + BILLING_TOKEN, good, 401, "a wrong bearer token"),
        (
            "unknown action",
            BILLING_TOKEN,
            {**good, "action": "wire_money"},
            403,
            "action 'wire_money' is not in the policy",
        ),
        (
            "action of another service",
            BILLING_TOKEN,
            {**good, "action": "delete_row", "args": {"table": "t", "row_id": "1"}},
            403,
            "service 'billing' may not ask for 'delete_row'; it may ask for "
            + "send_refund, charge_card",
        ),
        ("not JSON", BILLING_TOKEN, "[", 400, "the body must be a JSON object"),
        ("unknown field", BILLING_TOKEN, {**good, "amount": 3}, 400, "unknown field(s) amount"),
        ("no action", BILLING_TOKEN, {"args": {}, "requester": "U_CAROL"}, 400, '"action"'),
    ]
    for name, token, body, code, said in cases:
        before = await api.counts()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if isinstance(body, str):
            resp = await api.client.post("/api/approvals", data=body, headers=headers)
        else:
            resp = await api.client.post("/api/approvals", json=body, headers=headers)
        answer = await resp.json()
        assert resp.status == code, (name, answer)
        assert said in answer["error"], (name, answer["error"])
        after = await api.counts()
        assert after == {**before, "api_refused": before.get("api_refused", 0) + 1}, name
    refusals = await api.kit.audit("api_refused")
    assert [r["actor"] for r in refusals] == [None, None, *["billing"] * 5]
    assert refusals[2]["data"]["refusal"] == "UnknownAction"


async def test_arguments_are_checked_against_the_schema_and_each_field_named(api: Api) -> None:
    before = await api.counts()
    status, body = await api.post(
        {
            "action": "send_refund",
            "args": {"customer_id": "cust 1; drop", "amount": "12", "ammount": 4},
            "requester": "",
            "callback_url": "file:///etc/passwd",
        }
    )
    assert status == 422
    fields = {p["field"]: p["message"] for p in body["problems"]}
    assert set(fields) == {
        "requester",
        "callback_url",
        "args.customer_id",
        "args.amount",
        "args.ammount",
    }
    assert "http:// or https://" in fields["callback_url"]
    assert "is not an argument" in fields["args.ammount"]
    after = await api.counts()
    assert after == {**before, "api_refused": 1}
    (refusal,) = await api.kit.audit("api_refused")
    assert refusal["data"]["service"] == "billing" and "args.amount" in refusal["data"]["problems"]


async def test_a_service_reads_only_its_own_approvals_and_never_decides(api: Api) -> None:
    status, body = await api.post({"action": "send_refund", "args": REFUND, "requester": "U_CAROL"})
    assert status == 202
    approval_id = body["approval_id"]
    status, seen = await api.get(f"/api/approvals/{approval_id}", token=OPS_TOKEN)
    assert status == 404 and "no approval of yours" in seen["error"]
    status, listed = await api.get("/api/approvals", token=OPS_TOKEN)
    assert listed == {"approvals": []}
    (row,) = await api.kit.approvals()
    status, seen = await api.get(f"/api/approvals/{row['id']}")  # signoff's own id: not a door
    assert status == 404
    # A service's token decides nothing: there is no route for it, and the runs API refuses it.
    for path in (f"/api/approvals/{approval_id}", f"/api/approvals/{approval_id}/approve"):
        resp = await api.client.post(
            path, json={}, headers={"Authorization": f"Bearer {BILLING_TOKEN}"}
        )
        assert resp.status in (404, 405)
    status, bad = await api.get(f"/api/approvals/{approval_id}?wait=soon")
    assert status == 400 and "wait must be a number" in bad["error"]
    assert (await api.kit.approvals())[0]["status"] == "pending"


async def test_the_built_in_workflow_cannot_be_started_by_name(api: Api) -> None:
    before = await api.counts()
    resp = await api.client.post(
        "/api/runs",
        json={
            "workflow": "external_approval",
            "input": {"service": "billing", "action": "send_refund", "args": REFUND},
            "requester": "U_CAROL",
        },
        headers={"Authorization": "Bearer runs-token"},
    )
    assert resp.status == 403
    assert "cannot be started by name" in (await resp.json())["error"]
    resp = await api.client.post(
        "/api/runs",
        json={
            "workflow": "refund",
            "input": REFUND,
            "requester": "U_CAROL",
            "thread_id": "api.billing.0123",
        },
        headers={"Authorization": "Bearer runs-token"},
    )
    assert resp.status == 403
    # each refusal is on the audit log, and nothing else was recorded
    assert await api.counts() == {**before, "start_refused": before.get("start_refused", 0) + 2}
    assert "external_approval" not in api.kit.app.workflows


async def test_odd_requests_get_a_4xx_that_says_why_never_a_500(api: Api) -> None:
    good = {"action": "send_refund", "args": REFUND, "requester": "U_CAROL"}
    odd: list[tuple[object, str | None]] = [
        (None, None),
        ([good], None),
        ({**good, "args": [1, 2]}, None),
        ({**good, "requester": 7}, None),
        ({**good, "title": 3}, None),
        ({**good, "dedupe_key": ""}, None),
        ({**good, "callback_url": "http://"}, None),
        ({**good, "callback_url": "https://user:pw@example.com/h"}, None),
        ({**good, "action": ["send_refund"]}, None),
        (good, ""),
        (good, "k" * 201),
    ]
    for body, key in odd:
        headers = {"Authorization": f"Bearer {BILLING_TOKEN}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        resp = await api.client.post("/api/approvals", json=body, headers=headers)
        answer = await resp.json()
        assert resp.status in (400, 422), (body, key, resp.status, answer)
        assert answer["error"], answer
    for path in (
        "/api/approvals/%00",
        "/api/approvals/api..",
        "/api/approvals/api.billing.x?wait=nan",
    ):
        resp = await api.client.get(path, headers={"Authorization": f"Bearer {BILLING_TOKEN}"})
        assert resp.status in (400, 404), (path, resp.status)
    assert await api.kit.approvals() == []


@pytest.mark.postgres
async def test_a_run_asked_for_while_every_connection_is_in_use_is_a_503_to_retry(
    pg_url: str, tmp_path: Path
) -> None:
    kit = Kit(pg_url, tmp_path)
    kit.policy_path.write_text(API_POLICY, encoding="utf-8")
    kit.db = Database(pg_url, pool_size=2, max_overflow=0, pool_timeout=0.5)
    kit._dbs.append(kit.db)
    kit.app = kit.new_app(sink=kit.sink, share_db=True)
    await kit.db.upgrade()
    settings = Settings(
        database_url=pg_url,
        policy_path=kit.policy_path,
        api_token="runs-token",
        default_channel="C0APPROVALS",
    )

    class Runner:
        def kick(self) -> None:
            pass

    app = build_web_app(kit.app, settings, bolt_app=None, runner=Runner(), metrics=Metrics())  # type: ignore[arg-type]
    run = {"workflow": "refund", "input": REFUND, "requester": "U_CAROL"}
    headers = {"Authorization": "Bearer runs-token"}
    try:
        async with TestClient(TestServer(app)) as client:
            async with kit.db.engine.connect(), kit.db.engine.connect():  # every connection
                resp = await client.post("/api/runs", json=run, headers=headers)
                assert resp.status == 503
                assert resp.headers["Retry-After"] == "2"
                assert (await resp.json())["error"] == (
                    f"{kit.db.display_url} is busy: all 2 connections this process may open to "
                    "it were in use for 0.5 s; nothing was recorded, try again in a few seconds "
                    "(if it keeps happening, look for slow statements on the server, or run "
                    "fewer requests at once)"
                )
            assert await kit.rows(sa.select(t.runs)) == []
            resp = await client.post("/api/runs", json=run, headers=headers)  # the retry
            assert resp.status == 201, await resp.text()
            assert (await resp.json())["status"] == "paused"
    finally:
        await kit.aclose()


async def test_a_run_that_meets_every_connection_in_use_mid_run_goes_on_once_there_is_room(
    crowded_api: Api,
) -> None:
    """The run's row is recorded, then between two of its checkpoints a burst of other requests
    takes every connection: the start answers 202 (not a `failed` run), and the worker goes on
    from where it stopped once the database has room, to a pause, a decision and its end."""
    api = crowded_api
    async with contextlib.AsyncExitStack() as held:

        async def crowd() -> None:
            await held.enter_async_context(api.crowd())

        flows.CROWD.append(crowd)
        resp = await api.client.post(
            "/api/runs",
            json={
                "workflow": "crowding",
                "input": {"action": "send_refund", "args": REFUND},
                "requester": "U_CAROL",
            },
            headers={"Authorization": "Bearer runs-token"},
        )
        body = await resp.json()
    assert resp.status == 202, body
    assert body["status"] == "running" and body["approvals"] == []
    assert body["error"].startswith("the database was busy or unreachable while the run went on")
    assert "goes on in the background from where it stopped" in body["error"]
    thread_id = body["thread_id"]

    # The job that goes on is queued once the database takes it (here after the burst).
    for _ in range(100):
        jobs = await api.kit.rows(sa.select(t.jobs).where(t.jobs.c.kind == "resume"))
        if jobs:
            break
        await asyncio.sleep(0.1)
    assert [j["thread_id"] for j in jobs] == [thread_id]
    assert (await api.kit.run(thread_id))["status"] == "running"
    kinds = [e["kind"] for e in await api.kit.audit()]
    assert kinds == ["run_started"]  # no run_failed, nothing half-made
    assert await api.kit.approvals() == []

    assert await api.kit.app.run_jobs(("resume",)) == 1
    assert (await api.kit.run(thread_id))["status"] == "paused"
    (row,) = await api.kit.approvals()
    assert row["action"] == "send_refund" and row["status"] == "pending"
    await api.kit.app.decide(row["id"], "U_ALICE", True)
    await api.kit.app.run_jobs(("resume",))
    assert (await api.kit.run(thread_id))["status"] == "completed"
    (act,) = await api.kit.effects("act")
    assert act["thread_id"] == thread_id
    kinds = [e["kind"] for e in await api.kit.audit()]
    assert "run_failed" not in kinds and kinds.count("run_started") == 1, kinds


async def _handed_over_before_its_input_was_saved(api: Api, thread_id: str, input: Any) -> None:
    """A start whose row is recorded and whose graph saved nothing (the database busy from
    its first checkpoint on), handed to the worker as `Runs.start` hands it."""
    runs, now = api.kit.app.runs, api.kit.clock()
    async with api.kit.db.transaction() as conn:
        await store.insert_run(
            conn,
            thread_id=thread_id,
            workflow="ask",
            requester="U_CAROL",
            channel=None,
            status="running",
            owner=runs.jobs.worker_id,
            input=store.dumps(runs.hide_secrets(input, "ask")),
            created_at=now,
            updated_at=now,
        )
    busy = DatabaseBusy(f"{api.kit.db.display_url} is busy", api.kit.db.display_url)
    report = await runs._hand_over(thread_id, "ask", input, busy)
    assert report.status == "running"


async def test_a_start_handed_over_before_any_checkpoint_starts_from_its_recorded_inputs(
    api: Api,
) -> None:
    await _handed_over_before_its_input_was_saved(
        api, "ask-early", {"action": "send_refund", "args": REFUND}
    )
    assert await api.kit.app.run_jobs(("resume",)) == 1
    assert (await api.kit.run("ask-early"))["status"] == "paused"
    (row,) = await api.kit.approvals()
    assert row["action"] == "send_refund" and row["status"] == "pending"

    # Secret inputs are hidden on the row and kept only in checkpoints: none was saved, so
    # the run cannot go on, and is failed saying so (never started on the hidden values).
    card = {"card_number": "4111111111111111", "amount": 5}
    await _handed_over_before_its_input_was_saved(
        api, "ask-secret", {"action": "charge_card", "args": card}
    )
    assert await api.kit.app.run_jobs(("resume",)) == 1
    run = await api.kit.run("ask-secret")
    assert run["status"] == "failed"
    assert "they hold secret fields, which are kept only in checkpoints" in run["error"]
    assert [a["thread_id"] for a in await api.kit.approvals()] == ["ask-early"]


async def test_a_run_whose_approval_met_every_connection_in_use_gets_it_once_there_is_room(
    crowded_api: Api,
) -> None:
    """The run paused and its pause was recorded; a burst took every connection just as its
    approval was to be opened. The start answers 202 and the worker opens the approval (once),
    rather than leaving the run paused on an approval nobody was asked for."""
    api = crowded_api
    pauses = api.kit.app.runs.pauses
    real = pauses.register

    async def in_a_burst(*args: Any, **kw: Any) -> str:
        pauses.register = real  # type: ignore[method-assign]
        async with api.crowd():
            return await real(*args, **kw)

    pauses.register = in_a_burst  # type: ignore[method-assign]
    resp = await api.client.post(
        "/api/runs",
        json={
            "workflow": "ask",
            "input": {"action": "send_refund", "args": REFUND},
            "requester": "U_CAROL",
        },
        headers={"Authorization": "Bearer runs-token"},
    )
    body = await resp.json()
    assert resp.status == 202 and body["status"] == "running", body
    thread_id = body["thread_id"]
    assert await api.kit.approvals() == []
    assert await api.kit.app.run_jobs(("resume",)) == 1
    (row,) = await api.kit.approvals()
    assert row["thread_id"] == thread_id and row["status"] == "pending"
    assert await api.kit.app.run_jobs(("resume",)) == 0
    await api.kit.app.decide(row["id"], "U_ALICE", True)
    await api.kit.app.run_jobs(("resume",))
    assert (await api.kit.run(thread_id))["status"] == "completed"
    assert len(await api.kit.effects("act")) == 1
    kinds = [e["kind"] for e in await api.kit.audit()]
    assert kinds.count("requested") == 1 and "run_failed" not in kinds, kinds


async def test_an_approval_asked_for_in_a_burst_is_asked_once_and_the_same_key_reads_it(
    crowded_api: Api,
) -> None:
    """As above, over the approvals API: 202 pending, the same Idempotency-Key again is the
    same approval (nothing new started), and the worker opens it once there is room."""
    api = crowded_api
    pauses = api.kit.app.runs.pauses
    real = pauses.register

    async def in_a_burst(*args: Any, **kw: Any) -> str:
        pauses.register = real  # type: ignore[method-assign]
        async with api.crowd():
            return await real(*args, **kw)

    pauses.register = in_a_burst  # type: ignore[method-assign]
    request = {"action": "send_refund", "args": REFUND, "requester": "U_CAROL"}
    status, first = await api.post(request, key="burst-1")
    assert status == 202 and first["status"] == "pending", first
    status, again = await api.post(request, key="burst-1")
    assert status == 200 and again["approval_id"] == first["approval_id"]
    assert len(await api.kit.rows(sa.select(t.runs))) == 1
    await api.kit.app.run_jobs(("resume",))
    (row,) = await api.kit.approvals()
    assert row["thread_id"] == first["approval_id"] and row["status"] == "pending"
    await api.kit.app.decide(row["id"], "U_ALICE", True)
    status, seen = await api.get(f"/api/approvals/{first['approval_id']}")
    assert status == 200 and seen["status"] == "approved"
    kinds = [e["kind"] for e in await api.kit.audit()]
    assert kinds.count("run_started") == kinds.count("requested") == 1, kinds
