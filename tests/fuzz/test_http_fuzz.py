"""Hostile input over HTTP, against a real bot process (`signoff run`) and the fake Slack.

Malformed, oversized, unsigned, wrongly signed, replayed and mis-typed requests to
`/slack/events` and `POST /api/runs`. Each gets a 4xx, or, when it is well signed and reaches a
listener, an ephemeral refusal (a modal's errors for a view submission); the server keeps
serving (`/healthz` 200 after each batch); nothing changes in the database (the approvals,
votes, waiters, runs, jobs, effects and audit tables are compared before and after, leaving
out the audit log's entries for the refusals themselves); and the audit log still verifies.

Hypothesis generates some of the bodies, signed with the shared secret, with a fixed number of
examples and derandomized, so the module takes the same (short) time everywhere.
"""

from __future__ import annotations

import io
import json
import secrets
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.approvals import tables as t
from bot.approvals.audit import AuditLog
from bot.approvals.db import Database
from bot.sandbox.interactions import find_element
from bot.sandbox.signing import SlackRequest, block_actions, slash_command, view_submission
from bot.slack import messages
from bot.slack.payloads import (
    APPROVE,
    EDIT,
    EDIT_CALLBACK,
    PAYLOAD,
    REJECT,
    REJECT_CALLBACK,
    ActionValue,
)
from tests.kit.e2e import (
    ALICE,
    API_TOKEN,
    BOB,
    CAROL,
    CHANNEL,
    DAVE,
    E2E,
    JSON,
    BotProcess,
    FakeSlackProcess,
    Run,
    sqlite_url,
    write_policy,
)

POLICY = """
[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@approvers"]
editable = ["amount", "reason"]
expire_after = "1h"
"""
"""Approvers are the Slack user group @approvers (alice, bob); only carol may start a refund."""

FORM = "application/x-www-form-urlencoded"
TABLES = (t.approvals, t.votes, t.approval_waiters, t.runs, t.jobs, t.effects, t.audit_events)

FUZZ = settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
"""Bounded and repeatable: the same examples on every machine."""


@pytest.fixture(scope="module")
def bot(
    fake_slack: FakeSlackProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BotProcess]:
    directory = tmp_path_factory.mktemp("fuzz")
    process = BotProcess(
        directory, sqlite_url(directory), fake_slack.url, write_policy(directory, POLICY),
        SIGNOFF_SWEEP_INTERVAL="0.3",
    )  # fmt: skip
    yield process
    process.stop()


# ---- helpers ------------------------------------------------------------------------------------


REFUSALS = ("vote_refused", "start_refused")
"""Audit entries a refused request adds by design (every refusal is on the audit log)."""


def snapshot(e2e: E2E) -> dict[str, list[JSON]]:
    """Every row of the tables a request could change, in a stable order (the audit log's
    refusals left out)."""
    return {
        table.name: [
            row
            for row in e2e.db.rows(sa.select(table).order_by(*table.primary_key.columns))
            if table is not t.audit_events or row["kind"] not in REFUSALS
        ]
        for table in TABLES
    }


async def audit_verifies(e2e: E2E) -> None:
    db = Database(e2e.bot.read_url)
    try:
        async with db.read() as conn:
            report = await AuditLog.from_env().verify(conn)
    finally:
        await db.aclose()
    assert report.ok, report.problem


async def settled(e2e: E2E) -> dict[str, list[JSON]]:
    """The database once the bot has nothing left to do (cards posted, events delivered)."""
    await e2e.idle()
    return snapshot(e2e)


async def unchanged(e2e: E2E, before: dict[str, list[JSON]]) -> None:
    """The bot still serves, nothing changed in its database, and the audit log verifies."""
    status, body = await e2e.api("GET", "/healthz", token=None)
    assert status == 200, body
    await e2e.idle()
    after = snapshot(e2e)
    for name, rows in before.items():
        assert after[name] == rows, f"the {name} table changed"
    await audit_verifies(e2e)


async def two_runs(e2e: E2E, tag: str) -> tuple[Run, Run]:
    return await e2e.refund(f"cust-{tag}-a"), await e2e.refund(f"cust-{tag}-b")


