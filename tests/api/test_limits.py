"""What a caller sends has documented limits (`bot.approvals.limits`), checked before anything is
recorded: a text value of the arguments (or a run's inputs) longer than 4,000 characters, or
arguments over 32 KiB as JSON, are refused naming each field (422 for a service's request; 400
with `problems` for a run, as its other input refusals); a decision's note over 3,000
characters is refused; a body over 1 MiB is a 413 (`test_malformed_bodies`). Each refusal is on
the audit log."""

from __future__ import annotations

from tests.api.conftest import REFUND, Api, bearer


async def test_a_service_request_over_the_limits_is_a_422_naming_each_field(api: Api) -> None:
    before = await api.counts()
    args = {"amount": 12, "memo": "m" * 4001, "lines": ["ok", {"text": "t" * 5000}]}
    status, answer = await api.post({"action": "charge_card", "args": args, "requester": "agent"})
    assert status == 422, answer
    fields = {p["field"]: p["message"] for p in answer["problems"]}
    assert fields == {
        "args.memo": "is 4,001 characters; at most 4,000 are taken (send a longer text by "
        "reference: an id or a URL)",
        "args.lines[1].text": "is 5,000 characters; at most 4,000 are taken (send a longer text "
        "by reference: an id or a URL)",
    }
    # Each value within its limit, together over 32 KiB.
    wide = {"amount": 12, **{f"k{i}": "w" * 4000 for i in range(9)}}
    status, answer = await api.post({"action": "charge_card", "args": wide, "requester": "agent"})
    assert status == 422, answer
    ((field, message),) = [(p["field"], p["message"]) for p in answer["problems"]]
    assert field == "args" and message.endswith("bytes as JSON; at most 32,768 (32 KiB) are taken")
    # the second refusal of the kind from billing within the audit's window is counted, not logged
    assert await api.counts() == {**before, "api_refused": 1}
    assert "args.memo" in (await api.kit.audit("api_refused"))[0]["data"]["problems"]
    # At the limit, it is asked.
    args = {"amount": 12, "memo": "m" * 4000}
    status, answer = await api.post({"action": "charge_card", "args": args, "requester": "agent"})
    assert status == 202, answer


async def test_a_run_whose_inputs_are_over_the_limits_is_refused_naming_the_field(
    api: Api,
) -> None:
    before = await api.counts()
    run = {
        "workflow": "ask",
        "requester": "U_CAROL",
        "input": {"action": "deploy", "args": {"service": "api", "why": "w" * 4001}},
    }
    resp = await api.client.post("/api/runs", json=run, headers=bearer("runs-token"))
    answer = await resp.json()
    assert resp.status == 400, answer
    assert answer["problems"] == {
        "args.why": "is 4,001 characters; at most 4,000 are taken (send a longer text by "
        "reference: an id or a URL)"
    }
    assert await api.counts() == {**before, "start_refused": 1}
    (refusal,) = await api.kit.audit("start_refused")
    assert refusal["data"]["refusal"] == "InvalidInputError"


async def test_a_note_over_3000_characters_is_refused_and_audited(api: Api) -> None:
    status, asked = await api.post({"action": "send_refund", "args": REFUND, "requester": "agent"})
    assert status == 202, asked
    (row,) = await api.kit.approvals()
    done = api.kit.cli("reject", row["id"], "--as", "U_ALICE", "--note", "n" * 3001)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip() == (
        "signoff: the note is 3,001 characters; at most 3,000 are kept: shorten it"
    )
    (refused,) = await api.kit.audit("vote_refused")
    assert refused["actor"] == "U_ALICE" and "3,001 characters" in refused["data"]["reason"]
    assert (await api.kit.app.get(row["id"])).status == "pending"
    done = api.kit.cli("reject", row["id"], "--as", "U_ALICE", "--note", "n" * 3000)
    assert done.returncode == 0, done.stdout + done.stderr
    _, read = await api.get(f"/api/approvals/{asked['approval_id']}")
    assert read["status"] == "rejected" and read["decision"]["note"] == "n" * 3000
