"""`GET /api/openapi.json` against the handlers: every `/api/` route is described (and nothing
else), and real answers of every documented status validate against their schemas, as does a
real webhook body."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jsonschema

from bot.approvals.external import SIGNATURE_HEADER, verify_webhook
from tests.api.conftest import BILLING_TOKEN, REFUND, Api, bearer, serve_api
from tests.kit import flows
from tests.kit.signoff import Kit

METHODS = ("get", "post", "put", "patch", "delete")


def check(doc: dict[str, Any], schema: dict[str, Any], value: Any) -> None:
    root = {**schema, "components": doc["components"]}
    jsonschema.Draft202012Validator(root).validate(value)


async def test_every_api_route_is_documented_and_every_documented_one_exists(api: Api) -> None:
    resp = await api.client.get("/api/openapi.json")
    assert resp.status == 200
    doc = await resp.json()
    assert doc["openapi"].startswith("3.1")
    for schema in doc["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    served = set()
    for route in api.client.server.app.router.routes():
        info = route.resource.get_info() if route.resource is not None else {}
        path = info.get("path") or info.get("formatter")
        if path and path.startswith("/api/") and route.method.lower() in METHODS:
            served.add((path, route.method.lower()))
    documented = {(path, m) for path, item in doc["paths"].items() for m in item if m in METHODS}
    assert documented == served


def header_fits(doc: dict[str, Any], schema: dict[str, Any], value: str) -> bool:
    """Whether a header's text is a value of its schema (an integer schema: ASCII digits)."""
    if schema.get("type") == "integer":
        if not (value.isascii() and value.isdigit()):
            return False
        parsed: Any = int(value)
    else:
        parsed = value
    try:
        check(doc, schema, parsed)
    except jsonschema.ValidationError:
        return False
    return True


async def test_real_answers_of_every_documented_status_fit_their_schemas(
    crowded_api: Api,
) -> None:
    api = crowded_api
    doc = await (await api.client.get("/api/openapi.json")).json()
    seen: set[tuple[str, str, str]] = set()

    async def answer(
        path: str, method: str, url: str, *, token: str | None = BILLING_TOKEN, **kw: Any
    ) -> Any:
        headers = dict(kw.pop("headers", {}))
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        resp = await api.client.request(method.upper(), url, headers=headers, **kw)
        body = await resp.json()
        responses = doc["paths"][path][method]["responses"]
        assert str(resp.status) in responses, (url, resp.status, body)
        documented = responses[str(resp.status)]
        check(doc, documented["content"]["application/json"]["schema"], body)
        for name, header in documented.get("headers", {}).items():
            value = resp.headers.get(name)
            assert value is not None or not header.get("required"), (url, name)
            assert value is None or header_fits(doc, header["schema"], value), (url, name, value)
        seen.add((path, method, str(resp.status)))
        return body

    one, coll = "/api/approvals/{approval_id}", "/api/approvals"
    good = {"action": "send_refund", "args": REFUND, "requester": "U_CAROL"}
    asked = await answer(coll, "post", coll, json=good, headers={"Idempotency-Key": "o"})
    await answer(coll, "post", coll, json=good, headers={"Idempotency-Key": "o"})
    await answer(coll, "post", coll, data="nope")
    too_large = io.BytesIO(b"[" + b" " * (1024 * 1024) + b"]")
    await answer(coll, "post", coll, data=too_large)
    await answer(coll, "post", coll, json=good, token="wrong")
    await answer(coll, "post", coll, json={**good, "action": "wire_money"})
    await answer(coll, "post", coll, json={**good, "args": {"amount": "x"}})
    await answer(coll, "get", coll)
    await answer(coll, "get", f"{coll}?status=approved")
    await answer(coll, "get", coll, token=None)
    await answer(one, "get", f"{coll}/{asked['approval_id']}?wait=0.1")
    await answer(one, "get", f"{coll}/{asked['approval_id']}?wait=-1")
    await answer(one, "get", f"{coll}/{asked['approval_id']}", token=None)
    await answer(one, "get", f"{coll}/api.billing.nothing")
    (row,) = await api.kit.approvals()
    await api.kit.app.decide(row["id"], "U_ALICE", True)
    decided = await answer(one, "get", f"{coll}/{asked['approval_id']}")
    assert decided["decision"]["by"] == ["U_ALICE"]

    runs = "/api/runs"
    start = {"workflow": "refund", "input": REFUND, "requester": "U_CAROL"}
    await answer(runs, "post", runs, json=start, token="runs-token")
    await answer(runs, "post", runs, json={"workflow": 3}, token="runs-token")
    too_large = io.BytesIO(b"[" + b" " * (1024 * 1024) + b"]")
    await answer(runs, "post", runs, data=too_large, token="runs-token")
    await answer(runs, "post", runs, json=start, token="wrong")
    await answer(runs, "post", runs, json={**start, "requester": "U_NOBODY"}, token="runs-token")
    await answer(runs, "post", runs, json={**start, "workflow": "nope"}, token="runs-token")
    await answer("/api/openapi.json", "get", "/api/openapi.json", token=None)

    # Every connection in use (a burst of other requests): each route that needs the database
    # answers 503, documented, with its Retry-After; the document itself needs none.
    before = await api.counts()
    async with api.crowd():
        busy = [
            await answer(coll, "post", coll, json=good, headers={"Idempotency-Key": "b"}),
            await answer(coll, "get", coll),
            await answer(one, "get", f"{coll}/{asked['approval_id']}"),
            await answer(runs, "post", runs, json=start, token="runs-token"),
        ]
        await answer(coll, "get", coll, token=None)  # still a 401, its audit entry given up
        await answer(coll, "post", coll, json={**good, "action": "wire_money"})  # still a 403
        await answer("/api/openapi.json", "get", "/api/openapi.json", token=None)
    assert all("is busy" in b["error"] and "try again" in b["error"] for b in busy), busy
    assert await api.counts() == before

    # The pool used up mid-run, between two of a start's checkpoints: 202, it goes on.
    async with contextlib.AsyncExitStack() as held:

        async def crowd() -> None:
            await held.enter_async_context(api.crowd())

        flows.CROWD.append(crowd)
        crowding = {"workflow": "crowding", "input": {"action": "send_refund", "args": REFUND}}
        went_on = await answer(
            runs, "post", runs, json={**crowding, "requester": "U_CAROL"}, token="runs-token"
        )
    assert went_on["status"] == "running" and "goes on" in went_on["error"]

    documented = {
        (path, method, status)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        for status in op["responses"]
    }
    assert documented == seen


