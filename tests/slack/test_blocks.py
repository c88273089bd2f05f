"""The Block Kit renderers: what each shows, Slack's limits under arbitrary data, and that user
data never becomes a mention, a link or formatting."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.sandbox import validation
from bot.sandbox.errors import SlackApiFailure
from bot.slack import _blocks, cards, limits, messages, modals, mrkdwn, replies, status
from bot.slack.payloads import (
    APPROVE,
    EDIT,
    EDIT_CALLBACK,
    NOTE_BLOCK,
    PAYLOAD,
    REASON_BLOCK,
    REJECT,
    REJECT_CALLBACK,
    ActionValue,
    approval_id_from_view,
    edit_block_id,
    edits_from_view_state,
)
from tests.kit.slack import NOW, decision, live_tokens, make_approval, mrkdwn_texts, vote

USERS = {"U_CAROL", "U_DAVE", "U_ALICE", "U_BOB"}
ESC = mrkdwn.ESCAPE_TOKEN.format


def texts(payload: Any) -> str:
    return "\n".join(mrkdwn_texts(payload))


def all_text(payload: Any) -> str:
    """Every string in a payload, mrkdwn or plain."""
    return json.dumps(payload, ensure_ascii=False)


def actions(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]


def check_limits(payload: dict[str, Any]) -> list[str]:
    """What Slack would refuse in a message (`{"text", "blocks"}`) or a view (`{"type": "modal"
    | "home"}`), as Slack's stand-in says it (`validation.check_message`, `check_view`); and what
    signoff holds itself to besides: a message's text is never blank and fits a notification
    (`limits.TEXT_MAX`), and no text object is blank. [] when all is well."""
    kind = payload.get("type")
    problems: list[str] = []
    try:
        if kind in ("modal", "home"):
            validation.check_view(payload, home=kind == "home")
        else:
            validation.check_message(payload.get("text"), payload.get("blocks"))
    except SlackApiFailure as e:
        problems += e.messages or [e.error]
    if kind not in ("modal", "home"):
        text = payload.get("text")
        if not isinstance(text, str) or not text.strip():
            problems.append("text: missing or blank")
        elif mrkdwn.slack_len(text) > limits.TEXT_MAX:
            problems.append(f"text: {mrkdwn.slack_len(text)} > {limits.TEXT_MAX}")
    return problems + [f"{at}: blank" for at in _blank_texts(payload.get("blocks"), "/blocks")]


def _blank_texts(node: Any, at: str) -> list[str]:
    """Where a text object's text is spaces only (Slack's stand-in refuses an empty one)."""
    if isinstance(node, list):
        return [p for i, item in enumerate(node) for p in _blank_texts(item, f"{at}/{i}")]
    if not isinstance(node, dict):
        return []
    text = node.get("text")
    if node.get("type") in ("plain_text", "mrkdwn") and isinstance(text, str):
        return [at] if text and not text.strip() else []
    return [p for key, value in node.items() for p in _blank_texts(value, f"{at}/{key}")]


# ---------------------------------------------------------------------------------------------
# Escaping
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("plain words", "plain words"),
        ("a & b", "a &amp; b"),
        ("<!channel>", "&lt;!channel&gt;"),
        ("<!here> <!everyone>", "&lt;!here&gt; &lt;!everyone&gt;"),
        ("<@U123>", "&lt;@U123&gt;"),
        ("<#C123|general>", "&lt;#C123|general&gt;"),
        ("<http://x|y>", "&lt;http://x|y&gt;"),
        ("&lt;@U1&gt;", "&amp;lt;@U1&amp;gt;"),
        ("*bold*", f"{ESC('*')}bold{ESC('*')}"),
        ("_it_", f"{ESC('_')}it{ESC('_')}"),
        ("~gone~", f"{ESC('~')}gone{ESC('~')}"),
        ("`code`", f"{ESC('`')}code{ESC('`')}"),
        ("```block```", f"{ESC('```')}block{ESC('```')}"),
        ("order_id", "order_id"),
        ("ORD_12_34", "ORD_12_34"),
        ("a*b", "a*b"),
        ("__init__", f"{ESC('__')}init{ESC('__')}"),
        ("é_x_é", f"é{ESC('_')}x{ESC('_')}é"),
        ("＊wide＊", f"{ESC('＊')}wide{ESC('＊')}"),
        ("> quoted", "\u00ad&gt; quoted"),
        ("  > indented", "  \u00ad&gt; indented"),
        ("x > y", "x &gt; y"),
        ("one\n> two", "one\n\u00ad&gt; two"),
        ("＞ wide quote", "\u00ad＞ wide quote"),
        ("nul\x00bell\x07", "nul\ufffdbell\ufffd"),
        ("crlf\r\nline", "crlf\nline"),
        ("pay \u202e001", "pay ⟦U+202E⟧001"),
        ("lone \ud800", "lone \ufffd"),
        ("emoji 🎉", "emoji 🎉"),
        (":white_check_mark: ok", f"{ESC(':')}white_check_mark: ok"),
        ("at 12:30:00", "at 12:30:00"),
        ("https://x.example/a", "https://x.example/a"),
    ],
)
def test_escape(raw: str, expected: str) -> None:
    assert mrkdwn.escape(raw) == expected


@pytest.mark.parametrize(
    ("user_id", "expected"),
    [
        ("U_ALICE", "<@U_ALICE>"),
        ("U0123ABCD", "<@U0123ABCD>"),
        ("W0123ABCD", "<@W0123ABCD>"),
        ("service:billing", "service:billing"),
        ("<!channel>", "&lt;!channel&gt;"),
        ("U123> <!channel", "U123&gt; &lt;!channel"),
        ("u_lower", "u_lower"),
        ("", "someone"),
    ],
)
def test_mention_only_for_slack_ids(user_id: str, expected: str) -> None:
    assert mrkdwn.mention(user_id) == expected


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0, "less than a minute"),
        (59, "less than a minute"),
        (60, "1m"),
        (3600 + 61, "1h 1m"),
        (86400 + 60, "1d"),
        (2 * 86400 + 3 * 3600 + 59, "2d 3h"),
        (8 * 86400, "1w 1d"),
        (float("inf"), "less than a minute"),
    ],
)
def test_duration(seconds: float, expected: str) -> None:
    assert messages.duration(seconds) == expected


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("U_ALICE", "<@U_ALICE>"),
        ("rule:small refunds", "the rule “small refunds”"),
        ("rule:<!channel>", "the rule “&lt;!channel&gt;”"),
        ("policy", "policy"),
        ("sweep", "signoff (nobody decided in time)"),
    ],
)
def test_decider(entry: str, expected: str) -> None:
    assert messages.decider(entry) == expected


def test_cut_never_leaves_half_a_token_or_entity() -> None:
    text = "ab <@U_ALICE> &amp; " + ESC("*")
    for limit in range(2, len(text) + 2):
        cut = mrkdwn.cut_mrkdwn(text, limit)
        assert mrkdwn.slack_len(cut) <= limit
        assert cut.count("<") == cut.count(">")
        assert "&" not in cut or "&amp;" in cut


def test_fit_counts_utf16_units() -> None:
    assert mrkdwn.fit("🎉" * 10, 10) == "🎉" * 4 + "…"
    assert mrkdwn.slack_len(mrkdwn.fit("🎉" * 10, 10)) == 9
    assert mrkdwn.fit("short", 10) == "short"


# ---------------------------------------------------------------------------------------------
# The approval card
# ---------------------------------------------------------------------------------------------


def test_approval_card_shows_what_is_asked() -> None:
    a = make_approval(
        required=2,
        votes=(vote("U_ALICE"),),
        payload={"customer_id": "C1", "amount": 12.5, "card_number": {"redacted": "sha256:ab"}},
    )
    card = cards.approval_card(a, now=NOW)
    assert check_limits(card) == []
    header = card["blocks"][0]
    assert header == {
        "type": "header",
        "text": {"type": "plain_text", "text": "🟠 Refund 12.00 to C1", "emoji": False},
    }
    body = texts(card)
    for expected in (
        "<@U_CAROL> asks to run `send_refund`",
        "*Risk*\n🟠 high",
        "*Requested by*\n<@U_CAROL>",
        "*Workflow*\n`refund`",
        "*Thread*\n`refund-0123456789ab`",
        f"*Expires*\n{mrkdwn.date(a.expire_at)}",  # never stale, in the reader's time zone
        "*Approvals*\n1 of 2 approvals: <@U_ALICE>",
        "*Approvers*\n@finance or <@U_DAVE>",
        "*customer_id*\nC1",
        "*amount*\n12.5",
        "*card_number*\n_[redacted]_",
        "Approval `apr_TESTabcdefghijklmnop12`",
    ):
        assert expected in body
    assert "sha256:ab" not in all_text(card)
    assert card["text"].startswith(
        "🟠 Approval needed: Refund 12.00 to C1 (send_refund), requested by <@U_CAROL>"
    )


@pytest.mark.parametrize(
    ("tier", "editable", "votes", "ids", "confirm"),
    [
        ("high", ("amount",), (), [APPROVE, REJECT, EDIT, PAYLOAD], False),
        ("high", (), (), [APPROVE, REJECT, PAYLOAD], False),
        ("critical", ("amount",), (), [APPROVE, REJECT, EDIT, PAYLOAD], True),
        ("critical", (), (), [APPROVE, REJECT, PAYLOAD], True),
        ("low", ("amount",), ("U_ALICE",), [APPROVE, REJECT, PAYLOAD], False),
    ],
)
def test_card_buttons(
    tier: str, editable: tuple[str, ...], votes: tuple[str, ...], ids: list[str], confirm: bool
) -> None:
    a = make_approval(
        risk_tier=tier, editable=editable, required=2, votes=tuple(vote(u) for u in votes)
    )
    buttons = actions(cards.approval_card(a, now=NOW))
    assert [b["action_id"] for b in buttons] == ids
    assert buttons[0]["style"] == "primary" and buttons[1]["style"] == "danger"
    assert ("confirm" in buttons[0]) is confirm
    assert all("confirm" not in b for b in buttons[1:])
    for b in buttons:
        assert ActionValue.decode(b["value"]) == ActionValue(a.id, a.thread_id, a.interrupt_id)


def test_critical_card_has_a_confirm_dialog() -> None:
    a = make_approval(risk_tier="critical", title="Delete row 7 of users")
    approve = actions(cards.approval_card(a, now=NOW))[0]
    assert approve["confirm"]["title"]["text"] == "Approve a critical action?"
    assert "“Delete row 7 of users” is a critical action" in approve["confirm"]["text"]["text"]
    assert approve["confirm"]["confirm"]["text"] == "Approve"
    assert cards.approval_card(a, now=NOW)["blocks"][0]["text"]["text"].startswith("🔴 ")


@pytest.mark.parametrize(
    ("expire_at", "expected"),
    [
        (None, "*Expires*\nnever"),
        (NOW - 1, "*Expires*\nnow"),
        # a date token, not "in 1h 30m": the card stays true however long it waits
        (
            NOW + 30,
            "*Expires*\n<!date^1700000030^{date_short_pretty} at {time}|2023-11-14 22:13 UTC>",
        ),
        (
            NOW + 90 * 60,
            "*Expires*\n<!date^1700005400^{date_short_pretty} at {time}|2023-11-14 23:43 UTC>",
        ),
    ],
)
def test_card_expiry(expire_at: float | None, expected: str) -> None:
    assert expected in texts(cards.approval_card(make_approval(expire_at=expire_at), now=NOW))


@pytest.mark.parametrize(
    ("required", "votes", "users", "expected"),
    [
        (1, (), None, "needs 1 approval"),
        (2, (), None, "needs 2 approvals"),
        (2, ("U_ALICE",), None, "1 of 2 approvals: <@U_ALICE>"),
        (3, ("U_ALICE", "U_BOB"), None, "2 of 3 approvals: <@U_ALICE> and <@U_BOB>"),
        (2, (), ["U_BOB"], "1 of 2 approvals: <@U_BOB>"),
    ],
)
def test_card_quorum(
    required: int, votes: tuple[str, ...], users: list[str] | None, expected: str
) -> None:
    a = make_approval(required=required, votes=tuple(vote(u) for u in votes))
    assert f"*Approvals*\n{expected}" in texts(
        cards.approval_card(a, now=NOW, progress_users=users)
    )


def test_card_shortens_long_values_and_points_to_the_full_payload() -> None:
    a = make_approval(payload={"reason": "x" * 10_000})
    card = cards.approval_card(a, now=NOW)
    field = next(t for t in mrkdwn_texts(card) if t.startswith("*reason*"))
    assert field == "*reason*\n" + "x" * (limits.CARD_VALUE_MAX - 1) + "…"
    assert "Long values are shortened here. *Full payload* shows them in full." in texts(card)


def test_card_shows_the_first_fields_and_says_how_many_more() -> None:
    a = make_approval(payload={f"f{i}": i for i in range(300)})
    card = cards.approval_card(a, now=NOW)
    assert check_limits(card) == []
    body = texts(card)
    assert "*f19*\n19" in body and "*f20*" not in body
    assert "Showing 20 of 300 fields. *Full payload* shows them all." in body


def test_card_escapes_title_and_payload() -> None:
    a = make_approval(
        title="Refund <!channel> *now*",
        payload={"<@U999>": "<http://evil.example|bank.example> @channel", "note": "~strike~"},
    )
    card = cards.approval_card(a, now=NOW)
    for text in mrkdwn_texts(card):
        assert live_tokens(text, users=USERS) == []
    body = texts(card)
    assert "&lt;@U999&gt;" in body and "&lt;http://evil.example|bank.example&gt; @channel" in body
    assert all(t["verbatim"] is True for b in card["blocks"] for t in _mrkdwn_objects(b))
    # plain_text is not parsed: the header shows the title as written
    assert card["blocks"][0]["text"]["text"] == "🟠 Refund <!channel> *now*"


def _mrkdwn_objects(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        own = [node] if node.get("type") == "mrkdwn" else []
        return own + [o for v in node.values() for o in _mrkdwn_objects(v)]
    if isinstance(node, list):
        return [o for v in node for o in _mrkdwn_objects(v)]
    return []


@pytest.mark.parametrize(
    "thread_id", ["t" * 3000, "𐀀" * 1200]
)  # 1200 characters, 2400 UTF-16 units
def test_card_value_too_long_for_a_button_drops_the_thread(thread_id: str) -> None:
    a = make_approval(thread_id=thread_id)
    card = cards.approval_card(a, now=NOW)
    assert check_limits(card) == []
    assert ActionValue.decode(actions(card)[0]["value"]) == ActionValue(a.id, "", None)


def test_card_for_any_status() -> None:
    assert actions(cards.card(make_approval(), now=NOW))
    decided = make_approval(
        status="approved", decision=decision("approved", ["U_ALICE"]), decided_at=NOW
    )
    assert actions(cards.card(decided, now=NOW)) == []


# ---------------------------------------------------------------------------------------------
# Decided and expired cards, thread replies
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "dec", "reason", "header", "line"),
    [
        (
            "approved",
            decision("approved", ["U_ALICE", "U_BOB"]),
            None,
            "✅ Refund 12.00 to C1",
            "✅ *Approved* by <@U_ALICE> and <@U_BOB> <!date^1700000000^",
        ),
        (
            "approved",
            decision("approved", ["rule:small refunds"]),
            None,
            "✅ Refund 12.00 to C1",
            "✅ *Approved* by the rule “small refunds”",
        ),
        (
            "rejected",
            decision("rejected", ["U_ALICE"], note="duplicate <!channel>"),
            None,
            "❌ Refund 12.00 to C1",
            "❌ *Rejected* by <@U_ALICE>",
        ),
        (
            "rejected",
            decision("denied", ["policy"], note="not in the policy"),
            "not in the policy",
            "⛔ Refund 12.00 to C1",
            "⛔ *Denied* by policy",
        ),
        ("cancelled", None, None, "➖ Refund 12.00 to C1", "➖ *Cancelled*"),
        (
            "expired",
            decision("expired", ["sweep"], approved=False),
            None,
            "⌛ Refund 12.00 to C1",
            "⌛ *Expired*: nobody decided by <!date^1700000000^",
        ),
    ],
)
def test_decided_card(
    status: str, dec: dict[str, Any] | None, reason: str | None, header: str, line: str
) -> None:
    a = make_approval(status=status, decision=dec, reason=reason, decided_at=NOW)
    card = cards.decided_card(a)
    assert check_limits(card) == []
    assert actions(card) == []
    assert card["blocks"][0]["text"]["text"] == header
    assert card["blocks"][1]["text"]["text"].startswith(line)
    body = texts(card)
    assert "*customer_id*\nC1" in body and "*Requested by*\n<@U_CAROL>" in body
    if dec and dec["note"]:
        assert f"*Note:* {mrkdwn.escape(dec['note'])}" in body
    for text in mrkdwn_texts(card):
        assert live_tokens(text, users=USERS) == []


def test_decided_card_shows_edits() -> None:
    dec = decision("approved", ["U_ALICE"], edits={"amount": 10.0, "reason": "partial"})
    a = make_approval(status="approved", decision=dec, decided_at=NOW)
    body = texts(cards.decided_card(a))
    assert (
        "*Edited before approval:*\n• *amount*: 12.0 → 10.0\n• *reason*: damaged → partial" in body
    )


@pytest.mark.parametrize("approved", [False, True])
def test_expired_card(approved: bool) -> None:
    a = make_approval(
        status="expired", decision=decision("expired", ["sweep"], approved=approved), decided_at=NOW
    )
    card = cards.expired_card(a)
    assert actions(card) == []
    outcome = "approved (the policy's expiry outcome)" if approved else "rejected"
    assert f"so it was {outcome}." in card["blocks"][1]["text"]["text"]
    assert cards.decided_card(a) == card


def test_thread_replies() -> None:
    assert replies.thread_reply_completed("refund", "refund-1", "refunded 12.00 to C1") == (
        "✅ Run `refund-1` of *refund* completed.\nrefunded 12.00 to C1"
    )
    failed = replies.thread_reply_failed("refund", "refund-1", "KeyError: <!channel>")
    assert failed.startswith("⚠️ Run `refund-1` of *refund* failed: KeyError: &lt;!channel&gt;\n")
    assert "`signoff show refund-1`" in failed
    unknown = replies.thread_reply_outcome_unknown("refund", "refund-1", "died")
    assert "A person must check the outside system" in unknown
    rejected = make_approval(
        status="rejected", decision=decision("rejected", ["U_ALICE"], note="dup"), decided_at=NOW
    )
    assert replies.thread_reply_decided(rejected) == (
        "❌ Refund 12.00 to C1: rejected by <@U_ALICE>.\n*Reason:* dup\nThe run goes on without doing it."
    )
    denied = make_approval(
        status="rejected", decision=decision("denied", ["policy"], note="unlisted"), decided_at=NOW
    )
    assert replies.thread_reply_decided(denied).startswith(
        "⛔ Refund 12.00 to C1: denied by policy.\n*Reason:* unlisted"
    )
    approved = make_approval(
        status="approved", decision=decision("approved", ["U_ALICE"]), decided_at=NOW
    )
    assert (
        replies.thread_reply_decided(approved)
        == "✅ Refund 12.00 to C1: approved by <@U_ALICE>. The run is resuming."
    )
    expired = make_approval(
        status="expired", decision=decision("expired", ["sweep"], approved=False), decided_at=NOW
    )
    assert "nobody decided in time, so it was rejected" in replies.thread_reply_decided(expired)


def test_thread_reply_with_a_huge_error_fits() -> None:
    text = replies.thread_reply_failed("w", "t", "<x> " * 50_000)
    assert mrkdwn.slack_len(text) <= limits.TEXT_MAX
    assert live_tokens(text) == []


def test_reminder_and_escalation_mention_approvers() -> None:
    a = make_approval()
    expires = "<!date^1700183659^{date_short_pretty} at {time}|2023-11-17 01:14 UTC>"
    assert replies.reminder_text(a, now=NOW, mentions=["U_ALICE", "U_BOB"]) == (
        f"⏰ Reminder: Refund 12.00 to C1 has waited 3h for <@U_ALICE> or <@U_BOB>. It expires {expires}."
    )
    assert "for @finance or <@U_DAVE>." in replies.reminder_text(a, now=NOW)
    assert replies.escalation_text(a, now=NOW, added=["U_ERIN", "@leads"]) == (
        f"🔺 Escalated: Refund 12.00 to C1 has waited 3h. <@U_ERIN> and @leads can now decide it too. "
        f"It expires {expires}."
    )
    assert replies.reminder_text(make_approval(expire_at=None), now=NOW).endswith("<@U_DAVE>.")
    # messages.reminder takes raw entries, as notify.py passes them: nothing injected.
    raw = messages.reminder("<!channel>", 60, ["<!here>", "U_BOB"], None)
    assert raw == "⏰ Reminder: &lt;!channel&gt; has waited 1m for &lt;!here&gt; or <@U_BOB>."


def test_text_blocks() -> None:
    message = replies.text_blocks(messages.unknown_thread("t-1"))
    assert check_limits(message) == []
    assert (
        message["text"]
        == message["blocks"][0]["text"]["text"]
        == ("🤷 No run has the thread id `t-1`. `/agent status` lists what is waiting.")
    )
    assert check_limits(replies.text_blocks("x" * 10_000)) == []


# ---------------------------------------------------------------------------------------------
# Modals
# ---------------------------------------------------------------------------------------------


def test_reject_modal() -> None:
    a = make_approval()
    view = modals.reject_modal(a)
    assert check_limits(view) == []
    assert view["callback_id"] == REJECT_CALLBACK
    assert approval_id_from_view(view) == a.id
    assert view["title"]["text"] == "Reject request" and view["submit"]["text"] == "Reject"
    reason = next(b for b in view["blocks"] if b.get("block_id") == REASON_BLOCK)
    assert reason["optional"] is False
    assert reason["element"]["multiline"] is True and reason["element"]["min_length"] == 1


def _state(view: dict[str, Any], typed: dict[str, str] | None = None) -> dict[str, Any]:
    """What Slack sends back for `view`: each input's initial value, or what was typed."""
    values: dict[str, Any] = {}
    for b in view["blocks"]:
        if b["type"] == "input":
            value = (typed or {}).get(b["block_id"], b["element"].get("initial_value"))
            values[b["block_id"]] = {"value": {"type": "plain_text_input", "value": value}}
    return {"values": values}