async def post(e2e: E2E, path: str, data: bytes, headers: dict[str, str]) -> int:
    async with e2e.http.post(e2e.bot.url + path, data=io.BytesIO(data), headers=headers) as res:
        await res.read()
        return res.status


async def click(
    e2e: E2E, user: str, card: JSON, action_id: str, value: Any, **changes: Any
) -> SlackRequest:
    """The request Slack sends when `user` clicks `action_id` on `card`, with the button's value
    replaced by `value` (a string as sent, or an `ActionValue`) and the payload's top-level keys
    changed as given (None removes one)."""
    block_id, _ = find_element(card["blocks"], action_id)
    message = {k: v for k, v in card.items() if k not in ("channel", "replies", "edits")}
    request = block_actions(
        action_id=action_id, value=value.encode() if isinstance(value, ActionValue) else value,
        block_id=block_id, user_id=user, channel_id=card["channel"], message=message,
        trigger_id=await e2e.slack.trigger_id(user),
        response_url=await e2e.slack.response_url(card["channel"], user, card["ts"]),
    )  # fmt: skip
    payload = {**request.payload, **changes}
    payload = {k: v for k, v in payload.items() if v is not None}
    return SlackRequest(urlencode({"payload": json.dumps(payload)}), FORM, payload)


def value_of(card: JSON, action_id: str = APPROVE) -> ActionValue:
    _, element = find_element(card["blocks"], action_id)
    return ActionValue.decode(element["value"])


# ---- unsigned, wrongly signed, replayed, malformed, oversized -------------------------------------


