"""Refusals stay on the audit log without flooding it, through the bot's real HTTP application:
a refusal repeated from one source within the window is one entry with its count and the first
and last time, and a refused body is kept as its size and digest, never whole."""

from __future__ import annotations

import asyncio
import hashlib
import json

from tests.api.conftest import BILLING_TOKEN, Api, bearer

WINDOW = 60.0
"""`SIGNOFF_REFUSAL_WINDOW`'s default."""


async def test_requests_without_a_token_are_one_entry_and_then_one_with_their_count(
    api: Api,
) -> None:
    for _ in range(200):
        resp = await api.client.post("/api/approvals", json={"action": "send_refund"})
        assert resp.status == 401
    # Another kind of refusal from the same address is an entry of its own.
    resp = await api.client.get("/api/approvals", headers=bearer("nope-" + BILLING_TOKEN))
    assert resp.status == 401

    first, wrong = await api.kit.audit("api_refused")
    assert (first["actor"], first["data"]["refusal"]) == (None, "unauthenticated")
    assert (first["data"]["reason"], first["data"]["from"]) == ("no bearer token", "127.0.0.1")
    assert (first["data"]["route"], "count" in first["data"]) == ("POST /api/approvals", False)
    assert wrong["data"]["reason"] == "a wrong bearer token"

    # Once the window is over, the 199 that followed the first are one entry.
    started = first["at"]
    api.kit.clock.advance(WINDOW + 1)
    entries = await api.kit.audit("api_refused")
    assert len(entries) == 3
    repeats = entries[2]["data"]
    assert repeats == {
        "refusal": "unauthenticated",
        "reason": "no bearer token",
        "from": "127.0.0.1",
        "count": 199,
        "first_at": repeats["first_at"],
        "last_at": repeats["last_at"],
    }
    assert started <= repeats["first_at"] <= repeats["last_at"] < started + WINDOW
    assert sum(len(json.dumps(e["data"])) for e in entries) < 1000

    # Exported, the entry reads with its count; the chain holds.
    export = api.kit.cli("audit", "export")
    assert export.returncode == 0, export.stderr
    (line,) = [ln for ln in export.stdout.splitlines() if '"count": 199' in ln]
    assert json.loads(line)["data"]["reason"] == "no bearer token"
    verified = api.kit.cli("audit", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr

    # A new window starts with an entry of its own again.
    resp = await api.client.post("/api/approvals", json={"action": "send_refund"})
    assert resp.status == 401
    assert len(await api.kit.audit("api_refused")) == 4


async def test_a_refused_request_is_kept_as_its_size_and_digest_not_its_body(api: Api) -> None:
    args = {f"field_{i:05d}_" + "x" * 90: "y" * 10 for i in range(5000)}
    raw = json.dumps({"action": "send_refund", "args": args, "requester": "U_CAROL"}).encode()
    assert len(raw) > 500_000
    resp = await api.client.post(
        "/api/approvals",
        data=raw,
        headers={**bearer(BILLING_TOKEN), "Content-Type": "application/json"},
    )
    assert resp.status == 422
    assert len((await resp.json())["problems"]) > 5000  # the caller is told everything

    (entry,) = await api.kit.audit("api_refused")
    data = entry["data"]
    assert data["body"] == {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    assert data["refusal"] == "InvalidInputError"
    assert len(data["problems"]) == 20
    assert data["problems_total"] > 5000
    assert len(data["reason"]) < 400
    assert len(json.dumps(data)) < 10_000

    # A malformed body too: its size and digest, its reason cut.
    fields = {f"unknown_{i:05d}_" + "z" * 90: 1 for i in range(3000)}
    raw = json.dumps({"action": "send_refund", **fields}).encode()
    resp = await api.client.post(
        "/api/approvals",
        data=raw,
        headers={**bearer(BILLING_TOKEN), "Content-Type": "application/json"},
    )
    assert resp.status == 400
    _, malformed = await api.kit.audit("api_refused")
    assert malformed["data"]["body"] == {
        "bytes": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }
    assert len(json.dumps(malformed["data"])) < 2_000


async def test_refusals_at_the_same_moment_are_each_counted_once(api: Api) -> None:
    async def unauthenticated() -> int:
        resp = await api.client.post("/api/approvals", json={"action": "send_refund"})
        return resp.status

    assert set(await asyncio.gather(*(unauthenticated() for _ in range(50)))) == {401}
    api.kit.clock.advance(WINDOW + 1)
    entries = await api.kit.audit("api_refused")
    assert sum(int(e["data"].get("count", 1)) for e in entries) == 50
    assert len(entries) == 2, [(e["at"], e["data"]) for e in entries]