def test_edit_modal_prefills_typed_inputs() -> None:
    a = make_approval(
        payload={
            "amount": 12.5,
            "count": 3,
            "urgent": False,
            "reason": "damaged",
            "tags": ["a"],
            "card": {"redacted": "sha256:x"},
            "blob": "y" * 4000,
        },
        editable=("amount", "count", "urgent", "reason", "tags", "card", "blob", "missing"),
    )
    view = modals.edit_modal(a)
    assert check_limits(view) == []
    assert view["callback_id"] == EDIT_CALLBACK and view["submit"]["text"] == "Approve"
    assert approval_id_from_view(view) == a.id
    inputs = {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}
    assert list(inputs) == [
        edit_block_id(f) for f in ("amount", "count", "urgent", "reason", "tags", "missing")
    ] + [NOTE_BLOCK]
    expected = {
        "amount": ("12.5", "A number, e.g. 12.50", False),
        "count": ("3", "A whole number, e.g. 42", False),
        "urgent": ("false", "true or false", False),
        "reason": ("damaged", "Text", True),
        "tags": ('["a"]', 'A JSON array, e.g. ["a", "b"]', False),
        "missing": (None, "Text", True),
    }
    for name, (initial, hint, optional) in expected.items():
        block = inputs[edit_block_id(name)]
        assert block["label"]["text"] == name
        assert block["element"].get("initial_value") == initial
        assert block["hint"]["text"] == hint
        assert block["optional"] is optional
    body = texts(view)
    assert "*card* is redacted, so it cannot be edited here." in body
    assert "*blob* is too long to edit here (4000 characters)" in body
    # Submitting unchanged edits nothing; a typed change comes back typed.
    editable = {f: a.payload.get(f) for f in a.editable}
    assert edits_from_view_state(_state(view), editable) == {}
    typed = {edit_block_id("amount"): "10", edit_block_id("urgent"): "yes"}
    assert edits_from_view_state(_state(view, typed), editable) == {"amount": 10.0, "urgent": True}