async def test_unsigned_forged_replayed_malformed_and_oversized_requests_get_4xx(e2e: E2E) -> None:
    run, _ = await two_runs(e2e, "raw")
    before = await settled(e2e)
    good = await e2e.click_request(ALICE, run.card, APPROVE)
    body = good.body.encode()
    sign = e2e.signer.signature
    now = int(time.time())

    def signed(data: bytes, content_type: str = FORM, ts: int | None = None) -> dict[str, str]:
        ts = now if ts is None else ts
        return {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": str(ts),
            "X-Slack-Signature": sign(ts, data),
        }

    big = b"payload=" + b"x" * (5 * 1024 * 1024)
    cases: list[tuple[str, bytes, dict[str, str]]] = [
        ("unsigned", body, {"Content-Type": FORM}),
        ("no timestamp", body, {"Content-Type": FORM, "X-Slack-Signature": sign(now, body)}),
        ("wrong signature", body, {**signed(body), "X-Slack-Signature": "v0=" + "0" * 64}),
        (
            "signature of another body",
            body,
            {**signed(body), "X-Slack-Signature": sign(now, body + b"x")},
        ),
        (
            "signed with another secret",
            body,
            {**signed(body), "X-Slack-Signature": "v0=" + secrets.token_hex(32)},
        ),
        ("signature without v0=", body, {**signed(body), "X-Slack-Signature": sign(now, body)[3:]}),
        ("replayed, 6 minutes old", body, signed(body, ts=now - 6 * 60)),
        ("from 6 minutes in the future", body, signed(body, ts=now + 6 * 60)),
        (
            "timestamp not a number",
            body,
            {**signed(body), "X-Slack-Request-Timestamp": "yesterday"},
        ),
        ("oversized, unsigned", big, {"Content-Type": FORM}),
        ("oversized, signed", big, signed(big)),
        (
            "oversized JSON, signed",
            b'{"type":"' + b"x" * (3 * 1024 * 1024) + b'"}',
            signed(b"", "application/json"),
        ),
    ]
    for name, data, headers in cases:
        status = await post(e2e, "/slack/events", data, headers)
        assert 400 <= status < 500, f"{name}: {status}"

    # Well signed, but mangled: 4xx, or a 200 with a refusal when what is left of it still
    # reads as a click (Bolt reads a form body whatever its content type says), never a 5xx.
    # The click's value is junk, so a body read as a click is refused, not decided.
    body = (await click(e2e, ALICE, run.card, APPROVE, "junk")).body.encode()
    malformed: list[tuple[str, bytes, str]] = [
        ("empty", b"", FORM),
        ("not form, not JSON", b"}{ not a body", FORM),
        ("truncated form", good.body.encode()[: len(good.body) // 2], FORM),
        (
            "truncated JSON",
            b'{"type": "event_callback", "event": {"type": "app_ho',
            "application/json",
        ),
        ("JSON sent as form", json.dumps(good.payload).encode()[:-1], FORM),
        ("form sent as JSON", body, "application/json"),
        ("form sent as text", body, "text/plain"),
        ("no content type", body, ""),
        ("invalid UTF-8", b"payload=" + b"\xff\xfe\xc3\x28" + body[8:], FORM),
        ("invalid UTF-8 JSON", b'{"type": "\xff\xfe"}', "application/json"),
        ("payload not JSON", b"payload=%7Bnot+json", FORM),
        ("payload a JSON list", b"payload=%5B1%2C2%5D", FORM),
        ("payload a JSON string", b"payload=%22block_actions%22", FORM),
        ("payload null", b"payload=null", FORM),
        ("JSON list", b"[1, 2, 3]", "application/json"),
        ("JSON null", b"null", "application/json"),
        ("url_verification without challenge", b'{"type": "url_verification"}', "application/json"),
    ]
    for name, data, content_type in malformed:
        headers = signed(data, content_type)
        if not content_type:
            del headers["Content-Type"]
        status = await post(e2e, "/slack/events", data, headers)
        assert 400 <= status < 500 or status == 200, f"{name}: {status}"
    await unchanged(e2e, before)


# ---- well signed, mis-typed interactions ----------------------------------------------------------


async def test_misdirected_and_malformed_button_values_get_an_ephemeral_refusal(e2e: E2E) -> None:
    a, b = await two_runs(e2e, "value")
    va, vb = value_of(a.card), value_of(b.card)
    before = await settled(e2e)
    told_before = len(await e2e.ephemerals(ALICE))
    cases = {
        "not JSON": "approve please",
        "JSON, not an object": "[1]",
        "another version": json.dumps({"v": 2, "a": va.approval_id, "t": va.thread_id}),
        "version as a string": json.dumps({"v": "1", "a": va.approval_id, "t": va.thread_id}),
        "unknown keys": json.dumps({"v": 1, "a": va.approval_id, "t": va.thread_id, "x": 1}),
        "no approval id": json.dumps({"v": 1, "t": va.thread_id}),
        "approval id not a string": json.dumps({"v": 1, "a": 7, "t": va.thread_id}),
        "too long": "x" * 3001,
        "approval B on A's card": vb,
        "approval A with the thread of B": ActionValue(
            va.approval_id, vb.thread_id, va.interrupt_id
        ),
        "approval A with the interrupt of B": ActionValue(
            va.approval_id, va.thread_id, vb.interrupt_id
        ),
        "approval B with no thread, on A's card": ActionValue(vb.approval_id, ""),
    }
    for name, value in cases.items():
        for action_id in (APPROVE, REJECT, EDIT, PAYLOAD):
            answer = await e2e.send(await click(e2e, ALICE, a.card, action_id, value))
            assert answer.status == 200, f"{name}, {action_id}: {answer.status} {answer.body}"
    # approval B named on a click that says nothing of the card it was on
    for changes in (
        {"message": None, "container": None},
        {"message": None, "container": {"type": "view", "view_id": "V1"}},
    ):
        answer = await e2e.send(await click(e2e, ALICE, a.card, APPROVE, vb, **changes))
        assert answer.status == 200, answer.body
    # no value at all
    answer = await e2e.send(await click(e2e, ALICE, a.card, APPROVE, None))
    assert answer.status == 200, answer.body

    expected = len(cases) * 4 + 3
    told = await e2e.new_ephemerals(ALICE, told_before, expected)
    assert [e["text"] for e in told] == [messages.stale_button()] * expected
    await unchanged(e2e, before)


async def test_an_action_value_edited_to_point_at_another_thread_or_approval_is_refused(
    e2e: E2E,
) -> None:
    a, b = await two_runs(e2e, "edited")
    va, vb = value_of(a.card), value_of(b.card)
    await e2e.idle()
    told_before = len(await e2e.ephemerals(BOB))
    edited = [
        (a.card, vb),  # approval B's value on approval A's card
        (a.card, ActionValue(vb.approval_id, va.thread_id, va.interrupt_id)),  # B's id, A's thread
        (a.card, ActionValue(va.approval_id, vb.thread_id, va.interrupt_id)),  # A's id, B's thread
        (b.card, ActionValue(va.approval_id, "")),  # A's id on B's card, no thread to check
    ]
    for card, value in edited:
        answer = await e2e.send(await click(e2e, BOB, card, APPROVE, value))
        assert answer.status == 200, answer.body
    # the right value on the right card, from another channel than the card's
    answer = await e2e.send(
        await click(
            e2e,
            BOB,
            a.card,
            APPROVE,
            va,
            channel={"id": "C0ELSEWHERE"},
            container={"type": "message", "message_ts": a.card["ts"], "channel_id": "C0ELSEWHERE"},
        )
    )
    assert answer.status == 200, answer.body
    told = await e2e.new_ephemerals(BOB, told_before, len(edited))
    assert [e["text"] for e in told] == [messages.stale_button()] * len(edited)
    for run in (a, b):
        approval = e2e.db.approval(run.approval_id)
        assert (approval["status"], approval["version"]) == ("pending", 0)
        assert e2e.db.rows(sa.select(t.votes).where(t.votes.c.approval_id == run.approval_id)) == []

    # the same person's unedited click on the same card decides it: the edits were the reason
    answer = await e2e.send(await click(e2e, BOB, a.card, APPROVE, va))
    assert answer.status == 200
    await e2e.decided_card(a.approval_id)
    assert e2e.db.approval(a.approval_id)["status"] == "approved"
    assert e2e.db.approval(b.approval_id)["status"] == "pending"


async def test_a_click_replayed_within_the_signature_window_decides_nothing_more(e2e: E2E) -> None:
    run = await e2e.refund("cust-replayed")
    request = await e2e.click_request(BOB, run.card, APPROVE)
    signed_at = int(time.time())
    assert (await e2e.send(request, timestamp=signed_at)).status == 200
    await e2e.decided_card(run.approval_id)
    before = await settled(e2e)
    told_before = len(await e2e.ephemerals(BOB))

    for _ in range(3):  # the very same bytes and signature, as a replaying attacker sends them
        assert (await e2e.send(request, timestamp=signed_at)).status == 200
    told = await e2e.new_ephemerals(BOB, told_before, 3)
    decided_at = e2e.db.approval(run.approval_id)["decided_at"]
    assert [e["text"] for e in told] == [
        messages.already_decided("approved", [BOB], decided_at)
    ] * 3
    assert len(e2e.db.effects(run.thread_id, "refund")) == 1
    await unchanged(e2e, before)


async def test_a_click_naming_an_unknown_approval_is_told_so(e2e: E2E) -> None:
    a, _ = await two_runs(e2e, "unknown")
    before = await settled(e2e)
    told_before = len(await e2e.ephemerals(BOB))
    answer = await e2e.send(
        await click(e2e, BOB, a.card, APPROVE, ActionValue("apr_nosuchapproval", ""))
    )
    assert answer.status == 200
    (told,) = await e2e.new_ephemerals(BOB, told_before)
    assert told["text"] == messages.unknown_approval("apr_nosuchapproval")
    await unchanged(e2e, before)


async def test_view_submissions_we_did_not_open_are_refused_in_the_modal(e2e: E2E) -> None:
    a, b = await two_runs(e2e, "view")
    before = await settled(e2e)
    va, vb = value_of(a.card), value_of(b.card)
    reason = {"reason": {"value": {"type": "plain_text_input", "value": "forged"}}}

    def view(callback_id: str, metadata: str | None) -> JSON:
        out: JSON = {
            "id": "V0NEVEROPENED",
            "type": "modal",
            "callback_id": callback_id,
            "blocks": [],
        }
        if metadata is not None:
            out["private_metadata"] = metadata
        return out

    async def submit(user: str, v: JSON, values: JSON) -> tuple[int, Any]:
        request = view_submission(
            user_id=user, view=v, values=values, trigger_id=await e2e.slack.trigger_id(user)
        )
        answer = await e2e.send(request)
        return answer.status, answer.json()

    refused = [
        (DAVE, view(REJECT_CALLBACK, va.encode()), reason),  # not an approver
        (CAROL, view(REJECT_CALLBACK, vb.encode()), reason),  # the requester is no approver either
        (ALICE, view(REJECT_CALLBACK, None), reason),  # no metadata
        (ALICE, view(REJECT_CALLBACK, "{}"), reason),
        (
            ALICE,
            view(REJECT_CALLBACK, json.dumps({"v": 9, "a": va.approval_id, "t": va.thread_id})),
            reason,
        ),
        (ALICE, view(REJECT_CALLBACK, ActionValue("apr_nosuchapproval", "").encode()), reason),
        (ALICE, view(REJECT_CALLBACK, va.encode()), {}),  # not our form
        (ALICE, view(REJECT_CALLBACK, va.encode()), {"reason": "text"}),
        (ALICE, view(REJECT_CALLBACK, va.encode()), {"reason": {"value": {"value": 5}}}),
        (ALICE, view(EDIT_CALLBACK, va.encode()), {"edit:amount": {"value": {"value": {"a": 1}}}}),
        (ALICE, view(EDIT_CALLBACK, va.encode()), {"edit:amount": {"value": {"value": "lots"}}}),
        (DAVE, view(EDIT_CALLBACK, vb.encode()), {}),
        (ALICE, view(EDIT_CALLBACK, None), {}),
    ]
    for user, v, values in refused:
        status, answer = await submit(user, v, values)
        assert status == 200, (v, values, status, answer)
        assert (
            isinstance(answer, dict)
            and answer.get("response_action") == "errors"
            and answer["errors"]
        ), (v, values, answer)
    for callback_id in ("signoff.something", "", "signoff.payload"):
        status, _ = await submit(ALICE, view(callback_id, va.encode()), reason)
        assert 400 <= status < 500, (callback_id, status)
    await unchanged(e2e, before)


async def test_slash_commands_with_odd_text_answer_ephemerally(e2e: E2E) -> None:
    await two_runs(e2e, "slash")
    before = await settled(e2e)
    lines = [
        "",
        " ",
        "run",
        "run refund",
        "run refund amount",
        'run refund reason="never closed',
        "run refund a=1 a=2",
        "run =x",
        "run ../../etc",
        "run refund 1x=2",
        "status a b c",
        "status " + "x" * 5000,
        "status <!channel>",
        "status `rm -rf`",
        "\x00\x01\u202e",
        "😀" * 300,
        "help " * 500,
        "run nosuchworkflow x=1",
        "status refund-000000000000",
        "run refund customer_id=c order_id=o amount=1 reason=r",
        "run refund amount=1",
    ]
    for user in (DAVE, CAROL):
        for line in lines:
            if user == CAROL and line in ("run refund", "run refund amount=1", lines[-2]):
                continue  # carol may start a refund: a legitimate request (that may fail)
            request = slash_command(
                text=line, user_id=user, channel_id=CHANNEL,
                trigger_id=await e2e.slack.trigger_id(user),
                response_url=await e2e.slack.response_url(CHANNEL, user),
            )  # fmt: skip
            answer = await e2e.send(request)
            assert answer.status == 200, (user, line, answer.status, answer.body)
            # an answer in the channel never: ephemeral, or an empty ack (`/agent run`,
            # `/agent status`: their answer follows through the response_url, ephemeral too)
            reply = answer.json() or {}
            assert answer.body == "" or reply.get("response_type") == "ephemeral", (line, reply)
    await unchanged(e2e, before)


# ---- Hypothesis: generated, well-signed bodies ---------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False)
    | st.text(max_size=40)
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


def examples(strategy: st.SearchStrategy[Any]) -> list[Any]:
    """`FUZZ.max_examples` values drawn from `strategy`, the same ones on every run (Hypothesis
    cannot drive an async test inside pytest-asyncio's loop, so they are drawn first, then sent)."""
    drawn: list[Any] = []

    @FUZZ
    @given(strategy)
    def draw(value: Any) -> None:
        drawn.append(value)

    draw()
    return drawn


@st.composite
def _hostile_payload(draw: st.DrawFn, ids: list[str], threads: list[str], cards: list[str]) -> JSON:
    """A payload, mostly `block_actions`, with our action ids and values that are almost right."""
    approval_id = draw(st.sampled_from(ids) | st.text(max_size=30))
    thread_id = draw(st.sampled_from(threads) | st.text(max_size=30))
    value = draw(
        st.text(max_size=60)
        | _json.map(json.dumps)
        | st.fixed_dictionaries(
            {
                "v": st.sampled_from([1, 2, 0, "1", None]),
                "a": st.just(approval_id),
                "t": st.just(thread_id),
            },
            optional={"i": _json},
        ).map(json.dumps)
        | st.none()
    )
    action: JSON = {
        "action_id": draw(st.sampled_from([APPROVE, REJECT, EDIT, PAYLOAD])),
        "type": "button",
    }
    if value is not None:
        action["value"] = value
    payload: JSON = {
        "type": draw(
            st.sampled_from(
                ["block_actions"] * 4
                + [
                    "view_submission",
                    "view_closed",
                    "shortcut",
                    "message_action",
                    "event_callback",
                    "block_suggestion",
                ]
            )
        ),
        "user": draw(
            st.one_of(
                *[st.fixed_dictionaries({"id": st.sampled_from([ALICE, BOB, DAVE, ""])})] * 3, _json
            )
        ),
        "actions": draw(st.one_of(*[st.just([action])] * 4, st.lists(_json, max_size=2), _json)),
        "trigger_id": draw(st.none() | st.text(max_size=10)),
    }
    for key in ("channel", "container", "message", "team", "view"):
        if draw(st.booleans()):
            payload[key] = draw(
                _json
                | st.fixed_dictionaries(
                    {"id": st.just(CHANNEL), "ts": st.sampled_from(cards) | st.text(max_size=20)}
                )
            )
    return payload


async def test_generated_signed_interactions_never_change_anything(e2e: E2E) -> None:
    a, b = await two_runs(e2e, "gen")
    before = await settled(e2e)
    ids = [value_of(r.card).approval_id for r in (a, b)]
    threads = [a.thread_id, b.thread_id]
    payloads = examples(_hostile_payload(ids, threads, [a.card["ts"], b.card["ts"]]))
    assert len(payloads) >= 10
    for payload in payloads:
        answer = await e2e.send(
            SlackRequest(urlencode({"payload": json.dumps(payload)}), FORM, payload)
        )
        assert answer.status < 500, (payload, answer.status, answer.body)
    await unchanged(e2e, before)


async def test_generated_signed_bodies_of_any_shape_get_4xx_or_200(e2e: E2E) -> None:
    before = await settled(e2e)

    bodies = (
        st.binary(max_size=300)
        | _json.map(lambda j: json.dumps(j).encode())
        | st.dictionaries(st.text(max_size=10), st.text(max_size=30), max_size=4).map(
            lambda d: urlencode(d).encode()
        )
    )
    content_types = st.sampled_from([FORM, "application/json", "text/plain", "multipart/form-data"])
    for body, content_type in examples(st.tuples(bodies, content_types)):
        ts = int(time.time())
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": str(ts),
            "X-Slack-Signature": e2e.signer.signature(ts, body),
        }
        status = await post(e2e, "/slack/events", body, headers)
        assert status < 500, (body, content_type, status)
    await unchanged(e2e, before)


async def test_wrong_methods_and_paths_get_4xx_and_health_and_metrics_ignore_junk(e2e: E2E) -> None:
    before = await settled(e2e)
    for method, path in [
        ("GET", "/slack/events"),
        ("PUT", "/slack/events"),
        ("DELETE", "/api/runs"),
        ("GET", "/api/runs"),
        ("POST", "/healthz"),
        ("POST", "/metrics"),
        ("GET", "/slack/events/../../etc/passwd"),
        ("GET", "/%00"),
        ("GET", "/api/runs/" + "x" * 4000),
    ]:
        async with e2e.http.request(method, e2e.bot.url + path) as res:
            await res.read()
            assert 400 <= res.status < 500, (method, path, res.status)
    for path in (
        "/healthz?x=%ff%fe",
        "/metrics?name[]=1&name=<script>",
        "/healthz?" + "a=1&" * 2000,
    ):
        async with e2e.http.get(
            e2e.bot.url + path, headers={"Accept": "\u00e9/\u00e9", "X-Forwarded-For": "junk"}
        ) as res:
            await res.read()
            assert res.status in (200, 414, 431), (path, res.status)
    await unchanged(e2e, before)


# ---- POST /api/runs with junk -------------------------------------------------------------------


async def test_the_runs_api_refuses_junk_with_4xx(e2e: E2E) -> None:
    before = await settled(e2e)
    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    raw: list[tuple[str, bytes, dict[str, str], int]] = [
        ("no token", b'{"workflow": "refund", "input": {}, "requester": "U0CAROL"}', {}, 401),
        ("token in another scheme", b"{}", {"Authorization": f"Basic {API_TOKEN}"}, 401),
        ("token with a suffix", b"{}", {"Authorization": f"Bearer {API_TOKEN}x"}, 401),
        ("non-ASCII token", b"{}", {"Authorization": "Bearer \u00e9\u00e9"}, 401),
        ("not JSON", b"workflow=refund", {**auth, "Content-Type": FORM}, 400),
        (
            "invalid UTF-8",
            b'{"workflow": "\xff"}',
            {**auth, "Content-Type": "application/json"},
            400,
        ),
        ("truncated", b'{"workflow": "ref', {**auth, "Content-Type": "application/json"}, 400),
        ("empty", b"", {**auth, "Content-Type": "application/json"}, 400),
        (
            "oversized",
            b'{"workflow": "' + b"x" * (3 * 1024 * 1024) + b'"}',
            {**auth, "Content-Type": "application/json"},
            413,
        ),
    ]
    for name, data, headers, expected in raw:
        status = await post(e2e, "/api/runs", data, headers)
        assert status == expected, f"{name}: {status}"

    refund = {"customer_id": "c", "order_id": "o", "amount": 1, "reason": "r"}
    bodies: list[tuple[Any, int]] = [
        ([], 400),
        ("refund", 400),
        (None, 400),
        (1, 400),
        ({}, 400),
        ({"workflow": 1, "requester": CAROL}, 400),
        ({"workflow": "refund", "input": [], "requester": CAROL}, 400),
        ({"workflow": "refund", "input": "x", "requester": CAROL}, 400),
        ({"workflow": "refund", "input": refund}, 400),
        ({"workflow": "refund", "input": refund, "requester": ""}, 400),
        ({"workflow": "refund", "input": refund, "requester": {"id": CAROL}}, 400),
        ({"workflow": "nosuch", "input": refund, "requester": CAROL}, 404),
        ({"workflow": "refund", "input": refund, "requester": DAVE}, 403),
        ({"workflow": "refund", "input": refund, "requester": CAROL, "thread_id": 12}, 400),
        ({"workflow": "refund", "input": refund, "requester": CAROL, "thread_id": {"a": 1}}, 400),
        ({"workflow": "refund", "input": refund, "requester": CAROL, "thread_id": ["t"]}, 400),
        ({"workflow": "refund", "input": refund, "requester": CAROL, "channel": 5}, 400),
        (
            {"workflow": "refund", "input": refund, "requester": CAROL, "channel": {"id": CHANNEL}},
            400,
        ),
    ]
    for body, expected in bodies:
        status, answer = await e2e.api("POST", "/api/runs", body=body)
        assert status == expected, (body, status, answer)
        assert answer["ok"] is False, answer
    await unchanged(e2e, before)


async def test_generated_runs_api_bodies_never_start_a_run(e2e: E2E) -> None:
    before = await settled(e2e)

    strategy = _json | st.fixed_dictionaries(
        {"workflow": st.sampled_from(["refund", "nosuch", ""]) | _json},
        optional={
            "input": _json,
            "requester": st.sampled_from([DAVE, ""]) | _json,
            "thread_id": _json,
            "channel": _json,
        },
    )
    for body in examples(strategy):
        status, answer = await e2e.api("POST", "/api/runs", body=body)
        assert 400 <= status < 500, (body, status, answer)
    await unchanged(e2e, before)
