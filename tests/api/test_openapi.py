"""`GET /api/openapi.json` against the handlers: every `/api/` route is described (and nothing
else), and real answers of every documented status validate against their schemas, as does a
real webhook body."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from bot.approvals.external import SIGNATURE_HEADER, verify_webhook
from tests.api.conftest import BILLING_TOKEN, REFUND, Api

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


async def test_real_answers_of_every_documented_status_fit_their_schemas(api: Api) -> None:
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
        check(doc, responses[str(resp.status)]["content"]["application/json"]["schema"], body)
        seen.add((path, method, str(resp.status)))
        return body

    one, coll = "/api/approvals/{approval_id}", "/api/approvals"
    good = {"action": "send_refund", "args": REFUND, "requester": "U_CAROL"}
    asked = await answer(coll, "post", coll, json=good, headers={"Idempotency-Key": "o"})
    await answer(coll, "post", coll, json=good, headers={"Idempotency-Key": "o"})
    await answer(coll, "post", coll, data="nope")
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
    await answer(runs, "post", runs, json=start, token="wrong")
    await answer(runs, "post", runs, json={**start, "requester": "U_NOBODY"}, token="runs-token")
    await answer(runs, "post", runs, json={**start, "workflow": "nope"}, token="runs-token")
    await answer("/api/openapi.json", "get", "/api/openapi.json", token=None)

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

    async def send(url: str, body: bytes, headers: Any) -> int:
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