def test_edit_modal_with_more_fields_than_fit() -> None:
    a = make_approval(
        payload={f"f{i}": i for i in range(150)}, editable=tuple(f"f{i}" for i in range(150))
    )
    view = modals.edit_modal(a)
    assert check_limits(view) == []
    assert "53 more editable fields cannot fit in this form" in texts(view)


def test_edit_modal_of_many_long_wide_values_fits_slack_in_bytes() -> None:
    """Each value at Slack's input limit (3,000 characters), three bytes a character: the form
    stops before Slack's 250 kB and says how many fields it left out."""
    names = [f"理由{i}" for i in range(90)]
    a = make_approval(payload={n: "語" * 2_900 for n in names}, editable=tuple(names))
    view = modals.edit_modal(a)
    assert check_limits(view) == []  # the stand-in's checks, view_too_large (250 kB) among them
    assert len(json.dumps(view, ensure_ascii=False).encode()) <= limits.VIEW_BYTES_MAX
    inputs = [b for b in view["blocks"] if b["type"] == "input" and b["block_id"] != NOTE_BLOCK]
    assert 20 < len(inputs) < 90
    assert inputs[0]["element"]["initial_value"] == "語" * 2_900
    assert f"{90 - len(inputs)} more editable fields cannot fit in this form" in texts(view)