async def test_a_webhook_body_fits_its_schema_and_is_signed(api: Api) -> None:
    doc = await (await api.client.get("/api/openapi.json")).json()
    sent: list[tuple[str, bytes, dict[str, str]]] = []

    async def send(url: str, body: bytes, headers: Any, **_: Any) -> int:
        sent.append((url, body, dict(headers)))
        return 204

    api.kit.app.external.send = send
    status, asked = await api.post(
        {
            "action": "send_refund",
            "args": REFUND,
            "requester": "U_CAROL",
            "callback_url": "https://billing.example/hooks",
        }
    )
    assert status == 202
    (row,) = await api.kit.approvals()
    await api.kit.app.decide(row["id"], "U_ALICE", False, note="not this one")
    await api.kit.app.run_jobs(("webhook",))
    ((url, body, headers),) = sent
    assert url == "https://billing.example/hooks"
    assert verify_webhook("billing-token-0123456789abcdef", headers[SIGNATURE_HEADER], body)
    assert not verify_webhook("another secret", headers[SIGNATURE_HEADER], body)
    event = json.loads(body)
    webhook = doc["webhooks"]["approval.settled"]["post"]["requestBody"]["content"]
    check(doc, webhook["application/json"]["schema"], event)
    assert event["approval"]["approval_id"] == asked["approval_id"]
    assert event["approval"]["status"] == "rejected"
    assert event["approval"]["decision"]["note"] == "not this one"
    (delivered,) = await api.kit.audit("webhook_delivered")
    assert delivered["data"]["service"] == "billing"
    assert delivered["data"]["delivery_id"] == event["delivery_id"] == headers["Signoff-Delivery"]
    assert await api.kit.app.run_jobs(("webhook",)) == 0  # once


async def test_a_database_that_cannot_be_opened_is_a_documented_503_on_every_route_needing_it(
    tmp_path: Path,
) -> None:
    """The SQLite file's directory gone (a volume unmounted): each route that needs the
    database answers 503 as documented, saying what to check and to try again, with a longer
    Retry-After than a busy pool's; nothing is recorded, and all is well once it is back."""
    (tmp_path / "db").mkdir()
    kit = Kit(f"sqlite:///{quote(str(tmp_path / 'db' / 'signoff.db'))}", tmp_path)
    async for api in serve_api(kit):
        doc = await (await api.client.get("/api/openapi.json")).json()
        good = {"action": "send_refund", "args": REFUND, "requester": "U_CAROL"}
        status, asked = await api.post(good, key="before")
        assert status == 202
        before = await api.counts()
        billing, runs = {"Authorization": f"Bearer {BILLING_TOKEN}"}, bearer("runs-token")
        one = f"/api/approvals/{asked['approval_id']}"
        start = {"workflow": "refund", "input": REFUND, "requester": "U_CAROL"}
        calls = [
            ("/api/approvals", "post", "/api/approvals", {"json": good, "headers": billing}),
            ("/api/approvals", "get", "/api/approvals", {"headers": billing}),
            ("/api/approvals/{approval_id}", "get", one, {"headers": billing}),
            ("/api/runs", "post", "/api/runs", {"json": start, "headers": runs}),
        ]
        await kit.db.aclose()  # its pooled connections closed: each request opens the file
        (tmp_path / "db").rename(tmp_path / "gone")
        try:
            for path, method, url, kw in calls:
                resp = await api.client.request(method.upper(), url, **kw)
                body = await resp.json()
                assert resp.status == 503, (url, resp.status, body)
                documented = doc["paths"][path][method]["responses"]["503"]
                check(doc, documented["content"]["application/json"]["schema"], body)
                assert resp.headers["Retry-After"] == "10"
                assert body["error"].startswith(f"cannot open the database {kit.db.display_url}")
                assert "check that the directory" in body["error"]
                assert body["error"].endswith("nothing was recorded, try again in 10 s or more")
        finally:
            (tmp_path / "gone").rename(tmp_path / "db")
        assert await api.counts() == before
        status, again = await api.post(good, key="before")
        assert status == 200 and again["approval_id"] == asked["approval_id"]