def test_payload_modal_shows_everything_exactly() -> None:
    payload = {
        "reason": "<!channel> *bold*\nline two",
        "amount": 12.5,
        "card": {"redacted": "sha256:x"},
        "big": "z" * 10_000,
    }
    view = modals.payload_modal(make_approval(payload=payload))
    assert check_limits(view) == []
    assert view["title"]["text"] == "Full payload" and "submit" not in view
    chunks = [b["text"]["text"] for b in view["blocks"][1:]]
    assert all(b["text"]["type"] == "plain_text" for b in view["blocks"][1:])
    assert len(chunks) >= 4
    shown = json.loads("".join(chunks))
    assert shown == {**payload, "card": "[redacted]"}


def test_payload_modal_too_big_for_slack_says_so() -> None:
    view = modals.payload_modal(make_approval(payload={f"k{i}": "v" * 10_000 for i in range(400)}))
    assert check_limits(view) == []  # the stand-in's checks, view_too_large (250 kB) among them
    assert len(view["blocks"]) <= limits.VIEW_BLOCKS_MAX
    assert len(json.dumps(view, ensure_ascii=False).encode()) <= limits.VIEW_BYTES_MAX
    assert "more characters do not fit in Slack" in view["blocks"][-1]["elements"][0]["text"]


def test_payload_modal_of_wide_characters_fits_slack_in_bytes() -> None:
    view = modals.payload_modal(make_approval(payload={f"k{i}": "語" * 2_000 for i in range(200)}))
    assert check_limits(view) == []
    assert len(json.dumps(view, ensure_ascii=False).encode()) <= limits.VIEW_BYTES_MAX
    assert "more characters do not fit in Slack" in view["blocks"][-1]["elements"][0]["text"]


# ---------------------------------------------------------------------------------------------
# /agent status, help, App Home
# ---------------------------------------------------------------------------------------------


def test_status_lists_mine_first_with_age_waits_and_link() -> None:
    theirs = make_approval(
        id="apr_theirs", approvers=("U_BOB",), title="Delete row", created_at=NOW - 600
    )
    mine = make_approval(id="apr_mine", approvers=("U_ALICE",), required=2, created_at=NOW - 7200)
    voted = make_approval(
        id="apr_voted", approvers=("U_ALICE", "U_BOB"), required=2, votes=(vote("U_ALICE"),)
    )
    reply = status.status_blocks(
        [theirs, mine, voted],
        "U_ALICE",
        NOW,
        permalinks={"apr_mine": "https://x.slack.com/archives/C1/p1"},
    )
    assert check_limits(reply) == []
    sections = [b["text"]["text"] for b in reply["blocks"] if b["type"] == "section"]
    assert sections[0] == "*Waiting on you* (1)"
    assert sections[1] == (
        "🟠 *<https://x.slack.com/archives/C1/p1|Refund 12.00 to C1>*\n"
        "`send_refund` · waiting since <!date^1699992800^{date_short_pretty} at {time}|2023-11-14 "
        "20:13 UTC> · needs 2 more approvals from <@U_ALICE> · expires <!date^1700183659^"
        "{date_short_pretty} at {time}|2023-11-17 01:14 UTC>\n"
        "requested by <@U_CAROL>"
    )  # times as Slack date tokens, never "waiting 2h" or "expires in 2d 3h", which go stale
    assert sections[2] == "*Waiting on others* (2)"
    assert (
        "`send_refund` · waiting since <!date^1699999400^{date_short_pretty} at {time}|2023-11-14 "
        "22:03 UTC> · needs 1 more approval from <@U_BOB>"
    ) in sections[3]
    assert "you approved; needs 1 more approval" in sections[4]
    assert reply["text"] == "1 waiting on you, 2 waiting on others"


def test_status_uses_decidable_when_given() -> None:
    a = make_approval(id="apr_a", approvers=("@finance",))
    reply = status.status_blocks([a], "U_ALICE", NOW, decidable={"apr_a"})
    assert reply["blocks"][0]["text"]["text"] == "*Waiting on you* (1)"


def test_status_nothing_waiting() -> None:
    reply = status.status_blocks([], "U_ALICE", NOW)
    assert reply["blocks"] == [
        {
            "type": "section",
            "text": {
                "type": "mrkdwn",
                "text": "🎉 Nothing is waiting for approval.",
                "verbatim": True,
            },
        }
    ]


def test_status_with_many_pending_fits_and_counts_the_rest() -> None:
    many = [
        make_approval(id=f"apr_{i}", approvers=("U_ALICE",) if i % 2 else ("U_BOB",))
        for i in range(120)
    ]
    reply = status.status_blocks(many, "U_ALICE", NOW)
    assert check_limits(reply) == []  # 50 blocks at most, and their text within Slack's total
    assert len(reply["blocks"]) <= limits.MESSAGE_BLOCKS_MAX
    # each list shows what fits and counts the rest: none is lost from the count
    texts = list(mrkdwn_texts(reply))
    shown = [t for t in texts if "requested by" in t]
    more = [int(n) for t in texts for n in re.findall(r"…and (\d+) more\.", t)]
    assert len(more) == 2 and len(shown) + sum(more) == 120


@pytest.mark.parametrize(
    "url", ["http://insecure", "https://x|<!channel>", "javascript:alert(1)", "https://a b", 7]
)
def test_status_ignores_unsafe_permalinks(url: Any) -> None:
    reply = status.status_blocks(
        [make_approval()], "U_X", NOW, permalinks={make_approval().id: url}
    )
    for text in mrkdwn_texts(reply):
        assert live_tokens(text, users=USERS) == []


def test_thread_status() -> None:
    run = {
        "thread_id": "refund-1",
        "workflow": "refund",
        "requester": "U_CAROL",
        "channel": "C_REFUNDS",
        "status": "failed",
        "error": "KeyError: <!channel>",
        "created_at": NOW - 7200,
        "updated_at": NOW - 60,
    }
    summary = {"next": ["request_approval"], "history": [f"step {i}" for i in range(15)]}
    approvals = [
        make_approval(
            status="rejected", decision=decision("rejected", ["U_ALICE"], note="no"), decided_at=NOW
        ),
        make_approval(),
    ]
    reply = status.thread_status_blocks(run, summary, approvals)
    assert check_limits(reply) == []
    assert reply["blocks"][0]["text"]["text"] == "Thread refund-1"
    body = texts(reply)
    for expected in (
        "*Workflow*\n`refund`",
        "*Status*\n⚠️ failed",
        "*Requested by*\n<@U_CAROL>",
        "*Channel*\n<#C_REFUNDS>",
        "*Started*\n<!date^1699992800^{date_short_pretty} at {time}|2023-11-14 20:13 UTC>",
        "*Updated*\n<!date^1699999940^{date_short_pretty} at {time}|2023-11-14 22:12 UTC>",
        "*Error:* KeyError: &lt;!channel&gt;",
        "*Paused at:* `request_approval`",
        "*History* (last 10 of 15 steps):\n• step 5",
        "• step 14",
        "*Approvals* (2):",
        "❌ Refund 12.00 to C1 — rejected by <@U_ALICE> <!date^1700000000^",
        "⏳ Refund 12.00 to C1 — pending",
    ):
        assert expected in body
    assert "• step 4\n" not in body
    for text in mrkdwn_texts(reply):
        assert live_tokens(text, users=USERS, channels={"C_REFUNDS"}) == []


def test_help() -> None:
    reply = status.help_blocks(["refund", "delete_row"])
    assert check_limits(reply) == []
    body = texts(reply)
    assert (
        "`/agent status`" in body
        and "`/agent status THREAD_ID`" in body
        and "`/agent run WORKFLOW" in body
    )
    assert "Workflows: `refund`, `delete_row`" in body
    unknown = status.help_blocks(unknown="frobnicate")
    assert (
        unknown["blocks"][0]["text"]["text"]
        == "🤷 I don't know `/agent frobnicate`. Here is what I can do:"
    )
    assert unknown["blocks"][1]["type"] == "header"


def test_thread_status_from_a_state_snapshot() -> None:
    from graphs.types import StateSnapshot

    snapshot = StateSnapshot(
        values={},
        next=("request_approval",),
        config={"configurable": {"thread_id": "t"}},
        metadata={"step": 3, "source": "loop"},
        created_at=None,
        parent_config=None,
    )
    run = {
        "thread_id": "t",
        "workflow": "refund",
        "requester": "U_CAROL",
        "status": "paused",
        "created_at": NOW,
        "updated_at": NOW,
    }
    reply = status.thread_status_blocks(run, snapshot, [make_approval()])
    assert check_limits(reply) == []
    # a paused run says what it waits for, in its calls and people, not engine steps
    body = texts(reply)
    assert (
        "*Waiting for* (1 decision):\n• *Refund 12.00 to C1* (`send_refund`): needs 1 more approval from"
        in body
    )
    assert "Paused at" not in body and "step 3" not in body


def test_home_view() -> None:
    pending = [make_approval(id=f"apr_p{i}", approvers=("U_ALICE",)) for i in range(80)]
    recent = [
        make_approval(
            id=f"apr_r{i}",
            status="approved",
            decision=decision("approved", ["U_ALICE"]),
            decided_at=NOW,
        )
        for i in range(80)
    ]
    view = status.home_view(pending, recent, user="U_ALICE", now=NOW)
    assert view["type"] == "home"
    assert check_limits(view) == []
    body = texts(view)
    assert "*Waiting on you* (80)" in body and "*Recent decisions* (80)" in body
    assert "✅ Refund 12.00 to C1 — approved by <@U_ALICE>" in body
    # the tab stays open: its times are Slack date tokens, not "waiting 3h", "expires in 2d 3h"
    assert (
        "`send_refund` · waiting since <!date^1699989200^{date_short_pretty} at {time}|2023-11-14 "
        "19:13 UTC> · needs 1 more approval from <@U_ALICE> · expires <!date^1700183659^"
        "{date_short_pretty} at {time}|2023-11-17 01:14 UTC>"
    ) in body
    assert " ago" not in body and "expires in" not in body
    overdue = status.home_view([make_approval(expire_at=NOW - 1)], [], now=NOW)
    assert "· expires now\n" in texts(overdue)  # the sweep has not expired it yet
    empty = status.home_view([], [], now=NOW)
    assert "🎉 Nothing is waiting on you." in texts(empty) and "No decisions yet." in texts(empty)
    down = status.home_unavailable_view()
    assert check_limits(down) == []
    assert "signoff can't reach its database right now" in texts(down)
    noticed = status.home_view(pending, recent, now=NOW, notice=messages.database_unavailable())
    assert check_limits(noticed) == []
    assert noticed["blocks"][1]["text"]["text"] == messages.database_unavailable()


@pytest.mark.parametrize(
    ("step", "source", "nodes", "line"),
    [
        (3, "loop", ["request_approval"], "step 3 (loop) → request_approval"),
        (0, "input", ["a", "b"], "step 0 (input) → a, b"),
        (5, "loop", [], "step 5 (loop): finished"),
        (None, None, [], "a step: finished"),
    ],
)
def test_history_line(step: Any, source: Any, nodes: list[str], line: str) -> None:
    assert messages.history_line(step, source, nodes) == line


# ---------------------------------------------------------------------------------------------
# check_limits itself (Slack's stand-in, and signoff's own rules)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (
            {"text": "t", "blocks": [{"type": "divider"}] * 51},
            "no more than 50 items allowed [json-pointer:/blocks]",
        ),
        (
            {
                "text": "t",
                "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}],
            },
            "must be less than 151 characters [json-pointer:/blocks/0/text/text]",
        ),
        (
            {"text": "t", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": " "}}]},
            "blank",
        ),
        (
            {
                "text": "t",
                "blocks": [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}],
            },
            "no more than 10 items allowed [json-pointer:/blocks/0/fields]",
        ),
        (
            {
                "text": "t",
                "blocks": [
                    {
                        "type": "actions",
                        "elements": [
                            {
                                "type": "button",
                                "text": {"type": "plain_text", "text": "b"},
                                "action_id": "a",
                                "value": "v" * 2001,
                            }
                        ],
                    }
                ],
            },
            "must be less than 2001 characters [json-pointer:/blocks/0/elements/0/value]",
        ),
        (
            {"type": "modal", "title": {"type": "plain_text", "text": "x" * 25}, "blocks": []},
            "must be less than 25 characters [json-pointer:/view/title/text]",
        ),
        ({"text": "", "blocks": []}, "text: missing or blank"),
        (
            {
                "text": "t",
                "blocks": [
                    {"type": "divider", "block_id": "a"},
                    {"type": "divider", "block_id": "a"},
                ],
            },
            "duplicate block_id 'a' [json-pointer:/blocks/1/block_id]",
        ),
    ],
)
def test_check_limits_finds_problems(payload: dict[str, Any], problem: str) -> None:
    assert any(problem in p for p in check_limits(payload))


# ---------------------------------------------------------------------------------------------
# Properties: arbitrary data never breaks a limit, crashes, or injects
# ---------------------------------------------------------------------------------------------

NASTY = [
    "<!channel>",
    "<@U123>",
    "<http://x|y>",
    "*",
    "_",
    "~",
    "`",
    "```",
    ">",
    "&",
    "&amp;",
    "\n",
    "\u202e",
    "🎉",
    "\x00",
    "\ud800",
    "<!date^1^{x}|y>",
    "|",
    "@here",
    ":white_check_mark:",
]
text_st = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(NASTY) | st.text(max_size=3), max_size=30).map("".join),
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=12), st.integers(1, 1200)),
)
scalar_st = st.one_of(
    text_st,
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.builds(lambda h: {"redacted": f"sha256:{h}"}, st.text(max_size=8)),
)
value_st = st.recursive(
    scalar_st,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text_st, inner, max_size=4),
    max_leaves=8,
)
payload_st = st.one_of(
    st.dictionaries(text_st, value_st, max_size=25),
    st.builds(
        lambda k, v, n: {f"{k}{i}": v for i in range(n)}, text_st, value_st, st.integers(100, 400)
    ),
)
approval_st = st.builds(
    lambda payload, title, action, workflow, thread, tier, required, voters, editable, expire, status: (
        make_approval(
            payload=payload,
            title=title,
            action=action,
            workflow=workflow,
            thread_id=thread,
            risk_tier=tier,
            required=required,
            votes=tuple(vote(u) for u in voters),
            editable=editable,
            expire_at=None if expire is None else NOW + expire,
            status=status,
            decision=None
            if status == "pending"
            else decision(
                "denied" if status == "rejected" else status,
                ["U_ALICE", "policy", "rule:" + title[:20]],
                note=title,
            ),
            reason=title or None,
            decided_at=None if status == "pending" else NOW,
        )
    ),
    payload_st,
    text_st,
    text_st,
    text_st,
    text_st,
    st.sampled_from(["low", "medium", "high", "critical", "<!channel>"]),
    st.integers(1, 5),
    st.lists(st.sampled_from(sorted(USERS)), max_size=4, unique=True),
    st.lists(text_st, max_size=5).map(tuple),
    st.none() | st.floats(-1e6, 1e7),
    st.sampled_from(["pending", "pending", "approved", "rejected", "expired", "cancelled"]),
)
FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def assert_safe(payload: dict[str, Any], **allowed: Any) -> None:
    assert check_limits(payload) == []
    for text in mrkdwn_texts(payload):
        assert live_tokens(text, users=USERS, **allowed) == []


@FAST
@given(approval_st)
def test_approval_card_never_breaks_limits_or_injects(a: Any) -> None:
    card = cards.approval_card(a, now=NOW)
    assert_safe(card)
    for b in actions(card):
        assert ActionValue.decode(b["value"]).approval_id == a.id


@FAST
@given(approval_st)
def test_other_renderers_never_break_limits_or_inject(a: Any) -> None:
    assert_safe(cards.card(a, now=NOW))
    assert_safe(cards.decided_card(a))
    assert_safe(modals.reject_modal(a))
    assert_safe(modals.edit_modal(a))
    for text in (
        replies.thread_reply_decided(a),
        replies.reminder_text(a, now=NOW),
        replies.escalation_text(a, now=NOW, added=["U_BOB"]),
        replies.thread_reply_failed(a.workflow, a.thread_id, a.title),
    ):
        assert mrkdwn.slack_len(text) <= limits.TEXT_MAX
        assert live_tokens(text, users=USERS) == []


@FAST
@given(approval_st)
def test_payload_modal_never_breaks_limits_and_shows_values_exactly(a: Any) -> None:
    view = modals.payload_modal(a)
    assert_safe(view)
    chunks = [b["text"]["text"] for b in view["blocks"][1:] if b["type"] == "section"]
    if view["blocks"][-1]["type"] != "context":  # not truncated: the JSON is all there
        text = "".join(chunks)
        expected = json.dumps(
            {k: "[redacted]" if _blocks.is_redacted(v) else v for k, v in a.payload.items()},
            ensure_ascii=False,
            indent=2,
            default=str,
        )
        assert text.replace("·", " ") == mrkdwn.clean(expected).replace("·", " ")


@settings(FAST, max_examples=30)
@given(
    st.lists(approval_st, max_size=25),
    st.sampled_from(sorted(USERS)),
    st.dictionaries(st.text(max_size=5), text_st, max_size=3),
)
def test_status_blocks_and_home_never_break_limits_or_inject(
    approvals: list[Any], user: str, links: dict[str, str]
) -> None:
    assert_safe(status.status_blocks(approvals, user, NOW, permalinks=links))
    assert_safe(status.home_view(approvals, approvals, user=user, now=NOW, permalinks=links))
    run = {
        "thread_id": approvals[0].thread_id if approvals else "t",
        "workflow": "w",
        "requester": user,
        "status": "paused",
        "error": approvals[0].title if approvals else None,
        "created_at": NOW,
        "updated_at": NOW,
    }
    summary = {"next": [a.action for a in approvals[:3]], "history": [a.title for a in approvals]}
    assert_safe(status.thread_status_blocks(run, summary, approvals))


ESCAPE_TOKEN_RE = re.compile(r"<!date\^00000000\^\{_\}\|([^>]*)>")


def _unescape(text: str) -> str:
    """What Slack shows for escaped text: tokens as their fallback, entities decoded."""
    text = ESCAPE_TOKEN_RE.sub(lambda mt: mt.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(NASTY + ["a", "b", "1", " ", "é"]) | st.text(max_size=3), max_size=40
    ).map("".join)
)
def test_escape_shows_the_text_as_written_without_formatting(raw: str) -> None:
    out = mrkdwn.escape(raw)
    assert live_tokens(out) == []
    # What Slack displays is the cleaned text itself (soft hyphens only ever added).
    assert _unescape(out).replace("\u00ad", "") == mrkdwn.clean(raw).replace("\u00ad", "")
    # No formatting character is live: each left outside a token sits between ASCII letters/digits.
    bare = ESCAPE_TOKEN_RE.sub("\x00", out)
    for i, c in enumerate(bare):
        if c in mrkdwn.FORMAT_CHARS:
            assert 0 < i < len(bare) - 1 and bare[i - 1].isascii() and bare[i - 1].isalnum()
            assert bare[i + 1].isascii() and bare[i + 1].isalnum()
    # No line starts with a quote marker.
    for line in out.split("\n"):
        assert not line.lstrip(" \t").startswith(("&gt;", "＞"))


@settings(max_examples=200, deadline=None)
@given(text_st, st.integers(2, 400))
def test_escape_fit_never_exceeds_and_keeps_tokens_whole(raw: str, limit: int) -> None:
    out = mrkdwn.escape_fit(raw, limit)
    assert mrkdwn.slack_len(out) <= limit
    assert live_tokens(out) == []


@pytest.mark.parametrize("error", ["RuntimeError: down", "E" * 9000, "*<!channel>* `x` " * 400])
def test_a_failure_message_with_its_buttons_fits_slack(error: str) -> None:
    failed = replies.failed_message("flaky" * 60, "flaky-0123456789ab", error)
    assert check_limits(failed) == []
    assert [e["action_id"] for e in failed["blocks"][-1]["elements"]] == [
        "signoff.run_retry",
        "signoff.run_cancel",
    ]
    assert "<!channel>" not in all_text(failed)
    done = replies.run_control_done(failed["text"], messages.run_retried_line("U_BOB"))
    assert check_limits(done) == []
    assert "run_retry" not in str(done)


def test_a_card_with_every_text_at_its_longest_is_one_slack_takes() -> None:
    """Slack refuses a message whose blocks hold more than about 12,000 characters of text
    together (`msg_blocks_too_long`), whatever each block's own limit: the longest texts are
    shortened until the card fits, its title and buttons kept."""
    votes = tuple(vote(f"U{i}", note="v" * 3000) for i in range(5))
    longest = make_approval(
        title="T" * 500,
        payload={f"field_{i:02d}": "x" * 4000 for i in range(40)},
        note="n" * 3000,
        seen={"reason": "r" * 4000, "results": [{"tool": "t", "content": "c" * 4000}] * 5},
        votes=votes,
        required=5,
        status="approved",
        decision=decision("approved", [v.user_id for v in votes], note="v" * 12_000),
        reason="r" * 3000,
    )
    pending = make_approval(title="T" * 500, payload=longest.payload, note="n" * 3000)
    for approval in (longest, pending):
        card = cards.card(approval, now=NOW)
        assert check_limits(card) == []
        assert _blocks.text_length(card["blocks"]) <= limits.MESSAGE_BLOCKS_TEXT_MAX
        assert card["blocks"][0]["text"]["text"].count("T") >= 140  # the title, as long as ever


def test_fit_text_shortens_the_longest_texts_and_the_later_of_equal_ones() -> None:
    blocks = [_blocks.section("x" * 3000) for _ in range(6)]
    fitted = _blocks.fit_text(blocks, 12_000)
    lengths = [len(b["text"]["text"]) for b in fitted]
    assert sum(lengths) <= 12_000 and lengths[:3] == [3000] * 3
    assert all(b["text"]["text"].endswith("…") for b in fitted[3:])
    assert blocks[5]["text"]["text"] == "x" * 3000  # the blocks given are left as they were


def test_status_says_when_everyone_who_could_decide_is_away() -> None:
    away = ({"user": "U_ALICE", "until": NOW + 86400, "why": "dnd"},)
    reply = status.status_blocks([make_approval(approvers=("U_BOB",), away=away)], "U_BOB", NOW)
    assert check_limits(reply) == []
    (line,) = [t for t in mrkdwn_texts(reply) if "🌴" in t]
    assert "everyone who could decide it is away: <@U_ALICE> (on do-not-disturb until" in line
    plain = status.status_blocks([make_approval(approvers=("U_BOB",))], "U_BOB", NOW)
    assert not [t for t in mrkdwn_texts(plain) if "🌴" in t]


def test_status_shows_the_facts_a_pending_approval_rests_on() -> None:
    checked = {"at": NOW - 60, "facts": {"balance": "120.00", "refunded_before": "no"}}
    reply = status.status_blocks(
        [make_approval(approvers=("U_BOB",), checked=checked)], "U_BOB", NOW
    )
    assert check_limits(reply) == []
    (line,) = [t for t in mrkdwn_texts(reply) if "Facts checked" in t]
    assert "balance 120.00, refunded_before no" in line
